"""Closed-loop evaluation in a live browser: the oracle solves every episode of the tasks it
supports and the random baseline far fewer; a killed run resumes without playing a finished
episode again; bad input fails in one line naming the fix, or is a recorded failed episode.
Tests that open pages need Chromium, playwright and miniwob (marker `browser`); the rest do not."""

from __future__ import annotations

import asyncio
import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from PIL import Image

from gui_r1_lite.actions import Action, format_answer
from gui_r1_lite.errors import UsageError
from gui_r1_lite.runfolder import RunFolderMismatch
from gui_r1_lite.runio import read_jsonl
from harness import online

ROOT = Path(__file__).resolve().parents[1]
# Two episodes of every supported task keep the browser tests near a minute on two cores.
EPISODES = 2
SEED = online.DEFAULT_SEED_START


def _have_browser() -> bool:
    try:
        import miniwob  # noqa: F401
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return False
    return os.access("/usr/bin/chromium", os.X_OK)


def _have_miniwob() -> bool:
    try:
        import miniwob  # noqa: F401
    except ImportError:
        return False
    return True


def needs_browser(test):
    """Marked `browser`, and skipped (with the reason) without Chromium, playwright or miniwob."""
    skip = pytest.mark.skipif(not _have_browser(), reason="needs /usr/bin/chromium, playwright and miniwob")
    return pytest.mark.browser(skip(test))


needs_miniwob = pytest.mark.skipif(not _have_miniwob(), reason="needs the miniwob package (its task list)")


class Scripted:
    """A completer answering `answer(row)` for every step (rows carry the model frame's size)."""

    def __init__(self, name: str, answer):
        self.name, self.answer = name, answer

    def complete(self, rows, images, keys, max_new_tokens):
        return [self.answer(r) for r in rows]


@pytest.fixture(scope="module")
def oracle_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("online") / "oracle"
    return out, online.evaluate_online("oracle", online.ORACLE_TASKS, EPISODES, SEED, out)


@pytest.fixture(scope="module")
def random_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("online") / "random"
    return out, online.evaluate_online("random", online.ORACLE_TASKS, EPISODES, SEED, out)


# --- the harness check: the oracle solves, random is the floor ------------------------------------------


@needs_browser
def test_oracle_solves_every_episode_of_the_supported_tasks(oracle_run):
    out, summary = oracle_run
    assert summary["success"] == 1.0
    for task in online.ORACLE_TASKS:
        r = summary["tasks"][task]
        assert (r["success"], r["episodes"], r["solved"]) == (1.0, EPISODES, EPISODES), (task, r)
        assert r["ci95"][1] == 1.0 and 0 < r["ci95"][0] < 1  # Wilson: a perfect score of 2 is far from certain
    assert summary["seeds"] == list(range(SEED, SEED + EPISODES))
    assert (out / online.ONLINE_JSON).exists() and (out / online.ONLINE_MD).exists()
    # the oracle acted through parse -> map -> act: every step's record has a mapped point or a text
    steps = read_jsonl(out / online.STEPS_FILE)
    assert steps and all(s["failed"] is None and s["format_ok"] for s in steps)
    for s in steps:
        if s["pred_action"] == "click":
            x1, y1, x2, y2 = s["gt_bbox"]
            assert x1 <= s["pred_coord"][0] <= x2 and y1 <= s["pred_coord"][1] <= y2, s["id"]
            assert s["page_point"] is not None
        assert (out / s["screenshot"]).is_file()
    # the steps a multi-step episode took are the scripted ones, in order, with the training rows' history
    login = [s for s in steps if s["task"] == "login-user" and s["seed"] == SEED]
    assert [s["pred_action"] for s in login] == ["click", "type", "click", "type", "click"]
    assert login[0]["history"] == "None" and login[2]["history"].startswith("Step 1: click the username field.")


@needs_browser
def test_random_solves_far_fewer(oracle_run, random_run):
    _, oracle = oracle_run
    _, rand = random_run
    assert rand["episodes"] == oracle["episodes"] == EPISODES * len(online.ORACLE_TASKS)
    assert rand["success"] <= oracle["success"] - 0.6, rand["success"]
    # multi-step tasks need every step right: random solves none of them here
    for task in ("enter-text", "login-user", "click-option", "click-collapsible"):
        assert rand["tasks"][task]["success"] == 0.0, task


