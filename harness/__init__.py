"""What runs and proves the method, beside the package that holds it (`gui_r1_lite`).

- `pipeline`: the main job, `make run`: the notebooks in order, headless (papermill), and `summary.json`.
- `experiments`: notebook 04's experiment for a profile (the GPU recipe, or the CPU miniature).
- `miniature/`: the method run small on the CPU over seeds: warm start, SFT and SFT → GRPO arms, the blind
  check, intervals, the reference run's figures.
- `departures`: where the miniature departs from the GPU recipe and from GUI-R1, and why.
- `online/`: the closed loop: a policy plays MiniWoB++ pages in headless Chromium.
- `cli`: `gui-r1-lite <command>`, one entry point for the commands of both packages.

It imports `gui_r1_lite`; `gui_r1_lite` never imports it (`tests/test_imports.py`).
"""
