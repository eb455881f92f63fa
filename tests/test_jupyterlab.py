"""The prediction browser used as a person uses it: JupyterLab served on 127.0.0.1 with a token,
Debian's Chromium driven by Playwright opens a small notebook, runs it from the Run menu, and reads
the widget off the page (its screenshot, `next ▶`, the `miss` filter, the counts)."""

from __future__ import annotations

import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from gui_r1_lite import evaluate as E
from gui_r1_lite.metrics import record_outcome
from gui_r1_lite.runio import write_jsonl_atomic

pytestmark = [pytest.mark.browser, pytest.mark.slow]  # a JupyterLab server and Chromium: about a minute

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
# The flags that start Chromium without a network (as harness/online/browser.py starts it).
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync"]
ROWS_PER_FILE = 3
WAIT_MS = 60_000


def _need_browser():
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"{CHROMIUM} is missing: run scripts/install_capture_deps.sh (as root) to install Chromium")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        pytest.skip("Python Playwright is missing: run scripts/install_capture_deps.sh to install it")


@pytest.fixture(scope="module")
def records(tmp_path_factory) -> list[dict]:
    """Oracle and random predictions on the shipped test samples, ids prefixed by the policy so
    that both kinds (hits and misses) are in one browser."""
    out = tmp_path_factory.mktemp("predictions")
    data = REPO / "data_samples" / "test"
    recs = []
    for policy in ("oracle", "random"):
        E.evaluate(data, policy, out / policy, limit=ROWS_PER_FILE, progress=False)
        recs += [{**r, "id": f"{policy}/{r['id']}"} for r in E.read_records(out / policy / "predictions.jsonl")]
    return recs


def _notebook(path: Path, records_path: Path) -> None:
    import nbformat

    source = f"""\
from gui_r1_lite import evaluate as E
from gui_r1_lite import viz
from gui_r1_lite.runio import read_jsonl

records = read_jsonl({str(records_path)!r})
samples = E.samples_by_id({str(REPO / "data_samples" / "test")!r}, limit={ROWS_PER_FILE})
browser = viz.PredictionBrowser(records, lambda r: samples[r["id"].split("/", 1)[1]])
browser.widget"""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source)])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_until_up(url: str, proc: subprocess.Popen, log: Path, seconds: float = 90) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"JupyterLab exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise TimeoutError(f"JupyterLab did not answer {url} within {seconds:.0f} s:\n{log.read_text()[-3000:]}")


@pytest.fixture
def lab(tmp_path):
    """A JupyterLab server on 127.0.0.1 (random port, token, settings in tmp_path); yields
    (base url, token, notebook folder) and always shuts it down."""
    _need_browser()
    root = tmp_path / "root"
    root.mkdir()
    port, token = _free_port(), secrets.token_hex(16)
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(tmp_path / "config"), "JUPYTER_RUNTIME_DIR": str(tmp_path / "rt"),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    log = tmp_path / "jupyterlab.log"
    cmd = [sys.executable, "-m", "jupyterlab", "--no-browser", "--allow-root", "--ip=127.0.0.1", f"--port={port}",
           f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}", "--ServerApp.open_browser=False",
           f"--LabApp.user_settings_dir={tmp_path / 'settings'}", f"--LabApp.workspaces_dir={tmp_path / 'ws'}",
           "--LabApp.extension_manager=readonly"]
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=root, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_until_up(f"{base}/api/status?token={token}", proc, log)
        yield base, token, root
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=15)


def _count(page) -> tuple[int, int]:
    text = page.locator(".widget-html", has_text=re.compile(r"\d+ of \d+ shown")).inner_text()
    shown, total = re.search(r"(\d+) of (\d+) shown", text).groups()
    return int(shown), int(total)


def _shown(page) -> tuple[str, str]:
    """(record id, outcome line) of the prediction the widget shows now."""
    info = page.locator(".widget-html", has_text="thinking:")
    return info.locator("b").first.inner_text().strip(), info.inner_text()


def _run_all(page) -> None:
    page.locator(".lm-MenuBar-item", has_text=re.compile(r"^Run$")).click()
    page.locator(".lm-Menu-item[data-command='runmenu:run-all']").click()


