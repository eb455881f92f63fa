"""The shipped real-software samples in data_samples/ (schema, boxes, ids, splits) and, where
Chromium or Xvfb + AT-SPI are installed, a fresh capture of a few rows."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from PIL import Image

from capture import PLATFORMS, TEST_COLUMNS, TRAIN_COLUMNS, check_file
from capture.common import NO_BOX, Shot, Step, history_text
from gui_r1_lite.actions import ACTION_SPACES, NO_TEXT, POINT_ACTIONS, SCROLL_DIRECTIONS, TEXT_ACTIONS

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "data_samples"
TRAIN_FILES = ["web", "mobile", "desktop", "miniwob_train"]
TEST_FILES = ["realgui_test", "miniwob_test"]
IMAGE_TYPE = pa.struct([("bytes", pa.binary()), ("path", pa.string())])


def _files(kind: str) -> list[Path]:
    names = TRAIN_FILES if kind == "train" else TEST_FILES
    return [SAMPLES / kind / f"{n}.parquet" for n in names]


_CACHE: dict[Path, list[dict]] = {}


def rows(path: Path) -> list[dict]:
    if path not in _CACHE:
        _CACHE[path] = pq.read_table(path).to_pylist()
    return _CACHE[path]


def image_size(data: bytes, _cache: dict = {}) -> tuple[int, int]:  # noqa: B006 - deliberate memo
    key = hash(data)
    if key not in _cache:
        with Image.open(io.BytesIO(data)) as im:
            assert im.format == "PNG"
            _cache[key] = im.size
    return _cache[key]


# --- shipped files -------------------------------------------------------------------------------


@pytest.mark.parametrize("path", _files("train") + _files("test"), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_file_exists_and_has_exact_schema(path):
    assert path.exists(), f"{path} is missing; regenerate with `python -m capture`"
    schema = pq.read_schema(path)
    columns = TRAIN_COLUMNS if path.parent.name == "train" else TEST_COLUMNS
    assert tuple(schema.names) == columns
    for name in columns:
        expected = IMAGE_TYPE if name == "image" else pa.list_(pa.float64()) if name == "gt_bbox" else pa.string()
        assert schema.field(name).type == expected, f"{path}: column {name} is {schema.field(name).type}"
    assert len(rows(path)) > 0


@pytest.mark.parametrize("path", _files("train") + _files("test"), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_rows_are_valid(path):
    train = path.parent.name == "train"
    for r in rows(path):
        where = f"{path.name} {r['id']}"
        assert r["gt_action"] in ACTION_SPACES["high"], where
        assert r["task_type"] in ("low", "high"), where
        assert r["instruction"].strip() and r["history"].strip(), where
        if r["task_type"] == "low":
            assert r["gt_action"] == "click" and r["history"] == "None", where
        group = r["platform"] if train else r["group"]
        assert group in PLATFORMS, where
        if not train:
            assert r["ui_type"] in ("text", "icon"), where
        w, h = image_size(r["image"]["bytes"])
        box = r["gt_bbox"]
        if r["gt_action"] in POINT_ACTIONS:
            assert len(box) == 4, where
            x1, y1, x2, y2 = box
            limit_w, limit_h = (1.0, 1.0) if train else (float(w), float(h))
            assert 0.0 <= x1 < x2 <= limit_w and 0.0 <= y1 < y2 <= limit_h, f"{where}: {box} in {w}x{h}"
        else:
            assert list(box) == list(NO_BOX), where
        if r["gt_action"] in TEXT_ACTIONS:
            assert r["gt_input_text"] != NO_TEXT and r["gt_input_text"].strip(), where
        else:
            assert r["gt_input_text"] == NO_TEXT, where
        if r["gt_action"] == "scroll":
            assert r["gt_input_text"] in SCROLL_DIRECTIONS, where


def test_ids_unique_across_all_files():
    ids = [r["id"] for p in _files("train") + _files("test") for r in rows(p)]
    assert len(ids) == len(set(ids))


def test_check_file_agrees():
    for p in _files("train") + _files("test"):
        assert check_file(p) == [], p


def test_each_source_has_low_and_high_rows():
    for name in TRAIN_FILES:
        kinds = {r["task_type"] for r in rows(SAMPLES / "train" / f"{name}.parquet")}
        assert kinds == {"low", "high"}, name
    real = rows(SAMPLES / "test" / "realgui_test.parquet")
    assert {r["group"] for r in real} == {"web", "mobile", "desktop"}
    clicks = [r for r in real if r["gt_action"] == "click"]
    assert {r["ui_type"] for r in clicks} == {"text", "icon"}
    assert any(r["gt_action"] == "type" for r in real)


def test_high_level_steps_carry_history():
    for p in _files("train") + _files("test"):
        tasks: dict[str, list[dict]] = {}
        for r in rows(p):
            if r["task_type"] == "high":
                tasks.setdefault(r["id"].rsplit("/", 1)[0], []).append(r)
        for task, steps in tasks.items():
            steps.sort(key=lambda r: int(r["id"].rsplit("step", 1)[1]))
            assert steps[0]["history"] == "None", task
            for k, r in enumerate(steps[1:], 1):
                assert r["history"].startswith("Step 1: ") and f"Step {k}: " in r["history"], (task, r["history"])
                assert len({s["instruction"] for s in steps}) == 1, task


def test_realgui_rows_not_in_training_files():
    train = {r["id"] for n in ("web", "mobile", "desktop") for r in rows(SAMPLES / "train" / f"{n}.parquet")}
    train_keys = {(r["instruction"], r["image"]["bytes"]) for n in ("web", "mobile", "desktop")
                  for r in rows(SAMPLES / "train" / f"{n}.parquet")}
    for r in rows(SAMPLES / "test" / "realgui_test.parquet"):
        assert r["id"] not in train
        assert (r["instruction"], r["image"]["bytes"]) not in train_keys, r["id"]


def test_image_resolutions():
    for r in rows(SAMPLES / "train" / "web.parquet")[:5]:
        assert image_size(r["image"]["bytes"]) == (1280, 800)
    for r in rows(SAMPLES / "train" / "mobile.parquet")[:5]:
        assert image_size(r["image"]["bytes"]) == (1082, 2402)  # 412x915 CSS px at DPR 2.625
    for r in rows(SAMPLES / "train" / "desktop.parquet")[:5]:
        assert image_size(r["image"]["bytes"]) == (1280, 800)
    for r in rows(SAMPLES / "train" / "miniwob_train.parquet")[:5]:
        assert image_size(r["image"]["bytes"]) == (160, 210)


def _seeds(path: Path) -> set[int]:
    from capture.miniwob import seed_of

    return {seed_of(r["id"]) for r in rows(path)}


def test_miniwob_sizes_and_disjoint_seeds():
    train, test = SAMPLES / "train" / "miniwob_train.parquet", SAMPLES / "test" / "miniwob_test.parquet"
    assert len(rows(train)) >= 400
    assert len(rows(test)) >= 200
    assert not _seeds(train) & _seeds(test)
    for r in rows(test):
        assert r["group"] == "miniwob" and r["id"].startswith("miniwob/")
    tasks = {r["id"].split("/")[1] for r in rows(train)}
    assert {"click-button", "enter-text"} <= tasks
    assert any(r["gt_action"] == "type" for r in rows(train))


def test_samples_folder_is_small():
    total = sum(f.stat().st_size for f in SAMPLES.rglob("*") if f.is_file())
    assert total < 25 * 1024 * 1024


def test_readme_counts_rows():
    text = (SAMPLES / "README.md").read_text()
    for p in _files("train") + _files("test"):
        assert f"{p.parent.name}/{p.name}" in text
        assert str(len(rows(p))) in text, p


# --- pure helpers ----------------------------------------------------------------------------------


def _shot(w=100, h=50) -> Shot:
    buf = io.BytesIO()
    Image.new("RGB", (w, h), "white").save(buf, "PNG")
    return Shot(buf.getvalue(), w, h)


def test_history_text():
    assert history_text([]) == "None"
    assert history_text(["click 'Search'", "type 'pizza'"]) == "Step 1: click 'Search'. Step 2: type 'pizza'."


def test_check_file_names_each_bad_row(tmp_path):
    from capture.common import train_row, write_rows

    good = train_row(Step(id="web/x/click0", platform="web", split="train", instruction="Click on 'A'",
                          task_type="low", action="click", shot=_shot(), box=(10, 5, 90, 20)))
    bad = [dict(good, id="r0"),
           dict(good, id="r1", gt_action="teleport", gt_bbox=list(NO_BOX)),
           dict(good, id="r2", gt_bbox=[0.5, 0.5, 1.5, 0.9]),
           dict(good, id="r3", gt_input_text="hello"),
           dict(good, id="r4", gt_action="type", gt_bbox=list(NO_BOX)),
           dict(good, id="r5", platform="tv")]
    path = write_rows(bad, tmp_path / "train" / "web.parquet", TRAIN_COLUMNS)
    expected = ["row 1 (r1): gt_action 'teleport' not in the high-level action space",
                "row 2 (r2): click box [0.5, 0.5, 1.5, 0.9] not inside the unit square",
                "row 3 (r3): click row has input text 'hello'",
                "row 4 (r4): type row without input text",
                "row 5 (r5): platform 'tv'"]
    assert check_file(path) == [f"{path} {e}" for e in expected]


def test_step_validates_and_rows_convert(tmp_path):
    from capture.common import benchmark_row, train_row, write_steps

    s = Step(id="web/x/click0", platform="web", split="train", instruction="Click on 'A'", task_type="low",
             action="click", shot=_shot(), box=(10, 5, 130, 20))
    assert s.box == (10.0, 5.0, 100.0, 20.0)  # cut to the image
    tr, te = train_row(s), benchmark_row(s)
    assert tr["gt_bbox"] == [0.1, 0.1, 1.0, 0.4] and te["gt_bbox"] == [10.0, 5.0, 100.0, 20.0]
    with pytest.raises(ValueError):
        Step(id="a", platform="web", split="train", instruction="i", task_type="low", action="click", shot=_shot(),
             box=(200, 0, 300, 10))
    with pytest.raises(ValueError):
        Step(id="b", platform="web", split="train", instruction="i", task_type="high", action="type", shot=_shot())
    t = Step(id="web/x/step1", platform="web", split="test", instruction="i", task_type="high", action="type",
             shot=_shot(), input_text="pizza", history=["click 'Search'"])
    counts = write_steps([s, t], tmp_path, "web", "realgui_test", group="web")
    assert sorted(counts.values()) == [1, 1]
    assert check_file(tmp_path / "train" / "web.parquet") == []
    assert check_file(tmp_path / "test" / "realgui_test.parquet") == []


def test_cli_seed_parsing():
    from capture.__main__ import parse_seeds

    assert parse_seeds("0-3,10") == [0, 1, 2, 3, 10]


def test_missing_dependency_message(monkeypatch):
    from capture.common import CaptureDependencyError, require_executable

    with pytest.raises(CaptureDependencyError, match="apt-get install -y chromium"):
        require_executable("/nonexistent/chromium", "chromium", "Chromium")


def test_package_imports_without_browser_modules():
    code = ("import sys; import capture, capture.miniwob, capture.web, "
            "capture.desktop; assert 'playwright' not in sys.modules, sorted(sys.modules)")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_capture_lives_beside_the_package():
    """capture/ only made data_samples/: it imports the package, the package never imports it (not
    even inside a function), the wheel's package list leaves it out, and its command runs from the root."""
    import ast

    from setuptools.config.pyprojecttoml import read_configuration

    importers = []
    for path in sorted([*(ROOT / "gui_r1_lite").rglob("*.py"), *(ROOT / "harness").rglob("*.py")]):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) and node.level == 0 else []
            importers += [f"{path.relative_to(ROOT)}: {n}" for n in names if n.split(".")[0] == "capture"]
    assert importers == []
    shipped = read_configuration(ROOT / "pyproject.toml")["tool"]["setuptools"]["packages"]  # find, expanded
    assert "harness.online" in shipped and not [p for p in shipped if p.split(".")[0] == "capture"]
    assert not (ROOT / "gui_r1_lite" / "capture").exists()
    help_text = subprocess.run([sys.executable, "-m", "capture", "--help"], cwd=ROOT, capture_output=True, text=True)
    assert help_text.returncode == 0 and "python -m capture" in help_text.stdout


