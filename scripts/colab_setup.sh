#!/usr/bin/env bash
# Install gui_r1_lite beside Colab's own runtime (the notebooks' first cell runs this): only what
# requirements-colab.txt adds, then the package. Writes .colab_installed with the import names of the
# packages whose Colab version was replaced (a kernel that loaded one must restart once); with
# GUI_R1_LITE_RUNS set, runs/ becomes a link to that folder (e.g. on Google Drive) so runs outlive the session.
#
#   PYTHON=python3 bash scripts/colab_setup.sh     # the interpreter to install into (default: python)
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python}"
before="$(mktemp)"
trap 'rm -f "$before"' EXIT
"$PY" -m pip list --format=freeze > "$before"
"$PY" -m pip install -q -r requirements-colab.txt
"$PY" -m pip install -q --no-deps -e .
"$PY" - "$before" > .colab_installed.tmp <<'PYEOF'
import sys
from importlib.metadata import PackageNotFoundError, packages_distributions, version


def norm(name):
    return name.lower().replace("_", "-").replace(".", "-")


old = {norm(n): v for n, _, v in (line.strip().partition("==") for line in open(sys.argv[1])) if v}
replaced = {}
for name, was in sorted(old.items()):
    try:
        now = version(name)
    except PackageNotFoundError:  # removed by the install
        continue
    if now != was:
        replaced[name] = (was, now)
        print(f"replaced {name} {was} -> {now}", file=sys.stderr)
for module, dists in sorted(packages_distributions().items()):
    if any(norm(d) in replaced for d in dists) and module.isidentifier():
        print(module)
PYEOF
mv .colab_installed.tmp .colab_installed
if [[ -n "${GUI_R1_LITE_RUNS:-}" && ! -e runs ]]; then
  mkdir -p "$GUI_R1_LITE_RUNS"
  ln -s "$GUI_R1_LITE_RUNS" runs
  echo "runs/ -> $GUI_R1_LITE_RUNS"
fi
"$PY" -c "import gui_r1_lite, torch; print('gui_r1_lite', gui_r1_lite.__version__, '| torch', torch.__version__, '| cuda', torch.cuda.is_available())"
