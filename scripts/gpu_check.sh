#!/usr/bin/env bash
# The GPU check: one command for a CUDA machine that has only the device image (Python 3.12, torch 2.11 for
# CUDA 13, transformers 5.17, peft, accelerate; no trl, datasets or bitsandbytes; no package registry), within
# 540 s (one command may run 600 s):
#   1. prints the image's package inventory (every installed distribution, pip, the GPU) to inventory.txt;
#   2. installs what the GPU path needs and the image lacks from wheels/ (`pip install --no-index --find-links
#      wheels`; pip resolves against what is installed and takes only the missing or too old; an image
#      without pip gets every wheel unpacked into one folder first on PYTHONPATH);
#   3. imports every module the GPU path imports (the list below, traced from it; tests check it) and says
#      which one fails and why;
#   4. runs, each under its own time limit: the `gpu` tests (scripts/gpu_smoke.sh), the build of the random 3B
#      model (built on CUDA, saved), then benchmarks/bench_gpu_recipe.py on each GPU recipe (GRPO and SFT, bf16
#      and as a 16 GB T4: the T4 recipe, capped at a T4's usable memory), each loading the 3B model in 4-bit.
#      A part stopped by its limit is reported, not fatal: its JSON keeps what it measured (written at train
#      start and after each step);
#   5. judges the runs' JSON (benchmarks/gpu_report.py): one FAIL line for each run with a step whose grad_norm
#      is not finite or exactly 0 (or missing), each run out of memory (as a T4: it does not fit), each error.
# Everything goes to OUT_DIR: gpu_check.log, inventory.txt, summary.md and one JSON per benchmark run.
#
#     bash scripts/gpu_check.sh OUT_DIR           # on the GPU machine; with the run: carry: ["wheels"]
#     bash scripts/gpu_check.sh --cpu OUT_DIR     # the CPU rehearsal: the same steps, the tiny model, no CUDA
#
# wheels/ is git-ignored (scripts/fetch_gpu_wheels.sh fills it): it reaches a GPU machine ONLY when the run
# names it to be carried (`carry: ["wheels"]`); without it this script stops after the inventory and says so.
# PYTHON picks the interpreter (default: .venv/bin/python where it exists, else python3); WHEELS_DIR the wheels
# (default: wheels).
# Exits 0 when every part ran or was stopped by its limit and no run failed, 1 when one did, 2 without CUDA
# (not --cpu).
set -uo pipefail
CPU=0
if [[ "${1:-}" == "--cpu" ]]; then
    CPU=1
    shift
fi
OUT="$(realpath -m "${1:?usage: bash scripts/gpu_check.sh [--cpu] OUT_DIR}")"
cd "$(dirname "$0")/.."

# Seconds. The setup (inventory, install, imports) takes ~30-60 s; the parts share what is left of TOTAL_S.
# Each 3B part loads the saved bf16 model in 4-bit (~20-40 s) before its steps.
# Each may be set from the environment (the tests shorten one to see a part stopped).
TOTAL_S=${TOTAL_S:-540}
TESTS_S=${TESTS_S:-90}
BUILD_S=${BUILD_S:-75}
GRPO_S=${GRPO_S:-130}
GRPO_T4_S=${GRPO_T4_S:-90}
SFT_S=${SFT_S:-55}
SFT_T4_S=${SFT_T4_S:-55}
KILL_AFTER_S=10
# What the GPU path imports (gui_r1_lite.training/modeling/evaluate/tiny, the benchmark, pytest on
# tests/test_gpu.py), top-level and the submodules that load native libraries; not matplotlib, papermill or
# jupyter (only notebooks and reports import them).
IMPORTS=(torch torchvision transformers trl peft accelerate datasets bitsandbytes PIL pandas pyarrow
         pyarrow.parquet pyarrow.compute yaml tqdm requests xxhash multiprocess dill fsspec aiohttp huggingface_hub
         safetensors tokenizers numpy pytest gui_r1_lite.training gui_r1_lite.modeling gui_r1_lite.evaluate
         gui_r1_lite.tiny)
