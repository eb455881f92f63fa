"""Seeds side by side: each job (one seed's stages) in a process of its own on a fixed number of torch
threads, `workers` at a time; a job that fails is named and the others run to their end, so that what
they finished stays cached for a rerun."""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import platform
import subprocess
import sys
import tempfile
import time
import traceback
import warnings
from collections.abc import Callable, Hashable, Iterator, Mapping
from pathlib import Path
from typing import Any

from gui_r1_lite.errors import RunFailed

#: Seconds between two calls of a parallel run's `watch` (the main process's live view).
POLL_SECONDS = 5.0


def default_workers(threads: int, jobs: int) -> int:
    """Processes to run side by side: one per `threads` cores (`os.cpu_count()`), at most `jobs`."""
    return max(1, min(jobs, (os.cpu_count() or 1) // max(1, threads)))


#: The instruction-set dispatch of torch's math libraries on x86-64, pinned to AVX2 for every stage.
#: One thread fixes the order of a sum on one CPU, but ATen's vectorised kernels, MKL and oneDNN pick
#: their code path by the instruction set, so an AVX-512 CPU and an AVX2 CPU add in other orders, and
#: GRPO's sampling turns the last bit into other answers. Every x86-64 CPU of the last decade has AVX2;
#: MKL's STRICT mode also drops its alignment-dependent paths (`tests/test_dispatch_pin.py`).
DISPATCH_PIN: dict[str, str] = {"ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "AVX2,STRICT", "ONEDNN_MAX_CPU_ISA": "AVX2"}


def pin_dispatch(env: dict | None = None) -> dict[str, str]:
    """Set `DISPATCH_PIN` in `env` (default: this process's environment) on x86-64 (elsewhere nothing);
    returns what was set. The libraries read it at their first computation, so call it before any
    tensor is computed: job processes get it in their environment, the pipeline's kernels too."""
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return {}
    target = os.environ if env is None else env
    target.update(DISPATCH_PIN)
    return dict(DISPATCH_PIN)


def dispatch_in_force() -> dict[str, str | None]:
    """What decides this process's float paths besides the thread count: ATen's CPU capability and the
    pinned variables (recorded by each stage, so that a stage that ran unpinned shows)."""
    import torch

    return {"aten_capability": torch.backends.cpu.get_cpu_capability(),
            **{var: os.environ.get(var) for var in DISPATCH_PIN}}


@contextlib.contextmanager
def pinned_threads(threads: int) -> Iterator[dict[str, Any]]:
    """Run the block on `threads` torch threads with deterministic algorithms, then restore both;
    yields what a stage records.

    A float sum split over threads can be added in another order when the thread count changes, and
    sampling turns the last bit into another answer; so every stage runs on the same count whatever
    the machine's load. Deterministic mode's filling of new memory with NaN is left off: it made a
    tiny-model SFT step 1.8x slower (2.85 s against 1.44 s) and nothing here reads uninitialised
    memory (the figures are the same with and without it)."""
    import torch
    from torch.utils import deterministic

    before = (torch.get_num_threads(), torch.are_deterministic_algorithms_enabled(),
              torch.is_deterministic_algorithms_warn_only_enabled(), deterministic.fill_uninitialized_memory)
    pinned = pin_dispatch()  # takes effect only where nothing was computed yet (`dispatch_in_force` tells)
    capability = torch.backends.cpu.get_cpu_capability()
    if pinned and capability != pinned["ATEN_CPU_CAPABILITY"].upper():
        warnings.warn(f"this process computed before the dispatch pin (ATen dispatches {capability}, not "
                      f"{pinned['ATEN_CPU_CAPABILITY'].upper()}): its figures may differ in the last digits from a "
                      "pinned run's; run the seeds in job processes (workers > 1) or through the pipeline",
                      stacklevel=3)
    torch.set_num_threads(threads)
    torch.use_deterministic_algorithms(True)
    deterministic.fill_uninitialized_memory = False
    try:
        yield {"threads": torch.get_num_threads(), "deterministic": torch.are_deterministic_algorithms_enabled(),
               "dispatch": dispatch_in_force()}
    finally:
        torch.set_num_threads(before[0])
        torch.use_deterministic_algorithms(before[1], warn_only=before[2])
        deterministic.fill_uninitialized_memory = before[3]


#: What a job process runs: this process's module search path (a notebook may have added to it), then
#: `job_main`. A new interpreter, not a fork: it shares no threads, locks or RNG state with this one,
#: and it does not run the caller's `__main__` again, as `multiprocessing`'s spawn would.
_BOOT = ("import json, sys; sys.path[:0] = json.loads(sys.argv[1]); "
         "from harness.miniature.parallel import job_main; sys.exit(job_main(sys.argv[2]))")


def job_main(job_file: str) -> int:
    """A job process: run the job in `job_file` and write its outcome to `<job_file>.out`."""
    with open(job_file, "rb") as fh:
        job = pickle.load(fh)
    try:
        outcome, code = ("done", job["fn"](*job["args"])), 0
    except BaseException as exc:  # noqa: BLE001 - reported to the main process, which names the job
        traceback.print_exc()
        named = isinstance(exc, RunFailed)  # a job's own RunFailed names where it stopped
        outcome, code = ("failed", str(exc) if named else f"{type(exc).__name__}: {exc}", named), 1
    tmp = f"{job_file}.out.tmp"
    with open(tmp, "wb") as fh:
        pickle.dump(outcome, fh)
    os.replace(tmp, f"{job_file}.out")
    return code


def _start(fn: Callable, args: tuple, threads: int, job_file: Path) -> subprocess.Popen:
    """A new interpreter running `fn(*args)` on `threads` threads."""
    with open(job_file, "wb") as fh:
        pickle.dump({"fn": fn, "args": args}, fh)
    # read by OpenMP and the BLAS libraries when they load; a job's stages pin torch's count again
    env = {**os.environ, **dict.fromkeys(("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"), str(threads))}
    pin_dispatch(env)
    return subprocess.Popen([sys.executable, "-c", _BOOT, json.dumps(sys.path), str(job_file)], env=env)


def _outcome(job_file: Path) -> tuple:
    """("done", result), ("failed", message, named) or ("crashed",)."""
    try:
        with open(f"{job_file}.out", "rb") as fh:
            return pickle.load(fh)
    except (OSError, EOFError, pickle.UnpicklingError):
        return ("crashed",)


def run_parallel(fn: Callable, jobs: Mapping[Hashable, tuple], *, workers: int, threads: int,
                 name: Callable[[Hashable], str], watch: Callable[[], None] | None = None,
                 poll: float = POLL_SECONDS) -> dict[Hashable, Any]:
    """`{key: fn(*args)}` for every job `{key: args}`, each in a new interpreter on `threads` threads,
    `workers` at a time, in the order given. `fn` is a module-level function (the job process imports
    it by name). `name(key)` names a failed job in the error (e.g. "seed 1 · sft_train"; a job that
    raises `RunFailed` names itself); `watch` is called about every `poll` seconds while jobs run.
    RunFailed names every job that failed, once the others have ended."""
    queue, running, results, failures = list(enumerate(jobs.items())), {}, {}, {}
    last_watch = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="miniature-jobs-") as tmp:
        try:
            while queue or running:
                while queue and len(running) < workers:
                    i, (key, args) = queue.pop(0)
                    job_file = Path(tmp) / f"job{i}.pkl"
                    running[key] = (_start(fn, args, threads, job_file), job_file)
                time.sleep(min(1.0, poll))
                if watch is not None and time.monotonic() - last_watch >= poll:
                    watch()
                    last_watch = time.monotonic()
                for key in [k for k, (proc, _) in running.items() if proc.poll() is not None]:
                    _collect(key, *running.pop(key), results, failures, name)
        finally:
            for proc, _ in running.values():  # interrupted: the jobs still running end with this process
                proc.terminate()
                proc.wait()
    if failures:
        raise RunFailed("; ".join(failures[k] for k in jobs if k in failures)
                        + " (finished stages are kept: the same command again continues from them)")
    return results


def _collect(key: Hashable, proc: subprocess.Popen, job_file: Path, results: dict, failures: dict,
             name: Callable[[Hashable], str]) -> None:
    """File an ended job's result, or why it has none, under its key."""
    outcome = _outcome(job_file)
    if outcome[0] == "done":
        results[key] = outcome[1]
    elif outcome[0] == "failed":
        failures[key] = outcome[1] if outcome[2] else f"{name(key)}: {outcome[1]}"
    else:  # killed, or out of memory: no word back
        failures[key] = f"{name(key)}: its process ended (exit code {proc.returncode}) without a result"
