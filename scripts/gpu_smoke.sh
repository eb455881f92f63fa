#!/usr/bin/env bash
# GPU smoke check, for a CUDA machine with the project's packages (`make setup` creates .venv; on the device
# image scripts/gpu_check.sh installs them from wheels/, which travels only with `carry: ["wheels"]`, and runs
# this): prints the GPU and the package versions, then runs the `gpu` tests (tiny QLoRA GRPO steps and
# generation on CUDA). Exits non-zero unless every one of them ran and passed: there a skipped or
# missing test means the GPU path was not checked at all. PYTHON picks the interpreter.
#
#     bash scripts/gpu_smoke.sh [extra pytest options]
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ -n "${PYTHON:-}" ]]; then
    PY=$PYTHON
elif [[ -x .venv/bin/python ]]; then
    PY=.venv/bin/python
else
    PY=python3
fi
export HF_HUB_OFFLINE="${HF_HUB_OFFLINE:-1}"  # the tests build their own tiny model; nothing to download

echo "== GPU"
if command -v nvidia-smi >/dev/null 2>&1; then
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
else
    echo "nvidia-smi not found (the tests below still decide)"
fi

echo "== environment ($PY)"
"$PY" -c 'from gui_r1_lite.notebook import show_environment; show_environment()'
if ! "$PY" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)'; then
    echo "FAIL: torch sees no CUDA device; the gpu tests would only be skipped" >&2
    exit 1
fi

echo "== pytest -m gpu"
report="$(mktemp -t gpu_smoke.XXXXXX.xml)"
trap 'rm -f "$report"' EXIT
rc=0
"$PY" -m pytest -m gpu -v -p no:cacheprovider tests/test_gpu.py --junitxml="$report" "$@" || rc=$?
if [[ $rc -eq 5 ]]; then
    echo "FAIL: no gpu test was collected" >&2
    exit 1
fi
if [[ $rc -ne 0 ]]; then
    echo "FAIL: pytest exited with $rc" >&2
    exit "$rc"
fi
# pytest exits 0 when every test is skipped: count what actually ran.
"$PY" - "$report" <<'EOF'
import sys
import xml.etree.ElementTree as ET

root = ET.parse(sys.argv[1]).getroot()
suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
count = {k: sum(int(s.get(k, 0)) for s in suites) for k in ("tests", "skipped", "failures", "errors")}
passed = count["tests"] - count["skipped"] - count["failures"] - count["errors"]
print(f"gpu tests: {passed} passed, {count['skipped']} skipped, {count['failures']} failed, {count['errors']} errors")
if passed == 0 or count["skipped"] or count["failures"] or count["errors"]:
    sys.exit("FAIL: every gpu test must run and pass on a GPU machine")
EOF
echo "OK: GPU smoke check passed"
