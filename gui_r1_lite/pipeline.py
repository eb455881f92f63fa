"""The main job: run the notebooks in order, headless (papermill), with one profile, and write
`summary.json` (profile, versions, seconds per notebook, and what each notebook reported).

    python -m gui_r1_lite.pipeline [--profile cpu-mini|gpu-3b] [--out DIR] [--from NN]

Each notebook gets the parameters `profile`, `output_dir` (its own folder under `DIR/artifacts`),
`data_dir` and `run_dir`; a notebook reports results by writing `output_dir/result.json`.
"""

from __future__ import annotations

import argparse
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from .notebook import versions
from .profiles import get_profile
from .runio import read_json, write_json_atomic

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = REPO / "notebooks"


class NotebookFailed(RuntimeError):
    """A notebook raised; the message names it and the failing cell."""


def notebook_paths(notebooks_dir: Path = NOTEBOOKS) -> list[Path]:
    """The `NN_*.ipynb` notebooks of a folder, in order."""
    paths = sorted(p for p in notebooks_dir.glob("[0-9][0-9]_*.ipynb"))
    if not paths:
        raise FileNotFoundError(f"no notebooks NN_*.ipynb in {notebooks_dir}")
    return paths


def run_notebook(src: Path, dest: Path, parameters: dict, kernel: str = "python3",
                 timeout: int | None = None) -> float:
    """Execute `src` into `dest` with papermill, injecting `parameters`, on the Jupyter `kernel`,
    each cell allowed `timeout` seconds (None: no limit); returns seconds. On failure the executed
    notebook stays at `dest` and `NotebookFailed` names the notebook and the failing cell."""
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


#: The file a notebook writes its results to, in its own folder under `run_dir/artifacts`.
RESULT_FILE = "result.json"

#: What each notebook's result.json contributes to the top of summary.json: key -> (notebook number, fields).
SUMMARY_FIELDS = {
    "curation": ("01", ("rows", "validation", "steps", "curated")),
    "training": ("04", ("experiment", "start", "end", "global_step", "base_model", "adapter_dir",
                        "trained_model")),
    "miniature": ("04", ("miniature",)),
    "evaluation": ("05", ("policies",)),
}


def notebook_stem(notebook: str, notebooks_dir: Path = NOTEBOOKS) -> str:
    """The file stem of a notebook named by its number ("04") or by its stem ("04_grpo_training")."""
    stems = [p.stem for p in notebook_paths(notebooks_dir)]
    if notebook in stems:
        return notebook
    found = [s for s in stems if s.startswith(f"{notebook}_")]
    if len(found) != 1:
        raise ValueError(f"no single notebook {notebook!r} in {notebooks_dir}; notebooks: {stems}")
    return found[0]


def artifacts_dir(run_dir: str | Path, notebook: str, notebooks_dir: Path = NOTEBOOKS) -> Path:
    """The folder a pipeline run gives a notebook (its `output_dir`): `run_dir/artifacts/<stem>`."""
    return Path(run_dir) / "artifacts" / notebook_stem(notebook, notebooks_dir)


def result_path(run_dir: str | Path, notebook: str) -> Path:
    """Where a notebook of a pipeline run reports its results (`notebook`: "04" or its stem)."""
    return artifacts_dir(run_dir, notebook) / RESULT_FILE


def read_result(run_dir: str | Path, notebook: str) -> dict | None:
    """What an earlier notebook of the same run reported, or None when it has not run there."""
    path = result_path(run_dir, notebook)
    return read_json(path) if path.exists() else None


def write_result(output_dir: str | Path, result: dict) -> Path:
    """Report a notebook's results: `output_dir/result.json`, written atomically (numbers as floats)."""
    return write_json_atomic(Path(output_dir) / RESULT_FILE, result)


def top_level_summary(results: dict) -> dict:
    """The fields summary.json lifts to its top from the notebooks' results (keyed by notebook
    stem): the curated-data report, training metrics at start and end, the miniature experiment's
    arms and the evaluation metrics of every policy."""
    out = {}
    for key, (number, fields) in SUMMARY_FIELDS.items():
        res = next((v for stem, v in results.items() if stem.startswith(f"{number}_")), None)
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
    """Run the notebooks in order and write `summary.json` after each.

    Args:
        profile: "cpu-mini" or "gpu-3b" (`profiles.PROFILES`), passed to every notebook.
        out: the run folder (default `runs/<timestamp>`).
        start: restart at notebook number `start`, reusing what earlier notebooks wrote in `out`.
        notebooks_dir: the folder of `NN_*.ipynb` notebooks.
        data_dir: the sample data folder (default `data_samples/`).
        extra_parameters: more papermill parameters for every notebook.

    Returns:
        The summary: profile, versions, seconds per notebook, each notebook's results and the
        fields `top_level_summary` lifts from them.
    """
    prof = get_profile(profile)
    run_dir = Path(out) if out else REPO / "runs" / datetime.now().strftime("%Y%m%d-%H%M%S")
    run_dir = run_dir.resolve()
    data_dir = (data_dir or REPO / "data_samples").resolve()
    summary_path = run_dir / "summary.json"
    summary = read_json(summary_path) if summary_path.exists() else {}
    summary.update({"profile": prof.to_dict(), "versions": versions(), "run_dir": str(run_dir)})
    summary.setdefault("seconds", {})
    summary.setdefault("results", {})
    summary["started"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    for src in notebook_paths(notebooks_dir):
        if start is not None and int(src.name[:2]) < start:
            continue  # reuse what an earlier run wrote under run_dir
        _run_one(src, run_dir, profile, data_dir, extra_parameters, summary)
        write_json_atomic(summary_path, summary)  # after every notebook: a crash loses nothing
    summary["total_seconds"] = round(sum(summary["seconds"].values()), 1)
    write_json_atomic(summary_path, summary)
    return summary


def _run_one(src: Path, run_dir: Path, profile: str, data_dir: Path, extra_parameters: dict | None,
             summary: dict) -> None:
    """Run one notebook into `run_dir` and record its seconds and results in `summary`."""
    out_dir = artifacts_dir(run_dir, src.stem, src.parent)
    params = {"profile": profile, "output_dir": str(out_dir), "data_dir": str(data_dir),
              "run_dir": str(run_dir), **(extra_parameters or {})}
    print(f"[pipeline] {src.name} ...", flush=True)
    seconds = run_notebook(src, run_dir / "notebooks" / src.name, params)
    summary["seconds"][src.stem] = round(seconds, 1)
    result = out_dir / RESULT_FILE
    if result.exists():
        summary["results"][src.stem] = read_json(result)
        summary.update(top_level_summary(summary["results"]))
    print(f"[pipeline] {src.name} done in {seconds:.1f} s", flush=True)


def main(argv: list[str] | None = None) -> int:
    """The command line: run the pipeline; 1 when a notebook fails."""
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
