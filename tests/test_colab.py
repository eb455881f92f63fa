"""The Colab door: every notebook opens with the same first cell of at most 6 lines, using pyproject's
address as the badges do; it clones the project and runs scripts/colab.py, which does the rest. The cell
stops with a clear message when the clone or the install fails, restarts once when the install replaced a
loaded package and is a no-op after that; and, in a venv pinned like Colab's runtime, it installs only what
Colab lacks, notebooks 02 and 03 run, the prediction browser works, and the cpu-mini profile loads a LoRA
policy and takes one GRPO step (beside Colab's torchao 0.10)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((REPO / "notebooks").glob("0*.ipynb"))
# Colab's published runtime (2026-08) as far as this code touches it. torch 2.11 is PyPI's CUDA build
# running on the CPU (PyPI has no CPU build of it; Colab's is the cu128 one) and matplotlib 3.10.0 is
# the pin Colab carried through 2025; uv installs the lot from its cache in seconds after the first time.
COLAB_PYTHON = "3.13"
COLAB_RUNTIME = ["torch==2.11.0", "torchvision==0.26.0", "transformers==5.15.0", "peft==0.20.0", "accelerate==1.14.0",
                 "datasets==4.0.0", "pandas==2.2.3", "pillow==11.3.0", "pyarrow==18.1.0", "matplotlib==3.10.0",
                 "ipykernel==6.17.1", "jupyter-client==7.4.9", "notebook==6.5.7", "ipywidgets==7.7.1",
                 # older than peft 0.20 accepts: PEFT raises for every layer it wraps unless load_policy settles it
                 "torchao==0.10.0"]
# The only Colab packages requirements-colab.txt may replace (trl 1.16 needs both newer).
REPLACED = {"datasets", "pyarrow"}


def repository_url() -> str:
    """`[project.urls] Repository` of pyproject.toml: the one place the address is written."""
    return re.search(r'^Repository = "([^"]+)"', (REPO / "pyproject.toml").read_text(), re.M).group(1)


def first_code_cell(path: Path) -> str:
    cells = json.loads(path.read_text())["cells"]
    return "".join(next(c for c in cells if c["cell_type"] == "code")["source"])


def test_every_first_cell_and_badge_uses_the_pyproject_address():
    url = repository_url()
    assert re.fullmatch(r"https://github\.com/[\w.-]+/[\w.-]+", url), url
    for nb in NOTEBOOKS:
        assert f'os.environ.get("GUI_R1_LITE_REPO", "{url}")' in first_code_cell(nb), nb.name
    readme = (REPO / "README.md").read_text()
    badges = re.findall(r"https://colab\.research\.google\.com/github/([^)\s]+)", readme)
    expected = {f"{url.removeprefix('https://github.com/')}/blob/main/notebooks/{nb.name}" for nb in NOTEBOOKS}
    assert set(badges) == expected and len(badges) == len(NOTEBOOKS)


def test_first_cells_are_one_and_the_same_and_short():
    assert len({first_code_cell(nb) for nb in NOTEBOOKS}) == 1
    assert len(first_code_cell(NOTEBOOKS[0]).splitlines()) <= 6
    assert "scripts/colab.py" in first_code_cell(NOTEBOOKS[0])


def run_first_cell(python: str, env: dict, tmp_path: Path, preload: str = "",
                   after: str = "") -> subprocess.CompletedProcess:
    """The first cell run as Colab runs it: in a process where `google.colab` is loaded."""
    script = tmp_path / "first_cell.py"
    script.write_text("import sys, types\nsys.modules['google.colab'] = types.ModuleType('google.colab')\n"
                      f"{preload}\n{first_code_cell(NOTEBOOKS[0])}\n{after}\n")
    return subprocess.run([python, str(script)], capture_output=True, text=True, env=env, timeout=900)


def test_first_cell_stops_with_a_clear_message_when_the_clone_fails(tmp_path):
    env = {**os.environ, "GUI_R1_LITE_REPO": f"file://{tmp_path}/no-such-repository",
           "GUI_R1_LITE_HOME": str(tmp_path / "home")}
    done = run_first_cell(sys.executable, env, tmp_path)
    assert done.returncode == 1
    assert "RuntimeError: git clone file://" in done.stderr and "set GUI_R1_LITE_REPO" in done.stderr
    assert not (tmp_path / "home" / ".colab_installed").exists()


def fake_clone(home: Path, setup_sh: str) -> Path:
    """A clone in `home` holding the real scripts/colab.py and a stand-in colab_setup.sh."""
    (home / "scripts").mkdir(parents=True)
    (home / "notebooks").mkdir()
    shutil.copy2(REPO / "scripts" / "colab.py", home / "scripts" / "colab.py")
    (home / "scripts" / "colab_setup.sh").write_text(setup_sh)
    return home


def test_first_cell_stops_with_the_install_s_output_when_it_fails(tmp_path):
    home = fake_clone(tmp_path / "home", "echo pip says no\nexit 3\n")
    done = run_first_cell(sys.executable, {**os.environ, "GUI_R1_LITE_HOME": str(home)}, tmp_path)
    assert done.returncode == 1
    assert "RuntimeError: scripts/colab_setup.sh failed (exit 3)" in done.stderr
    assert "pip says no" in done.stderr and "run the first cell again" in done.stderr


def test_first_cell_restarts_once_when_a_loaded_package_was_replaced(tmp_path):
    """`json` stands in for pyarrow: replaced by the install while loaded, so the kernel is killed once."""
    home = fake_clone(tmp_path / "home", "echo installed\nprintf 'json\\nnot_loaded\\n' > .colab_installed\n")
    env = {**os.environ, "GUI_R1_LITE_HOME": str(home)}
    done = run_first_cell(sys.executable, env, tmp_path, preload="import json")
    assert done.returncode == -9, done.stdout + done.stderr
    assert "installed" in done.stdout and "restarting the runtime once because it had loaded json -" in done.stdout
    enter = "import os\nprint(os.getcwd(), sys.path[0])"
    again = run_first_cell(sys.executable, env, tmp_path, preload="import json", after=enter)
    assert again.returncode == 0 and again.stdout.split() == [str(home / "notebooks"), str(home)], again.stderr
    (home / ".colab_installed").unlink()  # an install that replaced nothing loaded: no restart
    third = run_first_cell(sys.executable, env, tmp_path, after=enter)
    assert third.returncode == 0 and third.stdout.split()[-2:] == [str(home / "notebooks"), str(home)], third.stderr


def test_nothing_happens_outside_colab(tmp_path):
    code = first_code_cell(NOTEBOOKS[0])
    env = {**os.environ, "GUI_R1_LITE_HOME": str(tmp_path / "home")}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert done.returncode == 0 and done.stdout == "" and not (tmp_path / "home").exists()


def git_snapshot(dest: Path) -> str:
    """The working tree (tracked and untracked, not ignored files) as a one-commit repository to clone."""
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO, check=True,
                           capture_output=True).stdout.decode().split("\0")
    for name in filter(None, files):
        if (REPO / name).is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, dest / name)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    for cmd in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "snapshot"]):
        subprocess.run(git + cmd, cwd=dest, check=True)
    return f"file://{dest}"


def freeze(python: str) -> dict[str, str]:
    out = subprocess.run([python, "-m", "pip", "list", "--format=freeze"], check=True, capture_output=True, text=True)
    return {n.lower().replace("_", "-"): v for n, _, v in (line.partition("==") for line in out.stdout.split())}


def find_python(version: str) -> str:
    """An interpreter of `version` that runs (PATH, then pyenv's folders), else this one."""
    root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    candidates = [shutil.which(f"python{version}"), *sorted(map(str, root.glob(f"versions/{version}*/bin/python{version}")))]
    for candidate in filter(None, candidates):
        if subprocess.run([candidate, "-c", "pass"], capture_output=True).returncode == 0:
            return candidate
    print(f"no Python {version} here; the Colab stand-in uses {sys.version.split()[0]}")
    return sys.executable


def colab_venv(path: Path) -> str:
    """A venv holding Colab's runtime pins (Python 3.13 when the machine has it)."""
    uv = shutil.which("uv", path=str(Path(sys.executable).parent)) or shutil.which("uv")
    if uv is None:
        pytest.skip("uv is missing: `pip install -r requirements.txt` installs it")
    subprocess.run([uv, "venv", "-q", "--seed", "--no-python-downloads", "-p", find_python(COLAB_PYTHON), str(path)],
                   check=True)
    subprocess.run([uv, "pip", "install", "-q", "-p", str(path / "bin" / "python"), *COLAB_RUNTIME], check=True,
                   timeout=1200)
    return str(path / "bin" / "python")


def kernelspec(jupyter_path: Path, python: str) -> str:
    folder = jupyter_path / "kernels" / "colab"
    folder.mkdir(parents=True)
    spec = {"argv": [python, "-m", "ipykernel_launcher", "-f", "{connection_file}"], "display_name": "Colab stand-in",
            "language": "python"}
    (folder / "kernel.json").write_text(json.dumps(spec))
    return "colab"


@pytest.mark.slow
def test_colab_install_keeps_colabs_runtime_and_runs_notebooks_02_and_03(tmp_path):
    """About 2 min 45 s on 2 cores with uv's cache warm (the stand-in venv then takes ~6 s) before the LoRA
    load and the GRPO step were added; with them, 4 min 9 s on 2 cores that were busy with other work. A
    cold cache adds about a minute to download Colab's pins (~3.5 GB, torch's CUDA libraries included)."""
    python = colab_venv(tmp_path / "colab")
    version = subprocess.run([python, "-c", "import platform; print(platform.python_version())"], check=True,
                             capture_output=True, text=True).stdout.strip()
    runtime = freeze(python)
    home = tmp_path / "content" / "gui_r1_lite"
    env = {**os.environ, "GUI_R1_LITE_REPO": git_snapshot(tmp_path / "origin"), "GUI_R1_LITE_HOME": str(home),
           "GUI_R1_LITE_RUNS": str(tmp_path / "drive" / "runs")}

    # Colab's kernel has pandas (and with it pyarrow) loaded: the install replaces pyarrow, so it restarts.
    done = run_first_cell(python, env, tmp_path, preload="import pandas")
    assert done.returncode == -9, done.stdout + done.stderr
    assert "restarting the runtime once" in done.stdout and "pyarrow" in done.stdout
    installed = freeze(python)
    changed = {n for n, v in runtime.items() if installed.get(n) != v}
    assert changed == REPLACED, f"Colab packages replaced: {sorted(changed)}"
    assert {"trl", "bitsandbytes", "gui-r1-lite"} <= set(installed) - set(runtime)
    assert (home / "runs").resolve() == (tmp_path / "drive" / "runs").resolve()

    # After the restart the cell does nothing but enter the clone.
    again = run_first_cell(python, env, tmp_path, preload="import pandas")
    assert again.returncode == 0 and again.stdout == "", again.stdout + again.stderr
    assert freeze(python) == installed

    jupyter = tmp_path / "jupyter"
    kernel = kernelspec(jupyter, python)
    for name in ("02_action_space.ipynb", "03_reward_functions.ipynb"):
        out = tmp_path / f"out_{name}"
        run = subprocess.run([sys.executable, "-m", "papermill", str(home / "notebooks" / name), str(out), "-k", kernel,
                              "--cwd", str(home / "notebooks"), "-p", "output_dir", str(tmp_path / name)],
                             capture_output=True, text=True, env={**env, "JUPYTER_PATH": str(jupyter)}, timeout=900)
        assert run.returncode == 0, run.stderr[-4000:]
        assert json.loads(out.read_text())["metadata"]["language_info"]["version"] == version

    widgets = subprocess.run([python, "-c", WIDGET_CHECK], capture_output=True, text=True, cwd=home, timeout=300,
                             env=env)
    assert widgets.returncode == 0, widgets.stderr[-3000:]
    assert widgets.stdout.split() == ["7.7.1", "ok"]

    trained = subprocess.run([python, "-c", TRAIN_CHECK, str(tmp_path / "train")], capture_output=True, text=True,
                             cwd=home, timeout=600, env=env)
    assert trained.returncode == 0, trained.stderr[-3000:]
    # the last line (TRL prints its logs above it)
    assert trained.stdout.split()[-3:] == [runtime["torchao"], runtime["peft"], "ok"], trained.stdout[-3000:]


# The prediction browser with Colab's ipywidgets 7 on baseline predictions: builds, steps, filters.
WIDGET_CHECK = """
import tempfile
import ipywidgets
from gui_r1_lite import evaluate as E, viz
from gui_r1_lite.metrics import record_outcome
data = "data_samples/test"
out = tempfile.mkdtemp()
E.evaluate(data, "random", out, limit=3, progress=False)
recs = E.read_records(out + "/predictions.jsonl")
b = viz.PredictionBrowser(recs, E.samples_by_id(data, limit=3))
assert b.image.value[:4] == b"\\x89PNG" and b.current["id"] == recs[0]["id"]
b.next.click()
assert b.current["id"] == recs[1]["id"]
b.outcome.value = "miss"
assert [recs[i]["id"] for i in b.filtered] == [r["id"] for r in recs if not record_outcome(r)["hit"]]
print(ipywidgets.__version__, "ok")
"""

# Colab's peft with its torchao 0.10: the cpu-mini profile's policy with a new LoRA adapter (no
# quantisation), then one step of its GRPO recipe on data_samples/ (this loads LoRA again, in TRL's run).
TRAIN_CHECK = """
import sys
from importlib.metadata import version
from peft.tuners.lora import LoraLayer
from gui_r1_lite.modeling import load_policy
from gui_r1_lite.profiles import get_profile
from gui_r1_lite.tiny import build_tiny_model
from gui_r1_lite.training import TrainConfig, read_metrics, train
out = sys.argv[1]
profile = get_profile("cpu-mini")
base = str(build_tiny_model(out + "/base", seed=0))
policy = load_policy(base, profile.quantization, lora=True, device="cpu", min_pixels=profile.min_pixels,
                     max_pixels=profile.max_pixels)
assert any(isinstance(m, LoraLayer) for m in policy.model.modules())
cfg = TrainConfig.from_yaml(profile.grpo_recipe, model=base, max_steps=1, logging_steps=1, save_steps=100,
                            output_dir=out + "/run")
result = train(cfg)
assert result.global_step == 1, result.global_step
assert [r["step"] for r in read_metrics(result.metrics_path) if "loss" in r] == [1]
print(version("torchao"), version("peft"), "ok")
"""
