"""The main job: run the notebooks in order, headless (papermill), with one profile, and write
`summary.json` (profile, versions, seconds per notebook, what each notebook reported, and the
miniature's gain of SFT → GRPO over SFT and online success with their 95 % intervals).

    python -m harness.pipeline [--profile cpu-mini|gpu-3b] [--out DIR] [--from NN]

Each notebook gets those of the parameters `profile`, `output_dir` (its own folder under
`DIR/artifacts`), `data_dir` and `run_dir` that it declares; a notebook reports results by writing
`output_dir/result.json`. While one runs, a line says where it is (cell, stage, step, time left).
`summary.json` is rewritten (atomically) after every notebook; when one fails it records which
notebook and cell (`status`, `failed`), and `--from NN` resumes from there.
"""

from __future__ import annotations

import argparse
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from gui_r1_lite.errors import RunFailed, UsageError, run_cli
from gui_r1_lite.notebook import versions
from gui_r1_lite.profiles import PROFILES, get_profile
from gui_r1_lite.progress import watch
from gui_r1_lite.runfolder import writable_folder
from gui_r1_lite.runio import read_json, write_json_atomic

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = REPO / "notebooks"


class NotebookFailed(RunFailed):
    """A notebook raised; the message names it and the failing cell (kept as `notebook`, `cell`
    (0-based), `error` and `executed`, the executed notebook's path)."""

    def __init__(self, message: str, notebook: str = "", cell: int | None = None, error: str = "",
                 executed: str = ""):
        super().__init__(message)
        self.notebook, self.cell, self.error, self.executed = notebook, cell, error, executed


def notebook_paths(notebooks_dir: Path = NOTEBOOKS) -> list[Path]:
    """The `NN_*.ipynb` notebooks of a folder, in order."""
    paths = sorted(p for p in notebooks_dir.glob("[0-9][0-9]_*.ipynb"))
    if not paths:
        raise FileNotFoundError(f"no notebooks NN_*.ipynb in {notebooks_dir}")
    return paths


#: Beside each executed notebook, the progress records its run reported (`progress.report`).
PROGRESS_SUFFIX = ".progress.jsonl"


def declared_parameters(src: Path, parameters: dict) -> dict:
    """The entries of `parameters` that `src`'s `parameters` cell declares (papermill warns of the
    others). A notebook that declares none, or that cannot be read here, gets them all."""
    import papermill as pm

    try:
        declared = pm.inspect_notebook(str(src))
    except Exception:  # papermill's own reading of the notebook then names what is wrong with it
        return dict(parameters)
    return {k: v for k, v in parameters.items() if k in declared} if declared else dict(parameters)


def kernel_transport() -> dict:
    """papermill arguments that encrypt the kernel's channels where jupyter_client can (8.10+); without
    them ipykernel 7.4 warns on every start that it runs over TCP in plain text. Older jupyter_client
    (Colab's 7.4) has no such setting and gets nothing."""
    from jupyter_client.manager import KernelManager
    from traitlets.config import Config

    if "transport_encryption" not in KernelManager.class_trait_names():
        return {}
    return {"config": Config({"KernelManager": {"transport_encryption": "auto"}})}


def run_notebook(src: Path, dest: Path, parameters: dict, kernel: str = "python3",
                 timeout: int | None = None, progress_every: float = 30.0) -> float:
    """Execute `src` into `dest` with papermill, injecting those of `parameters` it declares, each cell
    allowed `timeout` seconds (None: no limit); returns seconds. A status line is printed at each
    stage start and every `progress_every` seconds. On failure the executed notebook stays at `dest`
    and `NotebookFailed` names the notebook and the failing cell."""
    import papermill as pm
    from papermill.exceptions import PapermillExecutionError

    dest.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    try:
        with watch(dest.with_suffix(PROGRESS_SUFFIX), src.stem, dest, every=progress_every):
            pm.execute_notebook(str(src), str(dest), parameters=declared_parameters(src, parameters),
                                kernel_name=kernel, cwd=str(src.parent), progress_bar=False,
                                execution_timeout=timeout, **kernel_transport())
    except PapermillExecutionError as exc:
        raise NotebookFailed(f"{src.name} failed in cell {exc.cell_index} (execution count {exc.exec_count}): "
                             f"{exc.ename}: {exc.evalue}; executed notebook kept at {dest}",
                             src.stem, exc.cell_index, f"{exc.ename}: {exc.evalue}", str(dest)) from None
    return time.perf_counter() - t0


