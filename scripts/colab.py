"""What every notebook's first cell does on Colab once it has cloned the project and runs this file.

It installs what Colab's runtime lacks (scripts/colab_setup.sh, requirements-colab.txt), restarts the
runtime once when that replaced a package the kernel has already loaded (pyarrow: Colab's pandas loads it,
and two versions cannot live in one process), then enters the clone. With GUI_R1_LITE_RUNS set, or Google
Drive mounted, runs/ links there so runs outlive the session. After the restart only the last step is left.
docs/colab.md explains it for a reader; tests/test_colab.py runs it against a venv pinned like Colab's.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

HOME = Path(__file__).resolve().parents[1]  # the clone
MARKER = HOME / ".colab_installed"  # written by colab_setup.sh: import names of the packages it replaced
DRIVE = Path("/content/drive/MyDrive")


def runs_folder() -> str:
    """GUI_R1_LITE_RUNS, else a folder on a mounted Google Drive, else "" (runs stay in the clone and die with it)."""
    return os.environ.get("GUI_R1_LITE_RUNS", str(DRIVE / "gui_r1_lite_runs") if DRIVE.is_dir() else "")


def install() -> list[str]:
    """Run colab_setup.sh into this interpreter; its output is shown, and on failure it says what to do."""
    done = subprocess.run(["bash", "scripts/colab_setup.sh"], capture_output=True, text=True, cwd=HOME,
                          env={**os.environ, "PYTHON": sys.executable, "GUI_R1_LITE_RUNS": runs_folder()})
    if done.returncode:
        raise RuntimeError(f"scripts/colab_setup.sh failed (exit {done.returncode}); fix what it says and run the "
                           f"first cell again:\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
    print((done.stdout + done.stderr)[-2000:])
    return MARKER.read_text().split()


def main() -> None:
    """Install and restart once if needed, then make `import gui_r1_lite` work and enter notebooks/."""
    if not MARKER.exists():
        loaded = [m for m in install() if m.split(".")[0] in sys.modules]
        if loaded:
            print("Installed; restarting the runtime once because it had loaded", ", ".join(loaded),
                  "- then run the notebook from the top again.", flush=True)
            os.kill(os.getpid(), 9)  # Colab restarts a killed kernel by itself
    if str(HOME) not in sys.path:
        sys.path.insert(0, str(HOME))  # the editable install is seen only by a kernel started after it
    os.chdir(HOME / "notebooks")


main()  # run by the first cell with runpy.run_path: a script, not a module to import