# --- live captures (optional extras) --------------------------------------------------------------


def _have_browser() -> bool:
    try:
        import miniwob  # noqa: F401
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return False
    return os.access("/usr/bin/chromium", os.X_OK)


@pytest.mark.browser
@pytest.mark.skipif(not _have_browser(), reason="needs /usr/bin/chromium, playwright and miniwob")
def test_miniwob_capture_regenerates_and_solves(tmp_path):
    from capture import miniwob

    tasks = ["click-button", "click-tab", "enter-text"]
    report = miniwob.write(tmp_path, tasks=tasks, train_seeds=[0, 1], test_seeds=[1000])
    for task in tasks:
        assert report["tasks"][task]["rewards"] == {"1": 3 - len(report["tasks"][task]["skipped"])}
    train, test = tmp_path / "train" / "miniwob_train.parquet", tmp_path / "test" / "miniwob_test.parquet"
    assert check_file(train) == [] and check_file(test) == []
    fresh = {r["id"]: r for r in pq.read_table(train).to_pylist()}
    assert "miniwob/enter-text/seed0/step1" in fresh
    assert fresh["miniwob/enter-text/seed0/step1"]["gt_action"] == "type"
    # same seeds, same episodes: the shipped rows come back (instruction and box)
    shipped = {r["id"]: r for r in rows(SAMPLES / "train" / "miniwob_train.parquet")}
    for rid, r in fresh.items():
        if rid in shipped:
            assert r["instruction"] == shipped[rid]["instruction"], rid
            assert r["gt_bbox"] == pytest.approx(shipped[rid]["gt_bbox"]), rid


