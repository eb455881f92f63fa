"""Shared fixtures: the tiny Qwen2.5-VL is built once per session; marker-based skips; and, under
`GUI_R1_LITE_NO_SKIPS=1` (set by .ci/run), a session that fails on any skip but the CUDA-only ones."""

from __future__ import annotations

import importlib.util
import os
import shutil

# Before anything imports huggingface_hub: no network here, and tokenizers must not fork threads.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import pytest  # noqa: E402

from harness.miniature.parallel import pin_dispatch  # noqa: E402

# The miniature's dispatch pin in this process too, before anything computes (the libraries read it at
# their first computation): a seed run here (workers=1) takes the same float paths as one in a job process.
pin_dispatch()

TINY_SEED = 0


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory):
    """The stand-in saved on disk: Qwen2.5-VL-3B-Instruct's shipped configuration (its near-greedy
    generation settings and 3,136-12,845,056 pixel bounds included) with the default tiny sizes,
    seed 0. Treat it as read-only; pass pixel bounds when loading it (`tiny_policy` does)."""
    from gui_r1_lite.tiny import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny_qwen2_5_vl"), seed=TINY_SEED)


@pytest.fixture
def tiny_policy(tiny_model_dir):
    """A fresh policy on the stand-in per test: default LoRA, CPU, the CPU-sized pixel bounds."""
    from gui_r1_lite.modeling import load_policy
    from gui_r1_lite.tiny import TINY_MAX_PIXELS, TINY_MIN_PIXELS

    return load_policy(tiny_model_dir, min_pixels=TINY_MIN_PIXELS, max_pixels=TINY_MAX_PIXELS, device="cpu")


@pytest.fixture(scope="session")
def toy_data(tmp_path_factory) -> str:
    """A 16-row GUI-R1 parquet of blue buttons on white 160x210 screenshots (low-level clicks):
    small enough for a training step in well under a second on the tiny model."""
    import io
    import random

    import pyarrow as pa
    import pyarrow.parquet as pq
    from PIL import Image, ImageDraw

    rng = random.Random(0)
    rows = []
    for i in range(16):
        im = Image.new("RGB", (160, 210), "white")
        x, y = rng.randint(10, 100), rng.randint(10, 150)
        ImageDraw.Draw(im).rectangle([x, y, x + 40, y + 20], fill=(0, 0, 200))
        buf = io.BytesIO()
        im.save(buf, format="PNG")
        rows.append({"image": {"bytes": buf.getvalue(), "path": f"{i}.png"}, "instruction": f"Click button {i}",
                     "history": "None", "task_type": "low", "gt_action": "click",
                     "gt_bbox": [x / 160, y / 210, (x + 40) / 160, (y + 20) / 210],
                     "gt_input_text": "no input text", "id": f"t{i}", "platform": "web"})
    path = tmp_path_factory.mktemp("toy") / "toy.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path)
    return str(path)


@pytest.fixture
def varying_reward(monkeypatch) -> str:
    """A reward that differs within a group even for a random policy (GUI-R1's is 0 everywhere
    until the format is learnt), so GRPO has a gradient to follow. Returns its registered name."""
    from gui_r1_lite import rewards as R

    def length(c, a, b, t, compat, **_):
        return len(c) / 100.0
    monkeypatch.setitem(R._SCORERS, "length_test", length)
    monkeypatch.setitem(R.REWARDS, "length_test", R.make_reward("length_test"))
    return "length_test"


# --- benchmarks/bench_gpu_recipe.py: shared by tests/test_bench_gpu_recipe.py and its _wheels.py ----------------


@pytest.fixture(scope="session")
def bench():
    from tests._gpu_recipe_helpers import BENCH, _load  # here, not above: tests/test_ci.py runs this file alone

    return _load(BENCH)


#: Runs the benchmark as its own __main__, then imports what the gpu tests import, and writes every module that
#: was loaded: the GPU path's imports, traced rather than listed by hand.
TRACED_RUN = """
import json, runpy, sys
sys.argv = sys.argv[1:]
sys.path.insert(0, ".")
try:
    runpy.run_path(sys.argv[0], run_name="__main__")
except SystemExit as stop:
    code = stop.code
import tests.test_gpu, gui_r1_lite.evaluate, gui_r1_lite.modeling, gui_r1_lite.tiny, pytest  # noqa
print("MODULES " + json.dumps(sorted(sys.modules)))
sys.exit(code)
"""