# torchvision and pytest beside pyproject's requirements (matplotlib left out: not on this path)
EXTRA_NEEDS=(torchvision pytest)

START=$SECONDS
export WHEELS_DIR="${WHEELS_DIR:-wheels}"
export HF_HUB_OFFLINE="${HF_HUB_OFFLINE:-1}" PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false
export PIP_BREAK_SYSTEM_PACKAGES=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1
if [[ -n "${PYTHON:-}" ]]; then
    PY=$PYTHON
elif [[ -x .venv/bin/python ]]; then
    PY=.venv/bin/python
else
    PY=python3
fi
export PYTHON=$PY
failed=()
stopped=()

fail() {
    echo "FAIL: $*"
    failed+=("$*")
}

elapsed() {
    echo "$((SECONDS - START))"
}

require_cuda() {
    if ! "$PY" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
        echo "FAIL: gpu_check needs a CUDA GPU, and torch ($PY) sees none:" \
             "$("$PY" -c 'import torch; print(torch.__version__, "built for CUDA", torch.version.cuda)' 2>&1 | tail -1)"
        return 1
    fi
}

inventory() {
    echo "== inventory of this image ($PY)"
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null || echo "(no nvidia-smi)"
    "$PY" - "$OUT/inventory.txt" <<'EOF'
import importlib.metadata as md
import platform
import subprocess
import sys

pip = subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True, text=True)
lines = [f"python {platform.python_version()} ({sys.executable})",
         f"pip: {pip.stdout.strip() or 'missing: ' + pip.stderr.strip()[-200:]}"]
dists = sorted({(d.metadata["Name"] or "?").lower(): d.version for d in md.distributions()}.items())
lines += [f"{name}=={version}" for name, version in dists]
open(sys.argv[1], "w").write("\n".join(lines) + "\n")
print("\n".join(lines[:2]))
print(f"{len(dists)} distributions: " + ", ".join(f"{n} {v}" for n, v in dists))
EOF
}

# wheels/ as fetched: every file of its manifest, with its sha256
check_wheels() {
    echo "== $WHEELS_DIR/"
    "$PY" - <<'EOF'
import hashlib
import json
import os
import sys
from pathlib import Path

folder = Path(os.environ["WHEELS_DIR"])
manifest = folder / "manifest.json"
if not manifest.is_file():
    sys.exit(f'{folder}/ is missing: run scripts/fetch_gpu_wheels.sh where pip reaches PyPI, and carry it with the '
             'run (carry: ["wheels"]; it is git-ignored, so it does not travel with the tree)')
try:
    import lzma  # noqa: F401 - the trimmed wheels are LZMA-compressed zips (scripts/trim_wheels.py)
except ImportError:
    sys.exit(f"{sys.executable} has no lzma module: it cannot read the trimmed wheels (scripts/trim_wheels.py)")
wheels = json.loads(manifest.read_text())["wheels"]
bad = [w["file"] for w in wheels.values() if not (folder / w["file"]).is_file()
       or hashlib.sha256((folder / w["file"]).read_bytes()).hexdigest() != w["sha256"]]
if bad:
    sys.exit(f"{folder}/: missing or changed since scripts/fetch_gpu_wheels.sh: {bad}")
print(f"{len(wheels)} wheels, {sum(w['bytes'] for w in wheels.values()) / 2**20:.1f} MiB, as in the manifest")
EOF
}