@pytest.mark.browser
@pytest.mark.skipif(not _have_browser(), reason="needs /usr/bin/chromium, playwright and miniwob")
def test_miniwob_wrong_click_is_not_rewarded():
    """The page's reward is a real check: clicking a tab other than the asked one fails."""
    from capture import miniwob
    from capture.browser import chromium

    with chromium() as browser:
        page = browser.new_page(viewport={"width": 400, "height": 300})
        page.goto((miniwob.html_dir() / "click-tab.html").as_uri())
        page.wait_for_selector("#sync-task-cover", state="attached")
        page.evaluate("Math.seedrandom(5)")
        page.evaluate("core.startEpisodeReal()")
        want = page.evaluate("core.getUtterance().match(/Tab #(\\d)/)[1]")
        other = "1" if want != "1" else "2"
        page.click(f"#area ul a[href='#tabs-{other}']")
        assert page.evaluate("WOB_RAW_REWARD_GLOBAL") == -1


def _have_desktop() -> bool:
    try:
        from capture.desktop import check_dependencies

        check_dependencies()
    except Exception:  # noqa: BLE001
        return False
    return True


@pytest.mark.desktop
@pytest.mark.skipif(not _have_desktop(), reason="needs xvfb, mousepad, xdotool, at-spi2-core and python3-pyatspi")
def test_desktop_capture_boxes_match_shipped(tmp_path):
    from capture import desktop
    from capture.common import write_steps

    def menus_only(s):
        rec = desktop.Recorder(s, "main", "train")
        rec.low("window", [n for n in rec.clickable(["menu"]) if n.label in ("File", "Search", "View", "Help")])
        return rec.steps

    steps = desktop.capture([menus_only])
    write_steps(steps, tmp_path, "desktop", None)
    assert check_file(tmp_path / "train" / "desktop.parquet") == []
    shipped = {r["id"]: r for r in rows(SAMPLES / "train" / "desktop.parquet")}
    for s in steps:
        assert s.shot.width == 1280 and s.shot.height == 800
        assert shipped[s.id]["instruction"] == s.instruction
        w, h = 1280, 800
        assert shipped[s.id]["gt_bbox"] == pytest.approx([s.box[0] / w, s.box[1] / h, s.box[2] / w, s.box[3] / h])


@pytest.mark.browser
@pytest.mark.skipif(not (_have_browser() and shutil.which("dpkg-query") and
                         Path("/usr/share/doc/python3-doc/html/index.html").exists()),
                    reason="needs chromium, playwright and python3-doc")
def test_web_low_level_capture_matches_shipped():
    from capture import web
    from capture.browser import chromium, new_page

    with web.serve(web.docs_root()) as base, chromium() as browser:
        s = web.Session(new_page(browser), base, "web")
        steps = web.low_level_steps(s, ["index.html"], "train")
    shipped = {r["id"]: r for r in rows(SAMPLES / "train" / "web.parquet")}
    assert steps
    for st in steps:
        assert shipped[st.id]["instruction"] == st.instruction
        assert shipped[st.id]["gt_bbox"] == pytest.approx(
            [st.box[0] / 1280, st.box[1] / 800, st.box[2] / 1280, st.box[3] / 800], abs=1e-6)