@needs_browser
def test_finished_folder_is_not_played_again_and_more_episodes_extend_it(oracle_run, tmp_path):
    out, summary = oracle_run
    before = (out / online.EPISODES_FILE).read_text()
    assert online.evaluate_online("oracle", online.ORACLE_TASKS, EPISODES, SEED, out) == summary
    assert (out / online.EPISODES_FILE).read_text() == before
    # another folder: one episode, then three (the first is kept, two are played)
    small = tmp_path / "grow"
    online.evaluate_online("oracle", ["click-button"], 1, SEED, small)
    first = read_jsonl(small / online.EPISODES_FILE)
    grown = online.evaluate_online("oracle", ["click-button"], 3, SEED, small)
    episodes = read_jsonl(small / online.EPISODES_FILE)
    assert episodes[0] == first[0] and [e["seed"] for e in episodes] == [SEED, SEED + 1, SEED + 2]
    assert grown["tasks"]["click-button"]["episodes"] == 3 and grown["success"] == 1.0
    # another policy into that folder: refused, or with overwrite the old episodes go and it starts fresh
    with pytest.raises(RunFolderMismatch, match="--overwrite"):
        online.evaluate_online("random", ["click-button"], 1, SEED, small)
    online.evaluate_online("random", ["click-button"], 1, SEED, small, overwrite=True)
    assert len(read_jsonl(small / online.EPISODES_FILE)) == 1
    assert all(s["completion"].startswith("<think>random") for s in read_jsonl(small / online.STEPS_FILE))
    assert not (small / "shots" / "click-button" / f"seed{SEED + 2}_step0.png").exists()


@needs_browser
def test_folder_of_another_policy_or_tasks_is_refused(oracle_run):
    out, _ = oracle_run
    with pytest.raises(RunFolderMismatch, match="policy"):
        online.evaluate_online("random", online.ORACLE_TASKS, EPISODES, SEED, out)
    with pytest.raises(RunFolderMismatch, match="tasks"):
        online.evaluate_online("oracle", ["click-button"], EPISODES, SEED, out)


# --- kill and resume -------------------------------------------------------------------------------------


@needs_browser
def test_killed_run_resumes_without_repeating_finished_episodes(tmp_path):
    out = tmp_path / "run"
    tasks, episodes = ["click-button", "enter-text"], 3
    cmd = [sys.executable, "-m", "harness.online", "--policy", "oracle", "--tasks", ",".join(tasks),
           "--episodes", str(episodes), "--out", str(out)]
    log = tmp_path / "killed.log"
    with log.open("w") as fh:
        # its own process group: the kill takes Playwright's driver and Chromium with it
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 240
        try:
            while len(read_jsonl(out / online.EPISODES_FILE)) < 2:
                assert proc.poll() is None, f"the run ended (rc {proc.returncode}) before the kill:\n{log.read_text()}"
                assert time.monotonic() < deadline, f"no two episodes within 240 s:\n{log.read_text()}"
                time.sleep(0.02)
        finally:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    kept = (out / online.EPISODES_FILE).read_text().splitlines()
    finished = [(e["task"], e["seed"]) for e in read_jsonl(out / online.EPISODES_FILE)]
    assert 2 <= len(finished) < len(tasks) * episodes, "killed too late to test a resume"
    shots = {p: p.stat().st_mtime_ns for p in (out / "shots").rglob("*.png")
             if any(f"{t}/seed{s}_" in p.as_posix() for t, s in finished)}

    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    lines = (out / online.EPISODES_FILE).read_text().splitlines()
    assert lines[:len(kept)] == kept  # finished episodes kept as they were, not played again
    keys = [(e["task"], e["seed"]) for e in read_jsonl(out / online.EPISODES_FILE)]
    assert sorted(keys) == sorted((t, SEED + i) for t in tasks for i in range(episodes)) and len(set(keys)) == len(keys)
    assert all(p.stat().st_mtime_ns == t for p, t in shots.items())
    # no step is recorded twice; each episode's steps are all there
    steps = read_jsonl(out / online.STEPS_FILE)
    ids = [s["id"] for s in steps]
    assert len(ids) == len(set(ids))
    for e in read_jsonl(out / online.EPISODES_FILE):
        assert sum(1 for s in steps if (s["task"], s["seed"]) == (e["task"], e["seed"])) == e["steps"]
    assert online.summarize_online(read_jsonl(out / online.EPISODES_FILE), tasks, range(SEED, SEED + episodes))[
        "success"] == 1.0
    assert "| **all** | 6 | 100.0 |" in done.stdout


# --- failed steps and episodes are recorded, not raised ---------------------------------------------------


