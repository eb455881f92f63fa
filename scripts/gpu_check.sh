#!/usr/bin/env bash
# The GPU check, one command for a CUDA machine, within 8 minutes: installs the wheels that travel in wheels/
# (scripts/fetch_gpu_wheels.sh fills it; no registry needed), checks the installed versions against the
# project's requirements, runs the `gpu` tests (scripts/gpu_smoke.sh) and then benchmarks/bench_gpu_recipe.py
# on each GPU recipe: the 3B architecture with random weights, bf16 and as a 16 GB T4 (fp16, 15 GiB).
# Everything goes to OUT_DIR: gpu_check.log (the whole output), summary.md (the table of the runs) and one
# JSON per benchmark run. Exits non-zero if any part failed, ran out of time or was skipped for want of it.
#
#     bash scripts/gpu_check.sh OUT_DIR
#
# Each part runs under its own time limit (seconds, below; all of them within TOTAL_S); a benchmark stopped
# by its limit still leaves the steps it measured in its JSON. Without a CUDA device it stops at once.
set -uo pipefail
OUT="$(realpath -m "${1:?usage: bash scripts/gpu_check.sh OUT_DIR}")"
cd "$(dirname "$0")/.."

TOTAL_S=480
TESTS_S=110
GRPO_S=190
GRPO_T4_S=90
SFT_S=40
SFT_T4_S=40
START=$SECONDS
export HF_HUB_OFFLINE="${HF_HUB_OFFLINE:-1}" PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false
if [[ -x .venv/bin/python ]]; then
    PY=.venv/bin/python
else
    PY=python3
fi
failed=()

fail() {
    echo "FAIL: $*"
    failed+=("$*")
}

require_cuda() {
    if ! "$PY" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
        echo "FAIL: gpu_check needs a CUDA GPU, and torch ($PY) sees none:" \
             "$("$PY" -c 'import torch; print(torch.__version__, "built for CUDA", torch.version.cuda)' 2>&1 | tail -1)"
        return 1
    fi
}

install_wheels() {
    echo "== wheels"
    if ! compgen -G "wheels/*.whl" >/dev/null; then
        echo "no wheels/: the environment as it is (scripts/fetch_gpu_wheels.sh fills wheels/)"
        return
    fi
    local site="${TMPDIR:-/tmp}/gui_r1_lite_gpu_site"
    rm -rf "$site"
    if "$PY" -m pip install --quiet --no-index --no-deps --no-compile --no-cache-dir --target "$site" wheels/*.whl
    then
        export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
        ls wheels
    else
        fail "wheels: pip could not install wheels/*.whl into $site"
    fi
}

# Every requirement of pyproject.toml (and its quant extra) against what this Python imports.
check_versions() {
    echo "== versions against the project's requirements"
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null || echo "(no nvidia-smi)"
    "$PY" - <<'EOF' || fail "versions: a requirement is not met (above)"
import importlib.metadata as md
import sys
import tomllib

from packaging.requirements import Requirement

project = tomllib.load(open("pyproject.toml", "rb"))["project"]
wanted = [Requirement(r) for r in project["dependencies"] + project["optional-dependencies"]["quant"]]
wanted += [Requirement(r) for r in ("torch", "torchvision", "pytest")]
bad = []
for req in wanted:
    try:
        have = md.version(req.name)
    except md.PackageNotFoundError:
        have = None
    ok = have is not None and req.specifier.contains(have, prereleases=True)
    print(f"{req.name:14} {have or 'missing':>12}  needs {req.specifier or 'any'}{'' if ok else '   <-- NOT MET'}")
    bad += [] if ok else [req.name]
sys.exit(1 if bad else 0)
EOF
}

# name, seconds, command...: the command under a limit of min(seconds, the time left of TOTAL_S)
limited() {
    local name=$1 budget=$2
    shift 2
    local left=$((TOTAL_S - (SECONDS - START)))
    if ((left < 30)); then
        fail "$name: skipped, $left s left of $TOTAL_S"
        return
    fi
    ((budget > left)) && budget=$left
    echo "== $name (at most $budget s)"
    timeout --kill-after=15 "$budget" "$@"
    local rc=$?
    if ((rc == 124 || rc == 137)); then
        fail "$name: stopped after $budget s"
    elif ((rc != 0)); then
        fail "$name: exit code $rc"
    fi
}

main() {
    require_cuda || return 2
    install_wheels
    check_versions
    if ((${#failed[@]})); then
        printf 'failed: %s\n' "${failed[@]}"
        return 1
    fi
    local bench=("$PY" benchmarks/bench_gpu_recipe.py --out "$OUT")
    limited "gpu tests" "$TESTS_S" bash scripts/gpu_smoke.sh
    limited "GRPO 3B" "$GRPO_S" "${bench[@]}" --recipe configs/grpo_qwen2_5_vl_3b_qlora.yaml --steps 2
    limited "GRPO 3B as a T4" "$GRPO_T4_S" "${bench[@]}" --recipe configs/grpo_qwen2_5_vl_3b_qlora.yaml --steps 1 --t4
    limited "SFT 3B" "$SFT_S" "${bench[@]}" --recipe configs/sft_qwen2_5_vl_3b_qlora.yaml --steps 2
    limited "SFT 3B as a T4" "$SFT_T4_S" "${bench[@]}" --recipe configs/sft_qwen2_5_vl_3b_qlora.yaml --steps 2 --t4
    "${bench[@]}" --summarize || fail "summary: not written"
    echo "== gpu_check: $((SECONDS - START)) s"
    if ((${#failed[@]})); then
        printf 'failed: %s\n' "${failed[@]}"
        return 1
    fi
    echo "OK: every GPU check passed"
}

mkdir -p "$OUT"
main 2>&1 | tee "$OUT/gpu_check.log"
exit "${PIPESTATUS[0]}"
