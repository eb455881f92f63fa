#!/usr/bin/env bash
# Fills wheels/ with every package the GPU path (scripts/gpu_check.sh) imports that the device image is not
# known to have, for CPython 3.12 on manylinux x86_64, so that the check runs where there is no package registry.
# Run it where pip reaches PyPI.
#
#     bash scripts/fetch_gpu_wheels.sh [PYTHON_VERSION]      # default 3.12, the image's
#
# wheels/ is git-ignored: it travels to a GPU machine ONLY when the run names it to be carried, e.g.
# `carry: ["wheels"]`; without it gpu_check.sh stops at once and says so. The working tree and wheels/ together
# must stay within the 64 MiB a run may carry: this script trims the large wheels (scripts/trim_wheels.py:
# bitsandbytes down to its CUDA 13.0 and CPU libraries, pyarrow without Flight/S3, no test suites, symbol
# tables stripped, LZMA-compressed; RECORD rewritten) and fails if the total passes 64 MiB.
# It writes wheels/manifest.json and the committed copy scripts/gpu_wheels.json (sizes, sha256, requirements;
# tests/test_bench_gpu_recipe_wheels.py checks that they cover every import of the GPU path).
#
# What the image is known to have (and so does not travel): Python 3.12, torch 2.11 (CUDA 13.0), transformers
# 5.17, peft, accelerate, and what pip installs with them (numpy, huggingface_hub, safetensors, tokenizers,
# pyyaml, tqdm, fsspec, jinja2, psutil, httpx, ...). Nothing else on it was ever measured. What travels (traced
# from the GPU path: gui_r1_lite.training/modeling/evaluate/tiny, the benchmark, pytest on tests/test_gpu.py):
# - trl, bitsandbytes and peft at requirements.txt's pins (peft: the image's version is unknown; 0.8 MiB);
# - datasets at requirements-colab.txt's pin (pyarrow >= 21, huggingface_hub < 2 as on such images) and what it
#   needs that the image lacks: pyarrow, pandas (python-dateutil, tzdata), requests (urllib3,
#   charset-normalizer), xxhash, dill and multiprocess in its ranges, fsspec <= 2026.2.0 with the [http] extra's
#   aiohttp (aiohappyeyeballs, aiosignal, attrs, frozenlist, multidict, propcache, yarl);
# - pillow (the screenshots), torchvision 0.26.0 (torch 2.11's; transformers' Qwen2.5-VL video processor
#   refuses to load without it), pytest (pluggy, iniconfig) for the gpu tests.
# - not matplotlib, papermill or jupyter: nothing on the GPU path imports them (only the notebooks and reports).
# - transformers does not travel: the image's 5.17 is inside pyproject's range (>= 5.15, < 5.25).
set -euo pipefail
cd "$(dirname "$0")/.."

PYVER="${1:-3.12}"
PY="${PYTHON:-python3}"
WHEELS=(
    trl==1.16.0
    peft==0.21.2
    bitsandbytes==0.50.2
    datasets==4.7.0
    dill==0.4.0
    multiprocess==0.70.18
    fsspec==2026.2.0
    pyarrow==26.0.1
    pandas==3.1.1
    python-dateutil==4.0.0
    tzdata==2026.6
    requests==2.34.2
    urllib3==2.8.0
    charset-normalizer==3.5.3
    xxhash==4.1.0
    aiohttp==3.14.5
    aiohappyeyeballs==2.7.1
    aiosignal==1.4.0
    attrs==26.1.0
    frozenlist==1.8.0
    multidict==7.2.1
    propcache==0.5.4
    yarl==1.25.1
    pillow==13.0.0
    torchvision==0.26.0
    pytest==9.2.0
    pluggy==1.7.0
    iniconfig==2.3.1
)
LIMIT_BYTES=$((64 * 1024 * 1024))

platforms=()
for tag in manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_24_x86_64 manylinux_2_17_x86_64 \
           manylinux2014_x86_64 manylinux_2_5_x86_64 manylinux1_x86_64; do
    platforms+=(--platform "$tag")
done

rm -rf wheels.tmp
mkdir wheels.tmp
"$PY" -m pip download --quiet --no-deps --only-binary=:all: --python-version "$PYVER" --implementation cp \
    "${platforms[@]}" -d wheels.tmp "${WHEELS[@]}"
"$PY" scripts/trim_wheels.py wheels.tmp wheels.tmp/manifest.json
rm -rf wheels
mv wheels.tmp wheels
cp wheels/manifest.json scripts/gpu_wheels.json

# What travels: the tracked files, the untracked ones git does not ignore, and wheels/ (carried explicitly).
"$PY" - "$LIMIT_BYTES" <<'EOF'
import os
import subprocess
import sys

limit = int(sys.argv[1])
names = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], check=True,
                       capture_output=True, text=True).stdout.split("\0")
tree = sum(os.path.getsize(n) for n in names if n and os.path.isfile(n) and not n.startswith("wheels/"))
wheels = sum(e.stat().st_size for e in os.scandir("wheels"))
total = tree + wheels
print(f"working tree {tree / 2**20:.1f} MiB + wheels {wheels / 2**20:.1f} MiB = {total / 2**20:.1f} MiB "
      f"(limit {limit / 2**20:.0f} MiB); carry it with the run: carry: [\"wheels\"]")
if total > limit:
    sys.exit("too large to travel: drop a wheel or shrink the tree")
EOF
