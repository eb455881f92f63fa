"""Command-line error reporting: one line with the fix, exit 2 for usage and 1 for a failed run,
the traceback only when asked for."""

from __future__ import annotations

import pytest

from gui_r1_lite.errors import DEBUG_ENV, RunFailed, UsageError, run_cli


class ConfigLikeError(ValueError):
    pass


def _raising(exc):
    def main(argv):
        raise exc
    return main


@pytest.mark.parametrize("exc, code", [(UsageError("--limit must be at least 1"), 2),
                                       (ConfigLikeError("recipe x.yaml: unknown key 'lr'"), 2),
                                       (RunFailed("no usable row in a.parquet"), 1)])
def test_known_errors_print_one_line_and_exit_with_their_code(monkeypatch, capsys, exc, code):
    monkeypatch.delenv(DEBUG_ENV, raising=False)
    assert run_cli(_raising(exc), [], prog="tool", usage_errors=(ConfigLikeError,)) == code
    err = capsys.readouterr().err
    assert f"[tool] error: {exc}" in err and "Traceback" not in err


def test_debug_flag_shows_the_traceback_and_is_not_passed_on(monkeypatch, capsys):
    monkeypatch.delenv(DEBUG_ENV, raising=False)
    seen = []

    def main(argv):
        seen.append(argv)
        raise UsageError("bad")
    assert run_cli(main, ["--x", "1", "--debug"], prog="tool") == 2
    assert seen == [["--x", "1"]]
    assert "Traceback" in capsys.readouterr().err


def test_env_variable_also_shows_the_traceback(monkeypatch, capsys):
    monkeypatch.setenv(DEBUG_ENV, "1")
    run_cli(_raising(RunFailed("x")), [], prog="tool")
    assert "Traceback" in capsys.readouterr().err


def test_a_bug_is_not_hidden(monkeypatch):
    monkeypatch.delenv(DEBUG_ENV, raising=False)
    with pytest.raises(ZeroDivisionError):
        run_cli(_raising(ZeroDivisionError("bug")), [], prog="tool")


def test_success_returns_main_code():
    assert run_cli(lambda argv: None, []) == 0
    assert run_cli(lambda argv: 3, []) == 3


def test_a_first_sigterm_is_noted_for_the_next_safe_point_and_a_second_stops_at_once(monkeypatch):
    import os
    import signal
    import time

    from gui_r1_lite import errors
    from gui_r1_lite.errors import Terminated, deferred_sigterm

    monkeypatch.setattr(errors, "SAME_STOP_SECONDS", 0.3)
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(Terminated), deferred_sigterm() as asked:
        assert not asked()
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.05)  # the handler runs between two bytecodes of this thread
        assert asked()  # noted, the work goes on to its safe point
        time.sleep(0.4)  # past SAME_STOP_SECONDS: a second request
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(1)
        raise AssertionError("a second SIGTERM did not stop at once")
    assert signal.getsignal(signal.SIGTERM) == before  # the handler of before is back


def test_the_same_sigterm_arriving_twice_at_once_is_one_request():
    """A scheduler that signals every process of a job (scancel) reaches a worker directly and again
    through torchrun: two SIGTERMs within SAME_STOP_SECONDS still stop at the next safe point."""
    import os
    import signal
    import time

    from gui_r1_lite import errors
    from gui_r1_lite.errors import deferred_sigterm

    assert errors.SAME_STOP_SECONDS >= 2.0  # torchrun passes its SIGTERM on within milliseconds
    with deferred_sigterm() as asked:
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.05)
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.2)
        assert asked()  # noted, and the work goes on: no Terminated raised here
