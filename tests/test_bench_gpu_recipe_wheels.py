"""What a CPU can check of scripts/gpu_check.sh and scripts/fetch_gpu_wheels.sh: that every package the GPU path
imports is on the device image or travels in wheels/, that the check imports what the path imports, that the
wheels are the tested versions, trimmed with a valid RECORD and within the carry limit, and how the check stops
without CUDA or without its wheels. The benchmark itself is tests/test_bench_gpu_recipe.py."""

from __future__ import annotations

import importlib.metadata as md
import importlib.util
import json
import os
import re
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from tests._gpu_recipe_helpers import GRPO, ROOT, SFT, _cuda, _load

# `tiny_results` (the benchmark's --tiny run of every GPU recipe, with the modules it loaded) is in conftest.py.


@pytest.mark.skipif(_cuda(), reason="checks what happens without CUDA")
def test_gpu_check_without_cuda_stops_at_once(tmp_path):
    t0 = time.monotonic()
    proc = subprocess.run(["bash", str(ROOT / "scripts" / "gpu_check.sh"), str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert "needs a CUDA GPU" in proc.stdout and "sees none" in proc.stdout
    assert "== wheels" not in proc.stdout  # nothing else ran
    assert (tmp_path / "out" / "gpu_check.log").read_text() == proc.stdout
    assert time.monotonic() - t0 < 60


@pytest.mark.parametrize("wheels", ["absent", "changed"])
def test_gpu_check_without_its_wheels_stops_after_the_inventory(tmp_path, wheels):
    folder = tmp_path / "wheels"
    if wheels == "changed":  # one wheel of the manifest, but not the fetched one
        folder.mkdir()
        entry = {"file": "demo-1.0-py3-none-any.whl", "bytes": 1, "sha256": "0" * 64}
        (folder / "manifest.json").write_text(json.dumps({"wheels": {"demo": entry}}))
        (folder / entry["file"]).write_bytes(b"x")
    proc = subprocess.run(["bash", str(ROOT / "scripts" / "gpu_check.sh"), "--cpu", str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "WHEELS_DIR": str(folder), "PYTHON": sys.executable})
    assert proc.returncode == 1, proc.stdout[-2000:]
    assert "== inventory" in proc.stdout and "== install" not in proc.stdout
    if wheels == "absent":
        assert 'carry: ["wheels"]' in proc.stdout
    else:
        assert "missing or changed since scripts/fetch_gpu_wheels.sh: ['demo-1.0-py3-none-any.whl']" in proc.stdout
    inventory = (tmp_path / "out" / "inventory.txt").read_text().splitlines()
    assert inventory[0].startswith("python ") and f"torch=={md.version('torch')}" in inventory


@pytest.mark.slow  # the whole check in CPU mode: imports, its GPU tests, a GRPO and an SFT run
def test_gpu_check_on_the_cpu_reports_a_stopped_part_and_goes_on(tmp_path):
    # the check's CPU mode in this environment (everything installed: an empty wheel manifest), GRPO given too
    # little time: it is stopped by its limit, its JSON stays, SFT still runs, and the check passes
    (tmp_path / "wheels").mkdir()
    (tmp_path / "wheels" / "manifest.json").write_text(json.dumps({"wheels": {}}))
    # datasets 4.7 (the image's, from wheels/) imports aiohttp; this environment's datasets does not, and has none
    stub = tmp_path / "stub"
    if importlib.util.find_spec("aiohttp") is None:
        (stub / "aiohttp").mkdir(parents=True)
        (stub / "aiohttp" / "__init__.py").write_text("")
    out = tmp_path / "out"
    env = {**os.environ, "WHEELS_DIR": str(tmp_path / "wheels"), "PYTHON": sys.executable, "GRPO_S": "6",
           "OMP_NUM_THREADS": "1", "PYTHONPATH": str(stub)}
    proc = subprocess.run(["bash", str(ROOT / "scripts" / "gpu_check.sh"), "--cpu", str(out)], capture_output=True,
                          text=True, timeout=400, env=env)
    log = proc.stdout
    assert proc.returncode == 0, log[-3000:]
    assert log.index("== inventory") < log.index("== install") < log.index("== imports") < log.index("== gpu tests")
    assert "STOPPED: GRPO (tiny, CPU) after" in log and "done: SFT (tiny, CPU)" in log
    assert "stopped: GRPO (tiny, CPU): stopped by its limit" in log and "OK: every part ran or was stopped" in log
    assert "== benchmark verdict" in log and "FAIL" not in log  # the verdict judged the runs and found no fault
    from gui_r1_lite.runio import read_json

    assert read_json(out / f"{SFT.stem}.json")["status"] == "ok"
    rows = (out / "summary.md").read_text()
    assert f"| {SFT.stem} | ok |" in rows
    # 6 s may stop GRPO while Python still imports, before its run writes anything; once written, its JSON says
    # it did not finish (the two tests above pin down when it is written)
    if (out / f"{GRPO.stem}.json").exists():
        assert read_json(out / f"{GRPO.stem}.json")["status"] in ("loading", "running")
        assert f"| {GRPO.stem} | stopped " in rows


def _pins(path: Path) -> dict[str, str]:
    return dict(re.findall(r"^\s*([A-Za-z0-9_.-]+)==([^\s#]+)", path.read_text(), flags=re.M))


def test_travelling_wheels_are_the_tested_versions():
    from packaging.requirements import Requirement

    wheels = _pins(ROOT / "scripts" / "fetch_gpu_wheels.sh")
    tested, colab = _pins(ROOT / "requirements.txt"), _pins(ROOT / "requirements-colab.txt")
    for name in ("trl", "peft", "bitsandbytes"):
        assert wheels[name] == tested[name], name
    assert wheels["datasets"] == colab["datasets"]
    # transformers does not travel: the base image's 5.17 must stay inside the project's range
    assert "transformers" not in wheels
    pyproject = (ROOT / "pyproject.toml").read_text()
    spec = Requirement(re.search(r'"(transformers[^"]*)"', pyproject).group(1)).specifier
    assert spec.contains("5.17.0") and spec.contains(tested["transformers"])


@pytest.mark.skipif(not any((ROOT / "wheels").glob("*.whl")), reason="wheels/ not fetched (scripts/fetch_gpu_wheels.sh)")
def test_fetched_wheels_install_offline_for_python_3_12(tmp_path):
    # what gpu_check.sh does on the GPU machine, as a dry run for its Python
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--no-index", "--no-deps",
                           "--only-binary=:all:", "--python-version", "3.12", "--target", str(tmp_path / "site"),
                           *map(str, sorted((ROOT / "wheels").glob("*.whl")))],
                          capture_output=True, text=True, timeout=300, env={**os.environ, "PIP_FIND_LINKS": ""})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert all(name in proc.stdout for name in ("trl-", "bitsandbytes-", "datasets-", "peft-"))
    # the trimmed wheels are valid (RECORD matches every file) and are the manifest's
    trim, manifest = _trim_module(), {w["file"]: w for w in _manifest().values()}
    for wheel in sorted((ROOT / "wheels").glob("*.whl")):
        assert trim.check_record(wheel) == [], wheel.name
        assert wheel.stat().st_size == manifest[wheel.name]["bytes"], wheel.name
    bnb = next((ROOT / "wheels").glob("bitsandbytes-*.whl"))
    libs = sorted(n for n in zipfile.ZipFile(bnb).namelist() if n.endswith(".so"))
    assert libs == ["bitsandbytes/libbitsandbytes_cpu.so", "bitsandbytes/libbitsandbytes_cuda130.so"]


