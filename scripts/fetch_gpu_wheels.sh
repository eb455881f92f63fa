#!/usr/bin/env bash
# Fills wheels/ with the packages that scripts/gpu_check.sh installs, without a package registry, on a CUDA
# machine that has only a base image: Python 3.12 with torch (CUDA 13), transformers >= 5.15, peft and
# accelerate, but no trl, datasets or bitsandbytes. Run it where pip reaches PyPI; wheels/ then goes to the GPU
# machine with the working tree, and the script fails if the two together pass 64 MiB (a copy kept small).
#
#     bash scripts/fetch_gpu_wheels.sh [PYTHON_VERSION]      # default 3.12, the base image's
#
# What travels and why:
# - trl, bitsandbytes and peft at requirements.txt's pins (the image has no trl or bitsandbytes; its peft
#   version is not known in advance, and peft's wheel is small);
# - datasets at requirements-colab.txt's pin, with dill and multiprocess in the ranges it accepts: it works
#   with the older pyarrow (>= 21) and huggingface_hub (< 2) that such images carry, as on Colab.
# - transformers does not: the image's (5.17) is inside pyproject's range (>= 5.15, < 5.25), TRL 1.16 needs
#   >= 4.56.2, and 5.24's wheel (13.5 MB) would not fit beside bitsandbytes' (43 MB). Likewise accelerate,
#   torchvision, pyarrow, pandas, pillow and pyyaml are the image's own.
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
)
LIMIT_BYTES=$((64 * 1024 * 1024))

platforms=()
for tag in manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_24_x86_64 manylinux_2_17_x86_64 \
           manylinux2014_x86_64 manylinux1_x86_64; do
    platforms+=(--platform "$tag")
done

rm -rf wheels.tmp
mkdir wheels.tmp
"$PY" -m pip download --quiet --no-deps --only-binary=:all: --python-version "$PYVER" --implementation cp \
    "${platforms[@]}" -d wheels.tmp "${WHEELS[@]}"
rm -rf wheels
mv wheels.tmp wheels
ls -l wheels

# What travels: the tracked files, the untracked ones git does not ignore, and wheels/.
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
      f"(limit {limit / 2**20:.0f} MiB)")
if total > limit:
    sys.exit("too large to travel: drop a wheel or shrink the tree")
EOF