@pytest.fixture(scope="session")  # one run for both modules that use it
def tiny_results(tmp_path_factory, bench):
    """Every GPU recipe run by the benchmark with --tiny on the CPU: (out folder, {recipe path: its JSON}, the
    top-level modules that process loaded)."""
    import json
    import subprocess
    import sys

    from tests._gpu_recipe_helpers import BENCH, ROOT, STEPS

    out = tmp_path_factory.mktemp("bench_gpu")
    proc = subprocess.run([sys.executable, "-c", TRACED_RUN, str(BENCH), "--tiny", "--out", str(out), "--steps",
                           str(STEPS)], capture_output=True, text=True, cwd=ROOT, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    from gui_r1_lite.runio import read_json

    loaded = json.loads(next(line for line in proc.stdout.splitlines() if line.startswith("MODULES "))[8:])
    top = {name.split(".")[0] for name in loaded}
    return out, {recipe: read_json(out / f"{recipe.stem}.json") for recipe in bench.gpu_recipes()}, top


def _has_cuda() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


#: Fixtures that run a whole miniature (minutes): a test using one is `slow`, left out of `make test`.
SLOW_FIXTURES = frozenset({"tiny_run"})


@pytest.hookimpl(tryfirst=True)  # before `-m "not slow"` deselects
def pytest_collection_modifyitems(config, items):
    for item in items:
        if SLOW_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)
    checks = {
        "gpu": (_has_cuda, "needs a CUDA device"),
        "browser": (lambda: shutil.which("chromium") is not None and importlib.util.find_spec("playwright") is not None,
                    "needs /usr/bin/chromium and Python playwright"),
        "desktop": (lambda: shutil.which("Xvfb") is not None, "needs Xvfb and AT-SPI"),
    }
    results: dict[str, bool] = {}
    for item in items:
        for marker, (check, reason) in checks.items():
            if marker in item.keywords:
                if marker not in results:
                    results[marker] = bool(check())
                if not results[marker]:
                    item.add_marker(pytest.mark.skip(reason=reason))



# --- CI: no coverage lost silently ---------------------------------------------------------------

#: Set to 1 (as .ci/run does) to fail the session when a test skips for a reason other than CUDA.
NO_SKIPS_ENV = "GUI_R1_LITE_NO_SKIPS"
_SKIPS: list[tuple[str, str, bool]] = []  # (test id, reason, allowed) in this session


def _allowed_skip(report: pytest.TestReport, reason: str) -> bool:
    """Only CUDA may be missing: tests marked `gpu`, and skips whose reason names CUDA (those that
    check what happens *without* CUDA skip on a GPU machine). A missing browser, package or file is
    coverage lost, so it is not allowed."""
    return "gpu" in report.keywords or "CUDA" in reason


def pytest_runtest_logreport(report):
    if report.skipped and not hasattr(report, "wasxfail"):
        longrepr = report.longrepr
        reason = str(longrepr[2] if isinstance(longrepr, tuple) else longrepr).removeprefix("Skipped: ")
        _SKIPS.append((report.nodeid, reason, _allowed_skip(report, reason)))


def _no_skips() -> bool:
    return os.environ.get(NO_SKIPS_ENV) == "1"


def pytest_sessionfinish(session, exitstatus):
    if _no_skips() and exitstatus == pytest.ExitCode.OK and any(not ok for _, _, ok in _SKIPS):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """The skip list, unexpected ones first (always printed, so a CI log shows what did not run)."""
    if not _SKIPS:
        return
    tr = terminalreporter
    unexpected = [(n, r) for n, r, ok in _SKIPS if not ok]
    tr.section("skips")
    tr.write_line(f"{len(_SKIPS) - len(unexpected)} CUDA-only skip(s) allowed, {len(unexpected)} other skip(s)")
    for nodeid, reason, ok in sorted(_SKIPS, key=lambda s: s[2]):
        tr.write_line(f"{'allowed' if ok else 'UNEXPECTED'} skip: {nodeid}: {reason}")
    if unexpected and _no_skips():
        tr.write_line(f"{NO_SKIPS_ENV}=1: failing the session on {len(unexpected)} unexpected skip(s); "
                      "install what they need (bash scripts/install_capture_deps.sh)", red=True)