#: The file a notebook writes its results to, in its own folder under `run_dir/artifacts`.
RESULT_FILE = "result.json"

#: What each notebook's result.json contributes to the top of summary.json: key -> (notebook number, fields).
SUMMARY_FIELDS = {
    "curation": ("01", ("rows", "validation", "steps", "curated")),
    "training": ("04", ("experiment", "start", "end", "global_step", "base_model", "adapter_dir",
                        "trained_model")),
    "miniature": ("04", ("miniature",)),
    "evaluation": ("05", ("policies",)),
    "transfer": ("05", ("transfer",)),
}


def notebook_stem(notebook: str, notebooks_dir: Path = NOTEBOOKS) -> str:
    """The file stem of a notebook named by its number ("04") or by its stem."""
    stems = [p.stem for p in notebook_paths(notebooks_dir)]
    if notebook in stems:
        return notebook
    found = [s for s in stems if s.startswith(f"{notebook}_")]
    if len(found) != 1:
        raise ValueError(f"no single notebook {notebook!r} in {notebooks_dir}; notebooks: {stems}")
    return found[0]


def artifacts_dir(run_dir: str | Path, notebook: str, notebooks_dir: Path = NOTEBOOKS) -> Path:
    """The folder a pipeline run gives a notebook (its `output_dir`)."""
    return Path(run_dir) / "artifacts" / notebook_stem(notebook, notebooks_dir)


def result_path(run_dir: str | Path, notebook: str) -> Path:
    """Where a notebook of a pipeline run reports its results."""
    return artifacts_dir(run_dir, notebook) / RESULT_FILE


def read_result(run_dir: str | Path, notebook: str) -> dict | None:
    """What an earlier notebook of the same run reported, or None when it has not run there."""
    path = result_path(run_dir, notebook)
    return read_json(path) if path.exists() else None


def write_result(output_dir: str | Path, result: dict) -> Path:
    """Report a notebook's results: `output_dir/result.json`, written atomically."""
    return write_json_atomic(Path(output_dir) / RESULT_FILE, result)


def top_level_summary(results: dict) -> dict:
    """The fields summary.json lifts to its top from the notebooks' results (keyed by notebook stem)."""
    out = {}
    for key, (number, fields) in SUMMARY_FIELDS.items():
        res = next((v for stem, v in results.items() if stem.startswith(f"{number}_")), None) or {}
        picked = {f: res[f] for f in fields if f in res}
        if picked:
            out[key] = picked[fields[0]] if len(fields) == 1 else picked
    return out


def miniature_result(run_dir: str | Path) -> dict | None:
    """The `miniature.json` notebook 04 of the run in `run_dir` wrote, with its statistics computed
    afresh from its prediction files; None when it ran no miniature there."""
    from .miniature import RESULT_FILE
    from .miniature.report import study_statistics

    folder = Path(run_dir) / "artifacts"
    found = sorted(folder.glob(f"04_*/**/{RESULT_FILE}"), key=lambda p: len(p.parts)) if folder.is_dir() else []
    if not found:
        return None
    study = read_json(found[0])
    study["stats"] = study_statistics(study["predictions"], study.get("online"), online_runs=study.get("online_runs"))
    return study


def miniature_summary(study: dict | None) -> dict:
    """What summary.json reports of a miniature (`miniature_result`) besides its arms, as fractions:
    `gain`, SFT → GRPO over SFT (`{"vs", "arm", "click_accuracy"|"click_accuracy_parsed": {"mean",
    "ci95", "per_seed"}, "mcnemar_p": {seed: p}}`, with the closed-loop `"online_success"` when both
    arms played online), and with online stages, `online` (each arm's success)."""
    from .miniature.report import lean

    st = (study or {}).get("stats") or {}
    out: dict = {}
    if st.get("gain"):
        out["gain"] = {"vs": st["vs"], "arm": st["arm"], **{k: lean(v) for k, v in st["gain"].items()},
                       "mcnemar_p": {s: t["p_value"] for s, t in st["mcnemar"].items()}}
        if (st.get("online_gain") or {}).get("mean") is not None:
            out["gain"]["online_success"] = lean(st["online_gain"])
    if st.get("online"):
        out["online"] = {arm: {"success": lean(v["success"])} for arm, v in st["online"].items()}
    return out