@needs_browser
def test_unparsable_answer_is_a_recorded_failed_step(tmp_path):
    babble = Scripted("babble", lambda row: "I would click the button")
    summary = online.evaluate_online(babble, ["click-test"], 1, SEED, tmp_path)
    (step,) = read_jsonl(tmp_path / online.STEPS_FILE)
    (episode,) = read_jsonl(tmp_path / online.EPISODES_FILE)
    assert step["failed"] == "not exactly <think>…</think> <answer>…</answer>" and step["performed"] is None
    assert (episode["end"], episode["why"], episode["steps"]) == ("unparsable answer", step["failed"], 1)
    assert not episode["success"]
    assert summary["tasks"]["click-test"]["ends"] == {"unparsable answer": 1}


@needs_browser
def test_page_that_never_reports_done_ends_after_max_steps(tmp_path):
    # a click on the instruction (top left corner): the page neither rewards nor ends the episode
    corner = Scripted("corner", lambda row: format_answer(Action("click", (2, 2))))
    summary = online.evaluate_online(corner, ["click-test"], 1, SEED, tmp_path, max_steps=3)
    (episode,) = read_jsonl(tmp_path / online.EPISODES_FILE)
    assert episode.pop("seconds") > 0
    assert episode == {"task": "click-test", "seed": SEED, "steps": 3, "done": False, "raw_reward": 0.0,
                       "success": False, "end": "step limit", "why": "not done after 3 steps"}
    steps = read_jsonl(tmp_path / online.STEPS_FILE)
    assert [s["step"] for s in steps] == [0, 1, 2]
    assert steps[0]["gt_action"] == "click" and steps[1]["gt_action"] is None  # one scripted step
    assert summary["max_steps"] == {"click-test": 3}


@needs_browser
def test_runs_where_an_asyncio_loop_runs(tmp_path):
    """A notebook's kernel runs an asyncio loop, inside which Playwright's sync API refuses to start."""
    async def in_a_loop():
        return online.evaluate_online("oracle", ["click-test"], 1, SEED, tmp_path)

    assert asyncio.run(in_a_loop())["success"] == 1.0


@needs_browser
def test_tiny_model_plays_through_the_same_path(tiny_model_dir, tmp_path):
    # the paper's preset (its repetition penalty and pixel range), fewer tokens
    summary = online.evaluate_online(str(tiny_model_dir), ["click-button"], 1, SEED, tmp_path, max_new_tokens=8,
                                     preset="paper")
    (step, *_) = read_jsonl(tmp_path / online.STEPS_FILE)
    assert step["completion"] and step["model_size"] == [168, 224] and step["image_size"] == [160, 210]
    assert summary["policy"] == str(tiny_model_dir) and summary["tasks"]["click-button"]["episodes"] == 1
    made_by = json.loads((tmp_path / "run.json").read_text())["made_by"]
    assert made_by["preset"] == "paper" and made_by["max_new_tokens"] == 8
    assert made_by["policy"]["generation"]["repetition_penalty"] == 1.05


# --- bad input: one line naming the fix ------------------------------------------------------------------


@needs_miniwob
def test_unknown_task_names_the_closest_ones():
    with pytest.raises(UsageError, match="unknown MiniWoB\\+\\+ task 'click-buton'; did you mean click-button"):
        online.check_tasks("click-buton,enter-text")
    assert online.check_tasks(" click-button, enter-text ,click-button") == ["click-button", "enter-text"]
    with pytest.raises(UsageError, match="no task given"):
        online.check_tasks(" , ")


@needs_miniwob
def test_oracle_needs_a_scripted_task():
    assert "choose-list" in online.known_tasks()  # a real task the capture has no script for
    with pytest.raises(UsageError, match="the oracle needs a task's scripted steps; \\['choose-list'\\]"):
        online.check_tasks(["choose-list"], oracle=True)
    assert online.check_tasks(["choose-list"]) == ["choose-list"]  # a model may play it


def test_seeds_of_data_samples_are_refused():
    with pytest.raises(UsageError, match="held-out seeds 1000–1014"):
        online.episode_seeds(995, 10)
    with pytest.raises(UsageError, match="training seeds 0–29"):
        online.episode_seeds(25, 3)
    assert online.episode_seeds(1015, 2) == [1015, 1016]
    with pytest.raises(UsageError, match="at least 1"):
        online.episode_seeds(SEED, 0)


def test_reserved_seeds_cover_every_miniwob_row_of_data_samples():
    from harness.online.miniwob import seed_of

    reserved = set().union(*online.RESERVED_SEEDS.values())
    for path in (ROOT / "data_samples").rglob("miniwob_*.parquet"):
        seeds = {seed_of(i) for i in pq.read_table(path, columns=["id"]).column("id").to_pylist()}
        assert seeds and seeds <= reserved, (path, sorted(seeds - reserved))