# --- what travels to the device image, and what the check imports -------------------------------------------

MANIFEST = ROOT / "scripts" / "gpu_wheels.json"
#: what the device image is known to have: Python 3.12 with torch 2.11 (CUDA 13), transformers 5.17, peft and
#: accelerate, and what pip installs with them there (the CPU rehearsal's `pip list`, docs/gpu.md)
IMAGE = ("torch", "transformers", "peft", "accelerate", "pip")
IMAGE_KNOWN = """
    accelerate annotated-doc annotated-types anyio certifi click cuda-bindings cuda-pathfinder cuda-toolkit filelock
    fsspec h11 hf-xet httpcore httpx huggingface_hub idna Jinja2 markdown-it-py MarkupSafe mdurl mpmath networkx
    numpy nvidia-cublas nvidia-cuda-cupti nvidia-cuda-nvrtc nvidia-cuda-runtime nvidia-cudnn-cu13 nvidia-cufft
    nvidia-cufile nvidia-curand nvidia-cusolver nvidia-cusparse nvidia-cusparselt-cu13 nvidia-nccl-cu13
    nvidia-nvjitlink nvidia-nvshmem-cu13 nvidia-nvtx packaging peft pip psutil pydantic pydantic_core Pygments
    PyYAML regex rich safetensors setuptools shellingham sympy tokenizers torch tqdm transformers triton typer
    typing_extensions typing-inspection"""