def check_start(start: int | None, notebooks_dir: Path = NOTEBOOKS, flag: str = "--from") -> None:
    """Refuse a start that is not the number of a notebook in `notebooks_dir`."""
    if start is None:
        return
    stems = [p.stem for p in notebook_paths(notebooks_dir)]
    if not any(int(stem[:2]) == start for stem in stems):
        raise UsageError(f"{flag} {start}: no notebook {start:02d}_*.ipynb in {notebooks_dir}; "
                         f"notebooks: {', '.join(stems)}")


def _previous_summary(path: Path) -> dict:
    """The summary of an earlier run in the same folder; an unreadable one is set aside with a warning."""
    if not path.exists():
        return {}
    try:
        summary = read_json(path)
    except ValueError as exc:
        summary = None
        print(f"[pipeline] {exc}; starting a new summary.json (earlier results come from artifacts/)",
              file=sys.stderr)
    return summary if isinstance(summary, dict) else {}


def run_pipeline(profile: str = "cpu-mini", out: str | Path | None = None, start: int | None = None,
                 notebooks_dir: Path = NOTEBOOKS, data_dir: Path | None = None,
                 extra_parameters: dict | None = None) -> dict:
    """Run the notebooks in order and write `summary.json` (atomically) after each; returns it.

    `out` is the run folder (default `runs/<timestamp>`); `start` restarts at notebook number `start`,
    reusing the results earlier notebooks wrote in `out`; `data_dir` defaults to `data_samples/`;
    `extra_parameters` go to every notebook. A notebook that raises (`NotebookFailed`) leaves
    `status` "failed" and `failed` (notebook, cell, error, executed notebook) in `summary.json`."""
    prof = get_profile(profile)
    check_start(start, notebooks_dir, "start")
    # the notebooks' kernels inherit this environment: the math libraries dispatch as on any x86-64 CPU
    from .miniature.parallel import pin_dispatch

    pin_dispatch()
    if prof.experiment == "miniature" and (why := online_skipped()):
        print(f"[pipeline] the closed loop (online success per arm) will not run: {why}", flush=True)
    run_dir = Path(out) if out else REPO / "runs" / datetime.now().strftime("%Y%m%d-%H%M%S")
    run_dir = run_dir.resolve()
    data_dir = (data_dir or REPO / "data_samples").resolve()
    summary_path = run_dir / "summary.json"
    summary = _previous_summary(summary_path)
    summary.update({"profile": prof.to_dict(), "versions": versions(), "run_dir": str(run_dir), "status": "running"})
    summary.pop("failed", None)
    summary.setdefault("seconds", {})
    summary.setdefault("results", {})
    summary["started"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    for src in notebook_paths(notebooks_dir):
        if start is not None and int(src.name[:2]) < start:  # reuse what an earlier run wrote
            _collect(src, artifacts_dir(run_dir, src.stem, src.parent) / RESULT_FILE, run_dir, summary)
            continue
        try:
            _run_one(src, run_dir, profile, data_dir, extra_parameters, summary)
        except Exception as exc:
            summary.update(status="failed", failed=_failure(src, exc))
            write_json_atomic(summary_path, summary)
            raise
        write_json_atomic(summary_path, summary)  # after every notebook: a crash loses nothing
    summary["status"] = "ok"
    summary["total_seconds"] = round(sum(summary["seconds"].values()), 1)
    if summary.get("miniature"):
        from .miniature.reference import verdict

        summary["reference_check"] = verdict(summary)
        print(f"[pipeline] the miniature's figures: {summary['reference_check']}", flush=True)
    write_json_atomic(summary_path, summary)
    return summary


def _failure(src: Path, exc: BaseException) -> dict:
    """What summary.json records of a notebook that failed."""
    if isinstance(exc, NotebookFailed):
        return {"notebook": src.stem, "cell": exc.cell, "error": exc.error, "executed_notebook": exc.executed}
    return {"notebook": src.stem, "cell": None, "error": f"{type(exc).__name__}: {exc}", "executed_notebook": None}


def _collect(src: Path, result: Path, run_dir: Path, summary: dict) -> None:
    """Record in `summary` what notebook `src` reported in `result`, with the miniature's after notebook 04."""
    if not result.exists():
        return
    summary["results"][src.stem] = read_json(result)
    summary.update(top_level_summary(summary["results"]))
    if src.name.startswith("04_"):
        for key in ("gain", "online"):
            summary.pop(key, None)
        study = miniature_result(run_dir)
        summary.update(miniature_summary(study))
        if study is not None and "online" not in summary:
            why = online_skipped() or "no closed-loop episodes were asked (online_episodes=0)"
            summary["online"] = {"skipped": why}


#: What makes the closed loop playable on a machine without it.
ONLINE_FIX = "sudo bash scripts/install_capture_deps.sh"


def online_skipped() -> str | None:
    """Why the miniature's closed loop cannot run here, naming the fix, or None when it can."""
    from .miniature.runner import online_missing

    why = online_missing()
    return why if why is None or ONLINE_FIX in why else f"{why}; install it with `{ONLINE_FIX}`"


def _run_one(src: Path, run_dir: Path, profile: str, data_dir: Path, extra_parameters: dict | None,
             summary: dict) -> None:
    """Run one notebook into `run_dir` and record its seconds and results in `summary`."""
    out_dir = artifacts_dir(run_dir, src.stem, src.parent)
    params = {"profile": profile, "output_dir": str(out_dir), "data_dir": str(data_dir),
              "run_dir": str(run_dir), **(extra_parameters or {})}
    print(f"[pipeline] {src.name} ...", flush=True)
    seconds = run_notebook(src, run_dir / "notebooks" / src.name, params)
    summary["seconds"][src.stem] = round(seconds, 1)
    _collect(src, out_dir / RESULT_FILE, run_dir, summary)
    print(f"[pipeline] {src.name} done in {seconds:.1f} s", flush=True)


def main(argv: list[str] | None = None) -> int:
    """Run the pipeline: exit 2 on bad flags (`UsageError`), 1 when a notebook fails."""
    ap = argparse.ArgumentParser(prog="gui-r1-lite pipeline", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profile", default="cpu-mini", choices=sorted(PROFILES), help="default cpu-mini")
    ap.add_argument("--out", default=None, help="run folder (default runs/<timestamp>)")
    ap.add_argument("--from", dest="start", type=int, default=None,
                    help="restart at notebook NN, reusing earlier outputs in --out")
    ap.add_argument("--data-dir", default=None, help="sample data folder (default data_samples/)")
    args = ap.parse_args(argv)
    if args.start is not None and args.out is None:
        ap.error("--from needs --out (the run folder whose earlier outputs are reused)")
    check_start(args.start, NOTEBOOKS)
    first = int(notebook_paths(NOTEBOOKS)[0].name[:2])
    if args.start is not None and args.start > first and not (Path(args.out) / "artifacts").is_dir():
        raise UsageError(f"--from {args.start}: {args.out} holds no earlier run (no artifacts/ folder); "
                         "pass the run folder of the run to resume, or leave out --from")
    if args.data_dir is not None and not Path(args.data_dir).is_dir():
        raise UsageError(f"--data-dir {args.data_dir}: no such folder")
    if args.out is not None:
        writable_folder(args.out, "--out")
    summary = run_pipeline(args.profile, args.out, args.start,
                           data_dir=Path(args.data_dir) if args.data_dir else None)
    print(f"[pipeline] summary: {Path(summary['run_dir']) / 'summary.json'} ({summary['total_seconds']} s)")
    return 0


if __name__ == "__main__":
    sys.exit(run_cli(main, prog="gui-r1-lite pipeline"))