@needs_miniwob
def test_missing_model_folder_is_one_line_before_anything_starts(tmp_path):
    with pytest.raises(UsageError, match="model folder /nonexistent/model does not exist") as err:
        online.evaluate_online("/nonexistent/model", ["click-button"], 1, SEED, tmp_path / "out")
    assert "\n" not in str(err.value)
    assert not (tmp_path / "out").exists()
    with pytest.raises(UsageError, match="adapter goes with a model folder"):
        online.evaluate_online("oracle", ["click-button"], 1, SEED, tmp_path / "out", adapter=tmp_path)


@needs_miniwob
def test_missing_chromium_names_the_package(tmp_path, monkeypatch):
    from harness.online import browser
    from harness.online.browser import CaptureDependencyError

    monkeypatch.setattr(browser, "CHROMIUM", "/nonexistent/chromium")
    monkeypatch.setenv("PLAYWRIGHT_BROWSERS_PATH", str(tmp_path / "no-downloads"))
    with pytest.raises(CaptureDependencyError, match="apt-get install -y chromium"):
        online.evaluate_online("oracle", ["click-button"], 1, SEED, tmp_path)


def test_chromium_is_debians_else_playwrights_own_download(tmp_path, monkeypatch):
    from harness.online import browser

    monkeypatch.setattr(browser, "CHROMIUM", "/nonexistent/chromium")
    monkeypatch.setenv("PLAYWRIGHT_BROWSERS_PATH", str(tmp_path))
    assert browser.find_chromium() is None
    for build in (1187, 1200, 999):  # `playwright install chromium` leaves chromium-<build>/chrome-linux*/chrome
        exe = tmp_path / f"chromium-{build}" / "chrome-linux64" / "chrome"
        exe.parent.mkdir(parents=True)
        exe.write_text("#!/bin/sh\n")
        exe.chmod(0o755)
    assert browser.find_chromium() == str(tmp_path / "chromium-1200" / "chrome-linux64" / "chrome")
    monkeypatch.setattr(browser, "CHROMIUM", "/bin/sh")  # Debian's, where there is one, comes first
    assert browser.find_chromium() == "/bin/sh"


@needs_miniwob
def test_command_line_errors_are_one_line(tmp_path, capsys):
    from gui_r1_lite.errors import run_cli
    from harness.online.__main__ import main

    code = run_cli(main, ["--policy", "oracle", "--tasks", "no-such-task", "--episodes", "1", "--out",
                          str(tmp_path)], prog="gui-r1-lite online")
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and err[0].startswith("[gui-r1-lite online] error: unknown MiniWoB++ task 'no-such-task'")
    code = run_cli(main, ["--policy", "random", "--episodes", "3", "--seed-start", "1013", "--out", str(tmp_path)],
                   prog="gui-r1-lite online")
    assert code == 2 and "held-out seeds 1000–1014" in capsys.readouterr().err


@pytest.mark.parametrize(("completion", "space", "why"), [
    ("I would click it", "low", "not exactly <think>"),  # no answer block: nothing read
    ("<think></think> <answer>[{'action': 'type', 'point': [-100, -100], 'input_text': 'x'}]</answer>", "low",
     "action 'type' is not one of ['click']"),  # the one-click tasks' space is click only
    ("<think></think> <answer>[{'action': 'click', 'input_text': 'no input text'}]</answer>", "low",
     "a click without a point"),  # the official reading's (0, 0) default is no point
    ("<think></think> <answer>[{'action': 'type', 'point': [-100, -100], 'input_text': 'no input text'}]</answer>",
     "high", "a type without an input text"),
    ("<think></think> <answer>[{'action': 'scroll', 'point': [-100, -100], 'input_text': 'sideways'}]</answer>",
     "high", "scroll needs one of"),
])
def test_answers_that_cannot_be_acted_on(completion, space, why):
    from harness.online.episode import readable_action

    action, reason = readable_action(completion, "official", space)
    assert action is None and reason.startswith(why), reason


def test_answer_that_can_be_acted_on_keeps_the_model_frame_point():
    from harness.online.episode import readable_action

    action, reason = readable_action(format_answer(Action("click", (82, 382))), "official", "low")
    assert reason is None and (action.action, action.point) == ("click", (82, 382))
    action, reason = readable_action(format_answer(Action("scroll", input_text="down")), "strict", "high")
    assert reason is None and action.input_text == "down"