#: imported by the GPU path here only because this environment has them (a library tries, and goes on without
#: them): the CPU rehearsal on the image's packages runs the path without any of them (docs/gpu.md). trio (with
#: its attrs, sniffio, outcome, sortedcontainers) is what httpx2 here tries.
OPTIONAL = {"attrs", "sniffio", "papermill", "matplotlib", "hypothesis", "playwright", "ipykernel", "jupyter-client", "jupyter-core",
            "nbformat", "nbclient", "tornado", "pyzmq", "traitlets", "trio", "outcome", "sortedcontainers",
            "pysocks", "truststore", "cloudpickle", "tenacity", "lark", "six", "defusedxml",
            "entrypoints", "fastjsonschema", "jsonschema", "jsonschema-specifications", "referencing", "rpds-py",
            "arrow", "fqdn", "isoduration", "jsonpointer", "rfc3339-validator", "rfc3986-validator",
            "rfc3987-syntax", "uri-template", "webcolors", "platformdirs", "httpx2", "httpcore2", "gui-r1-lite",
            "setuptools", "ruff", "uv"}


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _closure(roots, requires) -> set[str]:
    """`roots` and everything they require (for Python 3.12 on Linux), `requires(name)` giving a distribution's
    Requires-Dist lines; extras asked for (`fsspec[http]`) are followed."""
    from packaging.requirements import Requirement

    seen, todo = set(), [(_norm(r), frozenset()) for r in roots]
    while todo:
        name, extras = todo.pop()
        if (name, extras) in seen:
            continue
        seen.add((name, extras))
        for line in requires(name) or []:
            req = Requirement(line)
            env = {"python_version": "3.12", "python_full_version": "3.12.0", "sys_platform": "linux",
                   "platform_system": "Linux", "platform_machine": "x86_64"}
            if req.marker is None or any(req.marker.evaluate({**env, "extra": e}) for e in extras | {""}):
                todo.append((_norm(req.name), frozenset(req.extras)))
    return {name for name, _ in seen}


def _installed_requires(name: str) -> list[str]:
    try:
        return md.requires(name) or []
    except md.PackageNotFoundError:
        return []


def _image() -> set[str]:
    """The image's known distributions: the rehearsal's list, and (for this environment's newer versions of the
    same roots) what they require here."""
    return {_norm(n) for n in IMAGE_KNOWN.split()} | _closure(IMAGE, _installed_requires)


def _manifest() -> dict:
    return json.loads(MANIFEST.read_text())["wheels"]


def _bash_array(script: Path, name: str) -> list[str]:
    body = re.search(rf"^{name}=\(([^)]*)\)", script.read_text(), flags=re.M)
    assert body, f"{script}: no array {name}"
    return [w for line in body.group(1).splitlines() for w in line.split("#")[0].split()]


def _distributions(modules) -> set[str]:
    mapping = md.packages_distributions()
    return {_norm(d) for m in modules for d in mapping.get(m.split(".")[0], [])}


@pytest.mark.slow  # tiny_results: the benchmark's run of every GPU recipe, in a process of its own
def test_every_import_of_the_gpu_path_is_on_the_image_or_travels(tiny_results):
    _, _, loaded = tiny_results
    used = _distributions(loaded) - OPTIONAL
    # the tiny run really went through the path: the packages that had to travel were loaded
    assert {"trl", "datasets", "bitsandbytes", "pyarrow", "pandas", "pillow", "torchvision", "pytest",
            "requests", "xxhash"} <= used
    missing = used - _image() - set(_manifest())
    assert not missing, f"imported by the GPU path, neither on the image nor in wheels/: {sorted(missing)}"


@pytest.mark.slow  # tiny_results: the benchmark's run of every GPU recipe, in a process of its own
def test_the_check_imports_what_the_path_imports(tiny_results):
    _, _, loaded = tiny_results
    checked = _bash_array(ROOT / "scripts" / "gpu_check.sh", "IMPORTS")
    covered = _closure(_distributions(checked), _installed_requires)
    uncovered = _distributions(loaded) - OPTIONAL - covered
    assert not uncovered, f"the GPU path imports these, gpu_check.sh's IMPORTS does not: {sorted(uncovered)}"
    # and it does not require what the path never imports
    assert not {"matplotlib", "papermill"} & _distributions(checked)
    assert not ({"matplotlib", "papermill"} & _distributions(loaded))


