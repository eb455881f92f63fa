"""The main job: run the notebooks in order, headless (papermill), with one profile, and write
`summary.json` (profile, versions, seconds per notebook, and what each notebook reported).

    python -m gui_r1_lite.pipeline [--profile cpu-mini|gpu-3b] [--out DIR] [--from NN]

Each notebook gets the parameters `profile`, `output_dir` (its own folder under `DIR/artifacts`),
`data_dir` and `run_dir`; a notebook reports results by writing `output_dir/result.json`.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from .notebook import versions
from .profiles import get_profile

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = REPO / "notebooks"


class NotebookFailed(RuntimeError):
    pass


def notebook_paths(notebooks_dir: Path = NOTEBOOKS) -> list[Path]:
    paths = sorted(p for p in notebooks_dir.glob("[0-9][0-9]_*.ipynb"))
    if not paths:
        raise FileNotFoundError(f"no notebooks NN_*.ipynb in {notebooks_dir}")
    return paths


def run_notebook(src: Path, dest: Path, parameters: dict, kernel: str = "python3",
                 timeout: int | None = None) -> float:
    """Execute `src` into `dest` with papermill; returns seconds. On failure the executed notebook
    stays at `dest` and `NotebookFailed` names the notebook and the failing cell."""
    import papermill as pm
    from papermill.exceptions import PapermillExecutionError

    dest.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    try:
        pm.execute_notebook(str(src), str(dest), parameters=parameters, kernel_name=kernel,
                            cwd=str(src.parent), progress_bar=False, execution_timeout=timeout)
    except PapermillExecutionError as exc:
        raise NotebookFailed(f"{src.name} failed in cell {exc.cell_index} (execution count {exc.exec_count}): "
                             f"{exc.ename}: {exc.evalue}; executed notebook kept at {dest}") from None
    return time.perf_counter() - t0


#: What each notebook's result.json contributes to the top of summary.json.
HEADLINES = {
    "curation": ("01_data_curation", ("rows", "validation", "steps", "curated")),
    "training": ("04_grpo_training", ("experiment", "start", "end", "global_step", "base_model", "adapter_dir",
                                      "trained_model")),
    "miniature": ("04_grpo_training", ("miniature",)),
    "evaluation": ("05_evaluation", ("policies",)),
}


def headline(results: dict) -> dict:
    """The curated-data report, training metrics at start and end, the miniature experiment and
    the evaluation metrics of every policy, lifted from the notebooks' results."""
    out = {}
    for key, (stem, fields) in HEADLINES.items():
        res = results.get(stem)
        if not res:
            continue
        picked = {f: res[f] for f in fields if f in res}
        if len(fields) == 1:
            if fields[0] in picked:
                out[key] = picked[fields[0]]
        elif picked:
            out[key] = picked
    return out


def run_pipeline(profile: str = "cpu-mini", out: str | Path | None = None, start: int | None = None,
                 notebooks_dir: Path = NOTEBOOKS, data_dir: Path | None = None,
                 extra_parameters: dict | None = None) -> dict:
    prof = get_profile(profile)
    run_dir = Path(out) if out else REPO / "runs" / datetime.now().strftime("%Y%m%d-%H%M%S")
    run_dir = run_dir.resolve()
    data_dir = (data_dir or REPO / "data_samples").resolve()
    summary_path = run_dir / "summary.json"
    summary = json.loads(summary_path.read_text()) if summary_path.exists() else {}
    summary.update({"profile": prof.to_dict(), "versions": versions(), "run_dir": str(run_dir)})
    summary.setdefault("seconds", {})
    summary.setdefault("results", {})
    summary["started"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    for src in notebook_paths(notebooks_dir):
        number = int(src.name[:2])
        if start is not None and number < start:
            continue  # reuse what an earlier run wrote under run_dir
        out_dir = run_dir / "artifacts" / src.stem
        params = {"profile": profile, "output_dir": str(out_dir), "data_dir": str(data_dir),
                  "run_dir": str(run_dir), **(extra_parameters or {})}
        print(f"[pipeline] {src.name} ...", flush=True)
        seconds = run_notebook(src, run_dir / "notebooks" / src.name, params)
        summary["seconds"][src.stem] = round(seconds, 1)
        result = out_dir / "result.json"
        if result.exists():
            summary["results"][src.stem] = json.loads(result.read_text())
            summary.update(headline(summary["results"]))
        summary_path.parent.mkdir(parents=True, exist_ok=True)
        summary_path.write_text(json.dumps(summary, indent=2))  # after every notebook: a crash loses nothing
        print(f"[pipeline] {src.name} done in {seconds:.1f} s", flush=True)
    summary["total_seconds"] = round(sum(summary["seconds"].values()), 1)
    summary_path.write_text(json.dumps(summary, indent=2))
    return summary


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="gui-r1-lite pipeline", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profile", default="cpu-mini", help="cpu-mini (default) or gpu-3b")
    ap.add_argument("--out", default=None, help="run folder (default runs/<timestamp>)")
    ap.add_argument("--from", dest="start", type=int, default=None,
                    help="restart at notebook NN, reusing earlier outputs in --out")
    ap.add_argument("--data-dir", default=None, help="sample data folder (default data_samples/)")
    args = ap.parse_args(argv)
    if args.start is not None and args.out is None:
        ap.error("--from needs --out (the run folder whose earlier outputs are reused)")
    try:
        summary = run_pipeline(args.profile, args.out, args.start,
                               data_dir=Path(args.data_dir) if args.data_dir else None)
    except NotebookFailed as exc:
        print(f"[pipeline] FAILED: {exc}", file=sys.stderr)
        return 1
    print(f"[pipeline] summary: {Path(summary['run_dir']) / 'summary.json'} ({summary['total_seconds']} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