def _run_until_rendered(page, image) -> None:
    """Run all cells and wait for the widget's screenshot, doing what a person does when JupyterLab
    runs nothing: if it asks which kernel to start (it may while the kernel specs load), accept its
    default (the notebook's own kernel) and run again; if the cell is still not queued after a while
    (a run issued while the kernel was still connecting is dropped), run again."""
    deadline = time.monotonic() + 4 * WAIT_MS / 1000  # the kernel imports torch: slow on a loaded 2-core machine
    prompt = page.locator(".jp-Notebook .jp-Cell .jp-InputPrompt").first
    last_run = float("-inf")
    while time.monotonic() < deadline:
        dialog = page.locator(".jp-Dialog")
        if dialog.count() and dialog.first.is_visible():
            dialog.first.locator("button.jp-mod-accept").click()
            last_run = float("-inf")
        elif image.count() and image.first.is_visible():
            return
        elif prompt.inner_text().strip() == "[ ]:" and time.monotonic() - last_run > 15:
            _run_all(page)
            last_run = time.monotonic()
        page.wait_for_timeout(250)
    raise TimeoutError(f"no widget screenshot after {4 * WAIT_MS / 1000:.0f} s")


def test_prediction_browser_in_jupyterlab(lab, records, tmp_path):
    from playwright.sync_api import expect, sync_playwright

    base, token, root = lab
    records_path = tmp_path / "records.jsonl"
    write_jsonl_atomic(records_path, records)
    _notebook(root / "browser.ipynb", records_path)
    misses = [r["id"] for r in records if not record_outcome(r)["hit"]]
    assert 0 < len(misses) < len(records), "the records must hold hits and misses"
    shots = tmp_path / "screenshots"
    shots.mkdir()
    print(f"\nJupyterLab screenshots: {shots}")

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS, headless=True)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.set_default_timeout(WAIT_MS)
        try:
            page.goto(f"{base}/lab/tree/browser.ipynb?token={token}")
            page.locator(".jp-Notebook .jp-Cell").first.wait_for()
            image = page.locator(".jp-OutputArea img.widget-image")
            _run_until_rendered(page, image)
            page.wait_for_function("img => img.complete && img.naturalWidth > 0", arg=image.element_handle())
            assert _count(page) == (len(records), len(records))
            first_src = image.get_attribute("src")
            assert _shown(page)[0] == records[0]["id"]
            page.screenshot(path=shots / "1_rendered.png", full_page=True)

            page.locator("button.jupyter-button", has_text="next ▶").click()
            expect(page.locator(".widget-html", has_text="thinking:").locator("b").first).to_have_text(records[1]["id"])
            page.wait_for_function("([img, old]) => img.src !== old && img.naturalWidth > 0",
                                   arg=[image.element_handle(), first_src])
            page.screenshot(path=shots / "2_next.png", full_page=True)

            page.locator(".widget-toggle-buttons button", has_text=re.compile(r"^miss$")).click()
            expect(page.locator(".widget-html", has_text=re.compile(r"\d+ of \d+ shown"))).to_have_text(
                f"{len(misses)} of {len(records)} shown")
            shown_id = page.locator(".widget-html", has_text="thinking:").locator("b").first
            expect(shown_id).to_have_text(re.compile("^(" + "|".join(map(re.escape, misses)) + ")$"))  # the filter's first
            seen = []
            for _ in misses:
                shown_id, text = _shown(page)
                outcomes = [line for line in text.splitlines() if line.startswith(("HIT", "MISS"))]
                assert outcomes and all(line.startswith("MISS") for line in outcomes), text
                seen.append(shown_id)
                page.locator("button.jupyter-button", has_text="next ▶").click()
                if len(seen) < len(misses):
                    expect(page.locator(".widget-html", has_text="thinking:").locator("b").first).not_to_have_text(
                        shown_id)
            assert sorted(seen) == sorted(misses)
            page.screenshot(path=shots / "3_miss.png", full_page=True)
        except Exception:
            page.screenshot(path=shots / "failed.png", full_page=True)
            (shots / "failed.txt").write_text(page.locator(".jp-Notebook").inner_text())
            raise
        finally:
            browser.close()
    assert all((shots / n).stat().st_size > 10_000 for n in ("1_rendered.png", "2_next.png", "3_miss.png"))