def test_what_travels_needs_nothing_but_the_image_and_itself():
    wheels = _manifest()
    needed = _closure(wheels, lambda name: wheels[name]["requires"] if name in wheels else [])
    known = _image()
    missing = {n for n in needed - set(wheels) if n not in known}
    assert not missing, f"wheels/ needs these, and neither the image nor wheels/ has them: {sorted(missing)}"
    # what the image has does not travel, except peft (its version there is unknown)
    assert not (set(wheels) - {"peft"}) & {_norm(n) for n in IMAGE}


def test_manifest_is_what_fetch_gpu_wheels_pins_and_fits_the_carry_limit():
    wheels = _manifest()
    pins = {_norm(n): v for n, v in _pins(ROOT / "scripts" / "fetch_gpu_wheels.sh").items()}
    assert {n: w["version"] for n, w in wheels.items()} == pins
    tested = {_norm(n): v for n, v in _pins(ROOT / "requirements.txt").items()}
    for name in ("pillow", "pandas", "pyarrow"):
        assert pins[name] == tested[name], name
    names = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                           check=True, capture_output=True, text=True).stdout.split("\0")
    tree = sum((ROOT / n).stat().st_size for n in names if n and (ROOT / n).is_file() and not n.startswith("wheels/"))
    total = tree + sum(w["bytes"] for w in wheels.values())
    assert total <= 64 * 2**20, f"tree {tree / 2**20:.1f} MiB + wheels: {total / 2**20:.1f} MiB > 64 MiB"
    # bitsandbytes keeps the image's CUDA 13.0 library and the CPU one, nothing else native
    assert wheels["bitsandbytes"]["trimmed"]["bytes_before"] > 4 * wheels["bitsandbytes"]["bytes"]


def test_docs_and_scripts_say_wheels_must_be_carried():
    for path in ("scripts/gpu_check.sh", "scripts/fetch_gpu_wheels.sh", "scripts/gpu_smoke.sh", "docs/gpu.md"):
        assert 'carry: ["wheels"]' in (ROOT / path).read_text(), path


def _wheel(path: Path, files: dict[str, bytes]) -> Path:
    trim = _trim_module()
    record = "".join(f"{n},{trim._hash(d)},{len(d)}\n" for n, d in files.items()) + "demo-1.0.dist-info/RECORD,,\n"
    with zipfile.ZipFile(path, "w") as z:
        for name, data in files.items():
            z.writestr(name, data)
        z.writestr("demo-1.0.dist-info/RECORD", record)
    return path


def _trim_module():
    return _load(ROOT / "scripts" / "trim_wheels.py")


def test_trimmed_wheel_has_a_valid_record_and_installs(tmp_path):
    trim = _trim_module()
    files = {"demo/__init__.py": b"VALUE = 1\n", "demo/libfoo_cuda118.so": b"x" * 5000,
             "demo/libfoo_cuda130.so": b"y" * 100, "demo/tests/test_a.py": b"assert True\n",
             "demo-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n",
             "demo-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: t\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    wheel = _wheel(tmp_path / "demo-1.0-py3-none-any.whl", files)
    assert trim.check_record(wheel) == []
    with zipfile.ZipFile(wheel, "a") as z:  # a file RECORD does not know: check_record must see it
        z.writestr("demo/extra.py", b"")
    assert trim.check_record(wheel) == ["demo/extra.py"]
    wheel = _wheel(tmp_path / "demo-1.0-py3-none-any.whl", files)
    result = trim.trim_wheel(wheel, ("demo/libfoo_cuda11*.so", "demo/tests/*"))
    assert sorted(result["dropped"]) == ["demo/libfoo_cuda118.so", "demo/tests/test_a.py"]
    assert trim.check_record(wheel) == []
    with zipfile.ZipFile(wheel) as z:
        assert "demo/libfoo_cuda130.so" in z.namelist() and "demo/tests/test_a.py" not in z.namelist()
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "--no-index", "--no-deps", "--target",
                           str(tmp_path / "site"), str(wheel)], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PIP_FIND_LINKS": ""})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert (tmp_path / "site" / "demo" / "libfoo_cuda130.so").read_bytes() == b"y" * 100
