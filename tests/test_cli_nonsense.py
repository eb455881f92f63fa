"""Nonsense on every command line: each entry point of `grounding`, `harness`, `study` and `capture`
(found by walking their files for a `__main__` block, plus every `gui-r1-lite` subcommand), and each
script of `benchmarks/` and `scripts/` with a `__main__` block (run as `python benchmarks/x.py`),
answers an unknown flag, a count of zero or below, a number that is not one, a missing file or folder
and a malformed value with a usage error: exit code 2, a few lines on stderr naming the flag or value,
no traceback, nothing computed.

A new command is covered at once: its unknown-flag case is generated from the discovery, and
`test_every_entry_point_has_its_cases` fails until its value cases are written below."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gui_r1_lite.runfolder import LOCK_FILE
from harness.cli import COMMANDS

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("grounding", "harness", "study", "capture")
#: Folders of scripts run as files, `python benchmarks/bench_data.py`: an entry point is its path.
SCRIPT_FOLDERS = ("benchmarks", "scripts")
#: Files with a `__main__` block that are no command line of their own, and why.
NOT_COMMANDS = {
    # capture.desktop runs it under the system's /usr/bin/python3 (pyatspi is not importable from the
    # virtualenv) with the one application name it chooses, and reads the JSON it prints: no person runs it
    "capture._atspi_dump": "an internal helper of capture.desktop",
}
MAIN = 'if __name__ == "__main__"'
#: argparse's usage (wrapped) and its error line, or our error line and its --debug hint: never more.
MAX_STDERR_LINES = 20


def entry_points() -> list[str]:
    """`python -m` targets: modules of PACKAGES with a `__main__` block (less NOT_COMMANDS), and
    `harness.cli <command>`; then the scripts of SCRIPT_FOLDERS with one, by their path."""
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if MAIN in path.read_text(encoding="utf-8"):
                parts = path.relative_to(ROOT).with_suffix("").parts
                module = ".".join(parts[:-1] if parts[-1] == "__main__" else parts)
                if module not in NOT_COMMANDS:
                    found.append(module)
    scripts = [path.relative_to(ROOT).as_posix() for folder in SCRIPT_FOLDERS
               for path in sorted((ROOT / folder).glob("*.py")) if MAIN in path.read_text(encoding="utf-8")]
    return found + [f"harness.cli {command}" for command in COMMANDS] + scripts


#: What each command needs besides the flag under test (so the error is about that flag, not a missing
#: required one). {tmp} is the test's own folder. A command without required arguments needs no entry.
BASE = {
    "grounding.accept": ["--model", "grounding/base", "--out", "{tmp}/acceptance.json"],
    "grounding.curves": ["--out", "{tmp}/curves.png", "grounding/attempts/e1"],
    "grounding.pretrain": ["--out", "{tmp}/base"],
    "grounding.tasks": ["--out", "{tmp}/tasks", "--pages", "8:1:3:colour"],
    "harness.miniature": ["--out", "{tmp}/mini"],
    "harness.miniature.reference": ["{tmp}"],
    "harness.online": ["--policy", "oracle", "--out", "{tmp}/online"],
    "harness.pipeline": ["--out", "{tmp}/run"],
    "study": ["--study", "{tmp}/study"],
    "study.recipe": ["{tmp}/probe"],
    "harness.cli pipeline": ["--out", "{tmp}/run"],
    "harness.cli train": [],
    "harness.cli evaluate": ["--data", "data_samples/test", "--baseline", "random", "--out", "{tmp}/eval"],
    "harness.cli online": ["--policy", "oracle", "--out", "{tmp}/online"],
    "harness.cli miniature": ["--out", "{tmp}/mini"],
    "capture": ["preview", "data_samples/test/realgui_test.parquet", "--out", "{tmp}/previews"],
    "benchmarks/bench_gpu_recipe.py": ["--tiny", "--out", "{tmp}/bench"],
    "benchmarks/gpu_report.py": ["{tmp}"],
    "scripts/merge_adapter.py": ["--base", "Qwen/Qwen2.5-VL-3B-Instruct", "--adapter", "{tmp}/adapter",
                                 "--out", "{tmp}/merged"],
    "scripts/trim_wheels.py": ["{tmp}"],
}

#: Per command: (case, arguments replacing or added to BASE's, what the error must name).
CASES: dict[str, list[tuple[str, list[str], str]]] = {
    "grounding.accept": [
        ("rows-negative", ["--rows", "-1"], "--rows"),
        ("rows-zero", ["--rows", "0"], "--rows"),
        ("rows-not-a-number", ["--rows", "many"], "--rows"),
        ("model-missing", ["--model", "{tmp}/no-model"], "no-model"),
        ("model-not-a-base", ["--model", "{tmp}"], "pretrain_report.json"),
        ("miniwob-missing", ["--miniwob", "{tmp}/none.parquet"], "none.parquet"),
    ],
    "grounding.curves": [
        ("run-missing", ["{tmp}/no-run", "--out", "{tmp}/c.png"], "no-run"),
        ("run-without-metrics", ["{tmp}", "--out", "{tmp}/c.png"], "metrics.jsonl"),
    ],
    "grounding.pretrain": [
        ("stage-steps-negative", ["--stage", "-1:4:1:3:colour"], "--stage"),
        ("stage-steps-zero", ["--stage", "0:4:1:3:colour"], "--stage"),
        ("stage-malformed", ["--stage", "many"], "--stage"),
        ("stage-unknown-kind", ["--stage", "10:4:1:3:sparkles"], "sparkles"),
        ("batch-zero", ["--batch", "0"], "--batch"),
        ("batch-not-a-number", ["--batch", "eight"], "--batch"),
        ("eval-rows-negative", ["--eval-rows", "-3"], "--eval-rows"),
        ("width-not-a-multiple", ["--width", "100"], "--width"),
        ("init-missing", ["--init", "{tmp}/no-model"], "no-model"),
        ("high-above-one", ["--high", "2"], "--high"),
    ],
    "grounding.tasks": [
        ("train-per-seed-zero", ["--train-per-seed", "0"], "--train-per-seed"),
        ("heldout-seeds-negative", ["--heldout-seeds", "-1"], "--heldout-seeds"),
        ("pages-malformed", ["--pages", "many"], "--pages"),
        ("pages-min-above-max", ["--pages", "8:3:1:colour"], "--pages"),
        ("width-not-a-number", ["--width", "wide"], "--width"),
    ],
    "harness.departures": [],
    "harness.miniature": [
        ("seeds-empty", ["--seeds", ""], "--seeds"),
        ("seeds-negative", ["--seeds", "-1"], "--seeds"),
        ("seeds-not-numbers", ["--seeds", "0,one"], "--seeds"),
        ("workers-zero", ["--workers", "0"], "--workers"),
        ("workers-not-a-number", ["--workers", "two"], "--workers"),
        ("train-data-missing", ["--train-data", "{tmp}/none.parquet"], "none.parquet"),
        ("heldout-data-missing", ["--heldout-data", "{tmp}/none.parquet"], "none.parquet"),
        ("setting-negative", ["--set", "warm_steps=-1"], "warm_steps"),
    ],
    "harness.miniature.reference": [
        ("run-missing", ["{tmp}/no-run"], "no-run"),
    ],
    "harness.online": [
        ("episodes-zero", ["--episodes", "0"], "--episodes"),
        ("episodes-negative", ["--episodes", "-1"], "--episodes"),
        ("episodes-not-a-number", ["--episodes", "ten"], "--episodes"),
        ("max-steps-zero", ["--max-steps", "0"], "--max-steps"),
        ("min-pixels-negative", ["--min-pixels", "-5"], "--min-pixels"),
        ("policy-missing", ["--policy", "{tmp}/no-model"], "no-model"),
    ],
    "harness.pipeline": [
        ("from-not-a-number", ["--from", "two"], "--from"),
        ("from-negative", ["--from", "-1"], "--from"),
        ("data-dir-missing", ["--data-dir", "{tmp}/no-data"], "no-data"),
    ],
    "study": [
        ("seeds-empty", ["--seeds", ""], "--seeds"),
        ("workers-negative", ["--workers", "-2"], "--workers"),
        ("train-data-missing", ["--train-data", "{tmp}/none.parquet"], "none.parquet"),
    ],
    "study.recipe": [
        ("seeds-empty", ["--seeds", ""], "--seeds"),
        ("workers-zero", ["--workers", "0"], "--workers"),
    ],
    "harness.cli": [
        ("unknown-command", ["nonsense"], "nonsense"),
    ],
    "harness.cli pipeline": [],
    "harness.cli train": [],
    "harness.cli evaluate": [
        ("data-missing", ["--data", "{tmp}/no-data"], "no-data"),
        ("limit-negative", ["--limit", "-1"], "--limit"),
        ("batch-size-not-a-number", ["--batch-size", "four"], "--batch-size"),
    ],
    "harness.cli online": [],
    "harness.cli miniature": [],
    "capture": [
        ("source-unknown", ["sparkles"], "sparkles"),
        ("limit-zero", ["--limit", "0"], "--limit"),
        ("limit-negative", ["--limit", "-1"], "--limit"),
        ("limit-not-a-number", ["--limit", "many"], "--limit"),
        ("preview-file-missing", ["preview", "{tmp}/none.parquet", "--out", "{tmp}/previews"], "none.parquet"),
        ("preview-without-files", ["preview", "--out", "{tmp}/previews"], "preview"),
        ("check-path-missing", ["check", "{tmp}/no-data"], "no-data"),
        ("check-folder-without-parquet", ["check", "{tmp}"], "parquet"),
        ("capture-given-paths", ["web", "stray", "--out", "{tmp}/out"], "stray"),
        ("seeds-not-numbers", ["miniwob", "--out", "{tmp}/out", "--seeds", "many"], "--seeds"),
        ("seeds-empty", ["miniwob", "--out", "{tmp}/out", "--seeds", ""], "--seeds"),
        ("test-seeds-negative", ["miniwob", "--out", "{tmp}/out", "--test-seeds", "-1"], "--test-seeds"),
        ("seeds-overlap", ["miniwob", "--out", "{tmp}/out", "--seeds", "0-5", "--test-seeds", "3"], "--test-seeds"),
        ("tasks-unknown", ["miniwob", "--out", "{tmp}/out", "--tasks", "sparkles"], "sparkles"),
    ],
    "benchmarks/bench_data.py": [
        ("rounds-zero", ["--rounds", "0"], "--rounds"),
        ("rounds-negative", ["--rounds", "-1"], "--rounds"),
        ("rounds-not-a-number", ["--rounds", "three"], "--rounds"),
        ("data-missing", ["--data", "{tmp}/no-data"], "no-data"),
        ("data-without-parquet", ["--data", "{tmp}"], "parquet"),
    ],
    "benchmarks/bench_eval.py": [
        ("records-zero", ["--records", "0"], "--records"),
        ("rounds-zero", ["--rounds", "0"], "--rounds"),
        ("rows-negative", ["--rows", "-1"], "--rows"),
        ("max-new-tokens-zero", ["--max-new-tokens", "0"], "--max-new-tokens"),
        ("batch-sizes-not-numbers", ["--batch-sizes", "0,x"], "--batch-sizes"),
        ("batch-sizes-zero", ["--batch-sizes", "4,0"], "--batch-sizes"),
        ("batch-sizes-empty", ["--batch-sizes", ""], "--batch-sizes"),
    ],
    "benchmarks/bench_gpu_recipe.py": [
        ("steps-zero", ["--steps", "0"], "--steps"),
        ("steps-not-a-number", ["--steps", "two"], "--steps"),
        ("recipe-missing", ["--recipe", "{tmp}/none.yaml"], "none.yaml"),
        ("t4-gib-zero", ["--t4-gib", "0"], "--t4-gib"),
        ("t4-on-the-cpu", ["--t4", "--device", "cpu"], "--t4"),
        ("summarize-missing-folder", ["--summarize", "--out", "{tmp}/no-results"], "no-results"),
    ],
    "benchmarks/bench_online.py": [
        ("episodes-zero", ["--episodes", "0"], "--episodes"),
        ("episodes-negative", ["--episodes", "-1"], "--episodes"),
        ("episodes-not-a-number", ["--episodes", "ten"], "--episodes"),
        ("max-new-tokens-zero", ["--max-new-tokens", "0"], "--max-new-tokens"),
        ("tasks-unknown", ["--tasks", "sparkles"], "sparkles"),
        ("tasks-empty", ["--tasks", ""], "--tasks"),
    ],
    "benchmarks/bench_rewards.py": [
        ("repeat-zero", ["--repeat", "0"], "--repeat"),
        ("repeat-negative", ["--repeat", "-1"], "--repeat"),
        ("rounds-zero", ["--rounds", "0"], "--rounds"),
        ("rounds-not-a-number", ["--rounds", "five"], "--rounds"),
    ],
    "benchmarks/bench_train_step.py": [
        ("steps-zero", ["--steps", "0"], "--steps"),
        ("steps-not-a-number", ["--steps", "twelve"], "--steps"),
        ("warmup-negative", ["--warmup", "-1"], "--warmup"),
        ("threads-zero", ["--threads", "0"], "--threads"),
        ("threads-negative", ["--threads", "-2"], "--threads"),
        ("data-missing", ["--data", "{tmp}/none.parquet"], "none.parquet"),
    ],
    "benchmarks/gpu_estimate.py": [
        ("stray-argument", ["tables"], "tables"),
    ],
    "benchmarks/gpu_report.py": [
        ("no-argument", [], "OUT_DIR"),
        ("folder-missing", ["{tmp}/no-results"], "no-results"),
        ("two-arguments", ["{tmp}", "stray"], "stray"),
    ],
    "scripts/executed_notebooks.py": [
        ("run-missing", ["--run", "{tmp}/no-run"], "no-run"),
        ("run-not-a-run-folder", ["--run", "{tmp}"], "summary.json"),
    ],
    "scripts/merge_adapter.py": [
        ("base-missing", ["--base", "{tmp}/no-base"], "no-base"),
        ("base-not-a-model", ["--base", "{tmp}"], "--base"),
        ("adapter-missing", ["--adapter", "{tmp}/no-adapter"], "no-adapter"),
        ("adapter-not-an-adapter", ["--adapter", "{tmp}"], "adapter_config.json"),
        ("dtype-unknown", ["--dtype", "float8"], "float8"),
    ],
    "scripts/trim_wheels.py": [
        ("no-argument", [], "WHEELS_DIR"),
        ("folder-missing", ["{tmp}/no-wheels"], "no-wheels"),
        ("folder-without-wheels", ["{tmp}"], ".whl"),
        ("manifest-folder-missing", ["data_samples", "{tmp}/no-folder/manifest.json"], "no-folder"),
    ],
}

#: Commands whose start alone takes tens of seconds (TRL's import): their cases run in the slow tier.
SLOW = {"harness.cli train"}


def _argv(entry: str, extra: list[str]) -> list[str]:
    """The case's command line: nothing at all when `extra` is empty; `extra` itself when it opens on a
    positional argument; else BASE's with each `--flag value` pair of `extra` replacing BASE's value of
    that flag or added to it (a flag followed by another flag, or last, is a switch: added alone)."""
    if not extra:
        return []
    if not extra[0].startswith("-"):
        return extra
    base, added, i = list(BASE.get(entry, [])), [], 0
    while i < len(extra):
        flag = extra[i]
        if i + 1 < len(extra) and not extra[i + 1].startswith("--"):
            value, i = extra[i + 1], i + 2
            if flag in base:
                base[base.index(flag) + 1] = value
            else:
                added += [flag, value]
        else:
            added, i = added + ([] if flag in base else [flag]), i + 1
    return base + added


def _run(entry: str, argv: list[str], tmp_path: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "GUI_R1_LITE_DEBUG"}
    env.update(OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    args = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    command = [entry] if entry.endswith(".py") else ["-m", *entry.split()]  # a script runs as a file
    return subprocess.run([sys.executable, *command, *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=int(os.environ.get("NONSENSE_TIMEOUT", "120")))


def _params():
    marks = {e: [pytest.mark.slow] if e in SLOW else [] for e in entry_points()}
    for entry in entry_points():
        yield pytest.param(entry, [*BASE.get(entry, []), "--no-such-flag"], "--no-such-flag",
                           id=f"{entry}:unknown-flag", marks=marks[entry])
        for case, extra, named in CASES.get(entry, []):
            yield pytest.param(entry, _argv(entry, extra), named, id=f"{entry}:{case}", marks=marks[entry])


def test_every_entry_point_has_its_cases():
    """A command found but not listed (or listed but gone) fails here: write its value cases above."""
    assert set(entry_points()) == set(CASES), "add the new command's cases to CASES (and BASE)"
    assert set(BASE) <= set(CASES)


@pytest.mark.parametrize(("entry", "argv", "named"), list(_params()))
def test_nonsense_is_a_usage_error_naming_it(entry, argv, named, tmp_path):
    """Exit code 2, a short stderr without a traceback whose error line names the flag or value, and
    no file written (an output folder made by the writability check may remain, holding at most the
    empty lock file of the process that held it)."""
    result = _run(entry, argv, tmp_path)
    err = result.stderr
    assert "Traceback (most recent call last)" not in err, err
    assert result.returncode == 2, f"exit {result.returncode}\n{err}\n{result.stdout[-2000:]}"
    assert len(err.splitlines()) <= MAX_STDERR_LINES, err
    # the test's own folder is named after it ("..._usage_error_..."): the word must be the message's
    error_lines = [line for line in err.replace(str(tmp_path), "{tmp}").splitlines() if "error" in line]
    assert any(named in line for line in error_lines), err
    written = [p for p in tmp_path.rglob("*") if p.is_file() and p.name != LOCK_FILE]
    assert not written, f"the command wrote {written} before refusing"