# pyproject's requirements (its quant extra, not matplotlib) and EXTRA_NEEDS, installed from wheels/ where the
# image lacks them or has them too old; pip resolves their dependencies against the image and wheels/.
install_needs() {
    echo "== install what is missing from wheels/"
    local needs
    mapfile -t needs < <("$PY" - "${EXTRA_NEEDS[@]}" <<'EOF'
import importlib.metadata as md
import sys
import tomllib

from packaging.requirements import Requirement

project = tomllib.load(open("pyproject.toml", "rb"))["project"]
wanted = [Requirement(r) for r in project["dependencies"] + project["optional-dependencies"]["quant"]]
wanted = [r for r in wanted if r.name != "matplotlib"] + [Requirement(r) for r in sys.argv[1:]]
for req in wanted:
    try:
        have = md.version(req.name)
    except md.PackageNotFoundError:
        have = None
    ok = have is not None and req.specifier.contains(have, prereleases=True)
    print(f"{req.name:14} {have or 'missing':>12}  needs {req.specifier or 'any'}{'' if ok else '  <- from wheels/'}",
          file=sys.stderr)
    print(str(req))
EOF
    )
    if ((${#needs[@]} == 0)); then
        fail "install: could not read the requirements (pyproject.toml, packaging)"
        return
    fi
    local t0=$SECONDS
    if ! "$PY" -m pip --version >/dev/null 2>&1; then
        unpack_wheels
        return
    fi
    if timeout 180 "$PY" -m pip install --no-index --find-links "$WHEELS_DIR" --no-compile --progress-bar off "${needs[@]}" \
        2>&1 | grep -v "^Requirement already satisfied"; [[ ${PIPESTATUS[0]} -eq 0 ]]; then
        echo "installed in $((SECONDS - t0)) s"
    else
        fail "install: pip could not install from wheels/ (above)"
    fi
    timeout 60 "$PY" -m pip check 2>&1 | tail -5 || true
}

# Without pip: every wheel unpacked into one folder put first on PYTHONPATH (they were fetched to work together;
# what they shadow of the image, such as its fsspec or peft, is what pip would have replaced).
unpack_wheels() {
    local site="${TMPDIR:-/tmp}/gui_r1_lite_gpu_site"
    echo "no pip for $PY: unpacking every wheel of $WHEELS_DIR into $site (first on PYTHONPATH)"
    rm -rf "$site"
    if "$PY" - "$site" <<'EOF'
import os
import sys
import zipfile
from pathlib import Path

for wheel in sorted(Path(os.environ["WHEELS_DIR"]).glob("*.whl")):
    with zipfile.ZipFile(wheel) as z:
        z.extractall(sys.argv[1])
EOF
    then
        export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
        echo "unpacked in $((SECONDS - t0)) s"
    else
        fail "install: could not unpack $WHEELS_DIR into $site"
    fi
}

check_imports() {
    echo "== imports of the GPU path"
    timeout 150 "$PY" - "$CPU" "${IMPORTS[@]}" <<'EOF' || fail "imports: a module of the GPU path does not import (above)"
import importlib
import sys
import time

sys.path.insert(0, ".")
cpu, modules = sys.argv[1] == "1", sys.argv[2:]
bad = []
for name in modules:
    t0 = time.perf_counter()
    try:
        module = importlib.import_module(name)
        print(f"ok   {name:22} {getattr(module, '__version__', ''):14} {time.perf_counter() - t0:5.1f} s")
    except BaseException as exc:  # noqa: BLE001 - every failing import is reported, not only the first
        bad.append(name)
        print(f"FAIL {name:22} {type(exc).__name__}: {str(exc).strip().splitlines()[-1:] or ''}")
if "bitsandbytes" not in bad:
    from bitsandbytes import cextension

    lib = type(cextension.lib).__name__
    print(f"bitsandbytes native library: {lib} {getattr(cextension, 'BNB_BACKEND', '')}")
    if not cpu and lib != "CudaBNBNativeLibrary":  # wheels/ keeps libbitsandbytes_cuda130.so: torch's CUDA 13.0
        bad.append(f"bitsandbytes (no CUDA library loaded: {lib})")
sys.exit(f"not importable: {', '.join(bad)}" if bad else 0)
EOF
}

# name, seconds, command...: the command under a limit of min(seconds, the time left of TOTAL_S)
limited() {
    local name=$1 budget=$2
    shift 2
    local left=$((TOTAL_S - $(elapsed)))
    if ((left < 20)); then
        stopped+=("$name: not started, $left s left of $TOTAL_S")
        echo "STOPPED: $name: not started, $left s left of $TOTAL_S"
        return 1
    fi
    ((budget > left)) && budget=$left
    echo "== $name (at most $budget s; at $(elapsed) s of $TOTAL_S)"
    local t0=$SECONDS
    timeout --kill-after="$KILL_AFTER_S" "$budget" "$@"
    local rc=$?
    if ((rc == 124 || rc == 137)); then
        stopped+=("$name: stopped by its limit after $((SECONDS - t0)) s (its JSON keeps what it measured)")
        echo "STOPPED: $name after $((SECONDS - t0)) s"
        return 1
    elif ((rc != 0)); then
        fail "$name: exit code $rc after $((SECONDS - t0)) s"
        return 1
    fi
    echo "done: $name in $((SECONDS - t0)) s"
}

report() {
    echo "== gpu_check: $(elapsed) s of $TOTAL_S"
    ((${#stopped[@]})) && printf 'stopped: %s\n' "${stopped[@]}"
    if ((${#failed[@]})); then
        printf 'failed: %s\n' "${failed[@]}"
        return 1
    fi
    echo "OK: every part ran$( ((${#stopped[@]})) && echo ' or was stopped by its limit (above)')"
}

main() {
    ((CPU)) || require_cuda || return 2
    inventory
    check_wheels || { fail "wheels/ (above)"; report; return 1; }
    install_needs
    ((${#failed[@]})) || check_imports
    if ((${#failed[@]})); then
        report
        return 1
    fi
    local bench=("$PY" benchmarks/bench_gpu_recipe.py --out "$OUT")
    local grpo=configs/grpo_qwen2_5_vl_3b_qlora.yaml grpo_t4=configs/grpo_qwen2_5_vl_3b_t4.yaml
    local sft=configs/sft_qwen2_5_vl_3b_qlora.yaml
    if ((CPU)); then
        # the gpu tests need CUDA; here: that pytest and every test module of the GPU path import
        limited "gpu tests (collected)" "$TESTS_S" "$PY" -m pytest -q --collect-only -p no:cacheprovider tests/test_gpu.py
        echo "3B build and the T4 runs: skipped on the CPU (need CUDA); the runs use the tiny stand-in"
        limited "GRPO (tiny, CPU)" "$GRPO_S" "${bench[@]}" --tiny --recipe "$grpo" --steps 2
        limited "SFT (tiny, CPU)" "$SFT_S" "${bench[@]}" --tiny --recipe "$sft" --steps 2
    else
        limited "gpu tests" "$TESTS_S" bash scripts/gpu_smoke.sh
        if limited "3B build (random weights, bf16, saved)" "$BUILD_S" "${bench[@]}" --build-only; then
            limited "GRPO 3B" "$GRPO_S" "${bench[@]}" --recipe "$grpo" --steps 2
            limited "GRPO 3B as a T4 (the T4 recipe)" "$GRPO_T4_S" "${bench[@]}" --recipe "$grpo_t4" --steps 1 --t4
            limited "SFT 3B" "$SFT_S" "${bench[@]}" --recipe "$sft" --steps 2
            limited "SFT 3B as a T4" "$SFT_T4_S" "${bench[@]}" --recipe "$sft" --steps 2 --t4
        else
            stopped+=("the 3B runs: not started (no 3B model built)")
        fi
    fi
    "${bench[@]}" --summarize || fail "summary: not written"
    echo "== benchmark verdict"
    "$PY" benchmarks/gpu_report.py "$OUT" || fail "benchmark verdict: a run failed (its FAIL line above)"
    report
}

mkdir -p "$OUT"
main 2>&1 | tee "$OUT/gpu_check.log"
exit "${PIPESTATUS[0]}"