def test_wilson_interval():
    assert online.wilson(0, 0) == [0.0, 1.0]
    lo, hi = online.wilson(5, 10)
    assert lo == pytest.approx(0.2366, abs=1e-4) and hi == pytest.approx(0.7634, abs=1e-4)  # textbook values
    lo, hi = online.wilson(0, 20)
    assert lo == 0.0 and hi == pytest.approx(0.1611, abs=1e-4)


def test_summary_counts_only_the_asked_episodes():
    eps = [{"task": "a", "seed": s, "steps": 2, "raw_reward": 1.0 if s % 2 else -1.0, "success": bool(s % 2),
            "end": "done"} for s in range(4)]
    eps.append({"task": "a", "seed": 99, "steps": 1, "raw_reward": 1.0, "success": True, "end": "done"})
    s = online.summarize_online(eps, ["a"], range(4))
    assert (s["success"], s["episodes"], s["mean_steps"]) == (0.5, 4, 2.0)
    assert s["tasks"]["a"]["mean_raw_reward"] == 0.0 and s["tasks"]["a"]["ends"] == {"done": 4}


# --- the episode strip ------------------------------------------------------------------------------------


def _step_record(k: int, **over) -> dict:
    rec = {"id": f"miniwob/t/seed{SEED}/step{k}", "task": "enter-text", "seed": SEED, "step": k,
           "instruction": "Enter \"Tula\" into the text field and press Submit.", "gt_action": "click",
           "gt_bbox": [20.0, 40.0, 100.0, 60.0], "gt_input_text": "no input text", "image_size": [160, 210],
           "pred_action": "click", "pred_coord": [50.0, 50.0], "pred_input_text": "no input text",
           "parse_error": None, "failed": None, "done": False, "raw_reward": 0.0, "screenshot": f"shots/{k}.png"}
    rec.update(over)
    return rec


def test_episode_strip_draws_each_step_with_readable_text(tmp_path):
    from gui_r1_lite import viz

    (tmp_path / "shots").mkdir()
    for k in range(3):
        Image.new("RGB", (160, 210), "white").save(tmp_path / "shots" / f"{k}.png")
    records = [_step_record(2, pred_coord=[10.0, 200.0], gt_action=None, gt_bbox=None, done=True, raw_reward=-1.0),
               _step_record(0), _step_record(1, pred_coord=[150.0, 5.0])]
    fig = viz.episode_strip(records, tmp_path)
    panels = [ax for ax in fig.axes if ax.images]
    assert len(panels) == 3
    titles = [ax.get_title(loc="left") for ax in panels]
    assert titles[0].startswith("step 1 · ✓ hit") and titles[1].startswith("step 2 · ✗ miss")
    assert titles[2].startswith("step 3 · ? no scripted step") and "page: done, reward -1" in titles[2]
    assert "not solved" in fig._suptitle.get_text()
    # every text at least 12 px tall at the width a notebook shows the figure
    scale = min(1.0, viz.NOTEBOOK_WIDTH_PX / (fig.get_figwidth() * viz.SCREEN_DPI))
    for text in fig.findobj(lambda o: hasattr(o, "get_fontsize") and hasattr(o, "get_text")):
        if text.get_text().strip():
            assert text.get_fontsize() * viz.SCREEN_DPI / 72 * scale >= viz.MIN_TEXT_PX - 0.01, text.get_text()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    assert buf.getvalue()[:4] == b"\x89PNG"
    import matplotlib.pyplot as plt

    plt.close(fig)


def test_episode_strip_takes_images_by_record_and_refuses_nothing():
    from gui_r1_lite import viz

    images = {f"miniwob/t/seed{SEED}/step0": Image.new("RGB", (160, 210), "white")}
    fig = viz.episode_strip([_step_record(0, done=True, raw_reward=1.0)], images)
    assert "solved in 1 step" in fig._suptitle.get_text()
    with pytest.raises(ValueError, match="no step records"):
        viz.episode_strip([], images)


@needs_browser
def test_episode_strip_of_a_live_episode(oracle_run):
    from gui_r1_lite import viz

    out, _ = oracle_run
    fig = viz.episode_strip(online.read_episode(out, "enter-text", SEED), out)
    assert len([ax for ax in fig.axes if ax.images]) == 3
    assert "enter-text · seed 2000 · solved in 3 steps" in fig._suptitle.get_text()
    longest = online.read_episode(out)  # by default the first of the longest episodes: login-user's five steps
    assert [s["step"] for s in longest] == [0, 1, 2, 3, 4] and longest[0]["task"] == "login-user"
    with pytest.raises(ValueError, match="no finished episode of choose-list"):
        online.read_episode(out, "choose-list")
