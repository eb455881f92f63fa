"""CI loses no coverage silently: the skip check in tests/conftest.py fails a session on any skip
but the CUDA-only ones, and .ci/run turns it on and stops on a failed install; `make test` is the fast
tier (no `slow` test) and CI runs `make test-all`, the whole suite, failing when pytest collects nothing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

TOY_TESTS = '''
import pytest

@pytest.mark.gpu
def test_needs_a_gpu():
    pass

@pytest.mark.skipif(True, reason="checks what happens without CUDA")
def test_without_cuda():
    pass

def test_runs():
    pass

@pytest.mark.xfail(reason="known")
def test_known_failure():
    assert False
'''
MISSING_TOOL = '''
import pytest

def test_needs_a_tool():
    pytest.skip("needs /usr/bin/some-tool")

@pytest.mark.browser
def test_marked_browser():
    pass
'''


def run_toy(tmp_path: Path, source: str, no_skips: bool) -> subprocess.CompletedProcess:
    """pytest in a fresh process on a tiny test file, with the project's conftest beside it."""
    (tmp_path / "conftest.py").write_text((ROOT / "tests" / "conftest.py").read_text())
    (tmp_path / "test_toy.py").write_text(source)
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    gpu: x\n    browser: x\n    desktop: x\n")
    env = {k: v for k, v in os.environ.items() if k != "GUI_R1_LITE_NO_SKIPS"}
    if no_skips:
        env["GUI_R1_LITE_NO_SKIPS"] = "1"
    env["PATH"] = ""  # no chromium on the PATH: the `browser` marker skips
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)


def test_cuda_only_skips_pass_and_are_listed(tmp_path):
    proc = run_toy(tmp_path, TOY_TESTS, no_skips=True)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "2 CUDA-only skip(s) allowed, 0 other skip(s)" in proc.stdout
    assert "allowed skip: test_toy.py::test_needs_a_gpu: needs a CUDA device" in proc.stdout


def test_any_other_skip_fails_the_session_and_is_named(tmp_path):
    proc = run_toy(tmp_path, TOY_TESTS + MISSING_TOOL, no_skips=True)
    assert proc.returncode == 1, proc.stdout[-3000:]
    assert "UNEXPECTED skip: test_toy.py::test_needs_a_tool: needs /usr/bin/some-tool" in proc.stdout
    assert "UNEXPECTED skip: test_toy.py::test_marked_browser: needs /usr/bin/chromium" in proc.stdout
    assert "failing the session on 2 unexpected skip(s)" in proc.stdout


def test_without_the_switch_skips_are_listed_not_fatal(tmp_path):
    proc = run_toy(tmp_path, TOY_TESTS + MISSING_TOOL, no_skips=False)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "2 CUDA-only skip(s) allowed, 2 other skip(s)" in proc.stdout


def test_ci_turns_the_check_on_and_stops_on_a_failed_install():
    ci = (ROOT / ".ci" / "run").read_text()
    assert "GUI_R1_LITE_NO_SKIPS=1" in ci
    install = next(line for line in ci.splitlines() if "install_capture_deps.sh" in line and "bash" in line)
    assert "||" not in install and "set -euo pipefail" in ci


def make_recipe(target: str) -> list[str]:
    """The command lines of a Makefile target."""
    lines = (ROOT / "Makefile").read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.split(":")[0] == target and ":" in line)
    recipe = []
    for line in lines[start + 1:]:
        if not line.startswith("\t"):
            break
        recipe.append(line.strip())
    return recipe


def test_make_test_is_the_fast_tier_and_make_test_all_the_whole_suite():
    test, test_all = make_recipe("test"), make_recipe("test-all")
    assert len(test) == len(test_all) == 1, (test, test_all)
    assert '-m pytest -m "not slow"' in test[0] and test[0].endswith("$(ARGS)")
    assert "-m pytest" in test_all[0] and "slow" not in test_all[0] and " -m " not in test_all[0].split("pytest", 1)[1]
    assert "test-all" in next(line for line in (ROOT / "Makefile").read_text().splitlines() if line.startswith(".PHONY"))
    markers = (ROOT / "pyproject.toml").read_text()
    assert '"slow: ' in markers and "`make test-all`" in markers


def test_ci_runs_the_whole_suite_and_fails_when_nothing_is_collected(tmp_path):
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert "make test-all" in ci and "make test" not in ci
    # the lines from `make test-all` on, with a stand-in `make` that exits as pytest would
    tail = ci[ci.index("make test-all") - 1:]
    (tmp_path / "make").write_text('#!/bin/sh\necho "make $*"\nexit "$PYTEST_RC"\n')
    (tmp_path / "make").chmod(0o755)
    (tmp_path / "tail.sh").write_text("set -euo pipefail\n" + "\n".join(tail) + "\n")
    env = {**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}"}
    for pytest_rc, ci_rc in (("0", 0), ("1", 1), ("5", 1)):
        done = subprocess.run(["bash", str(tmp_path / "tail.sh")], capture_output=True, text=True, timeout=60,
                              env={**env, "PYTEST_RC": pytest_rc})
        assert done.returncode == ci_rc and "make test-all" in done.stdout, (pytest_rc, done.stdout, done.stderr)
        assert ("pytest collected no tests" in done.stdout) == (pytest_rc == "5")


def test_the_closed_loop_packages_are_in_requirements_at_the_capture_scripts_pins():
    # `make run`'s .venv plays the closed loop with nothing else installed (the browser aside)
    pins = dict(line.split("==") for line in (ROOT / "requirements.txt").read_text().splitlines()
                if "==" in line and not line.startswith("#"))
    script = (ROOT / "scripts" / "install_capture_deps.sh").read_text()
    for name in ("playwright", "miniwob"):
        assert f'"{name}=={pins[name]}"' in script, name
