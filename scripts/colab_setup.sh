#!/usr/bin/env bash
# Install gui_r1_lite on Google Colab (the notebooks' first cell runs this): the pinned Hugging Face
# stack from requirements-colab.txt, keeping Colab's own CUDA build of torch, then the package.
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install -q -r requirements-colab.txt
python -m pip install -q --no-deps -e .
python -c "import gui_r1_lite, torch; print('gui_r1_lite', gui_r1_lite.__version__, '| torch', torch.__version__, '| cuda', torch.cuda.is_available())"
