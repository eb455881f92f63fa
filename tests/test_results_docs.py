"""Every figure README.md and docs/*.md quote about the sweep, the study and `make run` comes from a
committed result file under `docs/results/`, never from a git-ignored run folder.

A quoted figure carries its source right after it, as an HTML comment the rendered page does not show:

    The warm start alone scores 41.8<!-- from docs/results/sweep_evidence.json: warm_start | % --> %.

`from FILE: EXPR [| FORMAT]`: EXPR is a key path (`means.visits.sft[0].click_accuracy`, list items by
index) or a difference or sum of them (`a - b`, spaces around the sign); FORMAT is `%` (a fraction
written as a percentage, one decimal), `min` (seconds written as minutes, one decimal) or a Python
format spec such as `.0f`; without one the written number must equal the value. A figure not yet
known is written `…` before its comment (a placeholder): the test then fails, saying what to write,
until the file exists and the figure is filled in. A block of text (a paragraph with the table after
it, a list, a code block line) that names one of these runs may quote no figure (a number with %,
min, s or points, or a signed number) without a source.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from study.__main__ import main as study_main
from study.results import RESULTS, STUDY_RESULTS, ship_results, study_result_files

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "docs" / "results" / "README.md"]
PLACEHOLDER = "…"
SOURCE = re.compile(r"(?P<figure>[+−-]?\d[\d,]*(?:\.\d+)?(?:e[+−-]?\d+)?|…)?(?P<bold>\**)"
                    r"<!-- from (?P<file>[^\s:]+): (?P<expr>[^|>]+?)(?: \| (?P<fmt>[^\s>]+))? -->")
#: A figure about a run: a number with a unit (%, min, s, points, GB/MB/MiB), a signed number, or a
#: number with a decimal point (not a setting: `SETTING`).
FIGURE = re.compile(r"(?<![\w.])(?:[+−-]?\d[\d,]*(?:\.\d+)?\s?(?:%|min\b|s\b|points\b|GB\b|MB\b|MiB\b)"
                    r"|[+−]\d+(?:\.\d+)?|\d+\.\d+(?![.\d]))")
#: What a setting's value follows (a learning rate, temperature, stopping point, β, a version).
SETTING = re.compile(r"(?:\blr|temperature|\bT|stop at|β|torch|Python|transformers)\s*$")
#: What makes a block of text about the sweep, the study or `make run`.
ABOUT_RUNS = re.compile(r"make run|make study|\bstudy\b|\bsweep\b|summary\.json|docs/results/", re.IGNORECASE)
NOT_A_FIGURE = {"95 %", "95%"}  # the intervals' confidence level


def value_at(data, path: str, where: str):
    """The value at key path `path` (`a.b[0].c`) of `data`; KeyError naming `where` and the missing key."""
    value = data
    for part in re.findall(r"[^.\[\]]+|\[\d+\]", path):
        try:
            value = value[int(part[1:-1])] if part.startswith("[") else value[part]
        except (KeyError, IndexError, TypeError):
            raise KeyError(f"{where}: no {part!r} in {path!r}") from None
    return value


def evaluate(expr: str, data, where: str) -> float:
    """`expr` (key paths joined by ` - ` and ` + `) computed on `data`."""
    terms = re.split(r" ([+-]) ", expr.strip())
    total = float(value_at(data, terms[0], where))
    for sign, path in zip(terms[1::2], terms[2::2], strict=True):
        total += (1 if sign == "+" else -1) * float(value_at(data, path, where))
    return total


def _plain(number: str) -> str:
    """A written number as compared: ASCII minus, no plus sign, no thousands commas, no negative zero."""
    text = number.replace("−", "-").replace(",", "").lstrip("+")
    return text[1:] if re.fullmatch(r"-0(\.0*)?", text) else text


def formatted(value: float, fmt: str | None) -> str:
    """`value` as the docs write it under `fmt` (see the module's docstring)."""
    if fmt == "%":
        return _plain(f"{100 * value:.1f}")
    if fmt == "min":
        return _plain(f"{value / 60:.1f}")
    return _plain(format(value, fmt)) if fmt else repr(value)


def sourced(text: str, where: str, root: Path = ROOT) -> Iterator[str]:
    """A problem for each sourced figure of `text` that disagrees with its file, cites a missing file
    or key, is a placeholder, or is a source comment with no figure before it (a comment inside
    inline code is text, not a source)."""
    text = re.sub(r"`[^`\n]*`", "``", text)
    for m in SOURCE.finditer(text):
        line = f"{where}:{text.count(chr(10), 0, m.start()) + 1}"
        figure, file, expr, fmt = m["figure"], m["file"], m["expr"], m["fmt"]
        cite = f"{file}: {expr}" + (f" | {fmt}" if fmt else "")
        if figure is None:
            yield f"{line}: a source comment ({cite}) with no figure right before it"
            continue
        if not (root / file).is_file():
            yield f"{line}: {figure} cites {file}, which is not committed"
            continue
        try:
            value = evaluate(expr, json.loads((root / file).read_text(encoding="utf-8")), f"{line}: {file}")
        except KeyError as exc:
            yield str(exc.args[0])
            continue
        want = formatted(value, fmt)
        if figure == PLACEHOLDER:
            yield f"{line}: placeholder for {cite}: write {want}"
        elif (float(_plain(figure)) != value) if fmt is None else (_plain(figure) != want):
            yield f"{line}: {figure} but {cite} gives {want}"


def blocks(text: str) -> Iterator[tuple[int, str]]:
    """(first line, block) for each block of Markdown: blank-line separated, a table joined with the
    paragraph before it (its caption), each line of a fenced code block on its own.
    (`about_runs` reads a table's rows one by one under its caption.)"""
    lines, out, start, code = text.splitlines(), [], None, False
    merged: list[tuple[int, str]] = []
    for i, line in enumerate([*lines, ""], 1):
        if line.startswith("```"):
            code = not code
            continue
        if code:
            merged.append((i, line))
            continue
        if line.strip():
            start = i if start is None else start
            out.append(line)
            continue
        if out:
            block = "\n".join(out)
            if block.startswith("|") and merged and not merged[-1][1].startswith("|") and merged[-1][0] < start:
                merged[-1] = (merged[-1][0], merged[-1][1] + "\n" + block)
            else:
                merged.append((start, block))
        out, start = [], None
    return iter(merged)


def unsourced(text: str, where: str) -> Iterator[str]:
    """A problem for each figure, in a block about these runs, with no source comment after it."""
    for first, block in blocks(text):
        caption = block.split("\n|", 1)[0]
        for part in about_runs(caption, block[len(caption):]):
            bare = re.sub(r"`[^`]*`", "", SOURCE.sub("", part))
            for m in FIGURE.finditer(bare):
                if m[0].strip() not in NOT_A_FIGURE and not SETTING.search(bare[:m.start()]):
                    yield f"{where}:{first}: {m[0].strip()!r} about a run, with no source (<!-- from FILE: KEY -->)"


def about_runs(caption: str, rows: str) -> list[str]:
    """The parts of a block that are about these runs: the whole block when its caption (the text
    before a table) names one, else the table rows that do."""
    if ABOUT_RUNS.search(caption):
        return [caption + rows]
    return [row for row in rows.splitlines() if ABOUT_RUNS.search(row)]


#: Statistics of one metric in a key path (`stats.arms.sft.click_accuracy.mean`): not the metric's name.
_STATISTICS = {"mean", "std", "per_seed", "ci95"}
#: Two keys of one metric: an evaluation's `grounding.overall` is what the miniature calls `click_accuracy`.
_SAME_METRIC = {"grounding.overall": "click_accuracy"}


def metric_of(expr: str) -> str:
    """The metric a figure's key path reads, without the arm and the statistic:
    `stats.arms.sft.click_accuracy.ci95[0]` -> `click_accuracy`, `action.grounding` -> `action.grounding`."""
    parts = [p for p in re.findall(r"[^.\[\]]+", re.split(r" [+-] ", expr.strip())[0]) if not p.isdigit()]
    while len(parts) > 1 and parts[-1] in _STATISTICS:
        parts.pop()
    name = ".".join(parts[-2:]) if parts[-1] in ("overall", "grounding") and len(parts) > 1 else parts[-1]
    name = name.removeprefix("mean_")  # a mean over seeds (`mean_click_accuracy`) of the same metric
    return _SAME_METRIC.get(name, name)


def _units(block: str) -> Iterator[str]:
    """A block's table rows one by one and its prose sentence by sentence: what one comparison is made in."""
    for line in block.split("\n"):
        if line.lstrip().startswith("|"):
            yield line
    prose = " ".join(line for line in block.split("\n") if not line.lstrip().startswith("|"))
    yield from re.split(r"(?<=[.;])\s+(?=[A-Z*(\[])", prose)


def mixed_metrics(text: str, where: str) -> Iterator[str]:
    """A problem for each table row or sentence whose sourced click-accuracy figures (percentages) cite
    different metrics: a lenient grounding rule beside the strict one compares two different things."""
    text = re.sub(r"`[^`\n]*`", "``", text)
    for first, block in blocks(text):
        for unit in _units(block):
            cited = [(m["figure"], metric_of(m["expr"])) for m in SOURCE.finditer(unit) if m["fmt"] == "%"]
            clicks = [(f, k) for f, k in cited if "accuracy" in k or "grounding" in k]
            if len({k for _, k in clicks}) > 1:
                listed = ", ".join(f"{f} ({k})" for f, k in clicks)
                yield f"{where}:{first}: figures compared in one sentence or row cite different metrics: {listed}"


def problems(path: Path, root: Path = ROOT) -> list[str]:
    text = path.read_text(encoding="utf-8")
    where = str(path.relative_to(root)) if path.is_relative_to(root) else str(path)
    return [*sourced(text, where, root), *unsourced(text, where), *mixed_metrics(text, where)]


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_figure_about_the_runs_is_its_committed_file_s(doc):
    found = problems(doc)
    assert not found, "\n".join(found)


def test_the_figures_cite_only_files_under_docs_results():
    cited = {m["file"] for doc in DOCS for m in SOURCE.finditer(doc.read_text(encoding="utf-8"))}
    assert cited and all(f.startswith("docs/results/") for f in cited), cited
    assert "docs/results/sweep_evidence.json" in cited


def test_the_check_fails_on_a_wrong_a_missing_and_an_unsourced_figure(tmp_path):
    (tmp_path / "docs" / "results").mkdir(parents=True)
    (tmp_path / "docs" / "results" / "r.json").write_text(json.dumps(
        {"a": [0.4181818, 0.5], "wall_seconds": 6992.82, "lr": 1e-05, "n": 70}))
    doc = tmp_path / "doc.md"
    good = ("The sweep: 41.8<!-- from docs/results/r.json: a[0] | % --> % then **+8.2**<!-- from docs/results/r.json: "
            "a[1] - a[0] | % --> points in 116.5<!-- from docs/results/r.json: wall_seconds | min --> min, "
            "lr 1e-5<!-- from docs/results/r.json: lr -->, 70<!-- from docs/results/r.json: n | .0f --> rows.\n")
    doc.write_text(good)
    assert problems(doc, tmp_path) == []
    doc.write_text(good.replace("41.8", "41.9").replace("+8.2", "−8.2"))
    assert problems(doc, tmp_path) == [
        "doc.md:1: 41.9 but docs/results/r.json: a[0] | % gives 41.8",
        "doc.md:1: −8.2 but docs/results/r.json: a[1] - a[0] | % gives 8.2"]
    doc.write_text("The sweep took 116.5 min, +3.6 points over SFT (95 % intervals).\n\nA 9 % fact not about it.\n")
    assert problems(doc, tmp_path) == ["doc.md:1: '116.5 min' about a run, with no source (<!-- from FILE: KEY -->)",
                                       "doc.md:1: '+3.6 points' about a run, with no source (<!-- from FILE: KEY -->)"]
    doc.write_text("The study:\n\n| arm | x |\n|---|---|\n| SFT | 50.4 % |\n\n```bash\nmake study  # 62.3 min\n```\n")
    assert [p.split(": ", 1)[1] for p in problems(doc, tmp_path)] == [
        "'50.4 %' about a run, with no source (<!-- from FILE: KEY -->)",
        "'62.3 min' about a run, with no source (<!-- from FILE: KEY -->)"]


def test_figures_compared_in_one_sentence_or_row_must_cite_one_metric(tmp_path):
    """The base quoted by the original's lenient grounding rule (`action.grounding`) beside arms scored by
    the strict one (`click_accuracy`, an evaluation's `grounding.overall`) is refused; each alone is fine."""
    (tmp_path / "docs" / "results").mkdir(parents=True)
    (tmp_path / "docs" / "results" / "m.json").write_text(json.dumps(
        {"action": {"grounding": 0.443}, "grounding": {"overall": 0.414},
         "arms": {"sft": {"click_accuracy": {"mean": 0.383}}}, "format_rate": 1.0}))
    doc = tmp_path / "doc.md"
    arm = "38.3<!-- from docs/results/m.json: arms.sft.click_accuracy.mean | % --> %"
    lenient = "44.3<!-- from docs/results/m.json: action.grounding | % --> %"
    strict = "41.4<!-- from docs/results/m.json: grounding.overall | % --> %"
    doc.write_text(f"SFT scores {arm}, below the base ({lenient}). Format {arm[:0]}100.0<!-- from "
                   "docs/results/m.json: format_rate | % --> %.\n")
    assert [p.split(": ", 1)[1] for p in problems(doc, tmp_path)] == [
        "figures compared in one sentence or row cite different metrics: 38.3 (click_accuracy), 44.3 (action.grounding)"]
    doc.write_text(f"SFT scores {arm}, below the base ({strict}).\n\nThe base's lenient score: {lenient}.\n")
    assert problems(doc, tmp_path) == []
    doc.write_text(f"| arm | seeing | base |\n|---|---|---|\n| sft | {arm} | {lenient} |\n")
    assert len(problems(doc, tmp_path)) == 1
    assert metric_of("stats.gain.click_accuracy.ci95[0]") == metric_of("grounding.overall") == "click_accuracy"


def test_a_table_s_rows_are_read_under_their_caption_and_settings_are_no_figures(tmp_path):
    doc = tmp_path / "doc.md"
    doc.write_text("On a CPU:\n\n| what | figure |\n|---|---|\n| rewards | 47,606 scores/s, 5.6 ms |\n"
                   "| `make run` | 11.3 min |\n\nThe sweep's grid: lr 0.0001, temperature 0.7, stop at 0.5; torch 2.14.1.\n")
    assert problems(doc, tmp_path) == ["doc.md:1: '11.3 min' about a run, with no source (<!-- from FILE: KEY -->)"]


def test_the_shipped_docs_fail_when_their_file_changes(tmp_path):
    (tmp_path / "docs" / "results").mkdir(parents=True)
    evidence = json.loads((RESULTS / "layout" / "sweep_evidence.json").read_text(encoding="utf-8"))
    evidence["warm_start"] = 0.40
    (tmp_path / "docs" / "results" / "layout").mkdir()
    (tmp_path / "docs" / "results" / "layout" / "sweep_evidence.json").write_text(json.dumps(evidence))
    page = tmp_path / "docs" / "miniature.md"
    page.write_text((ROOT / "docs" / "miniature.md").read_text(encoding="utf-8"))
    found = [p for p in problems(page, tmp_path) if "docs/results/layout/sweep_evidence.json" in p]
    assert found and all(" warm_start" in p for p in found)
    assert any("41.8 but docs/results/layout/sweep_evidence.json: warm_start | % gives 40.0" in p for p in found)


def test_a_figure_citing_the_make_run_reference_waits_for_it(tmp_path):
    doc = tmp_path / "doc.md"
    doc.write_text("`make run`: …<!-- from docs/results/ref.json: total_seconds | min --> min.\n")
    assert problems(doc, tmp_path) == ["doc.md:1: … cites docs/results/ref.json, which is not committed"]
    (tmp_path / "docs" / "results").mkdir(parents=True)
    (tmp_path / "docs" / "results" / "ref.json").write_text(json.dumps({"total_seconds": 680.4}))
    assert problems(doc, tmp_path) == ["doc.md:1: placeholder for docs/results/ref.json: total_seconds | min: write 11.3"]
    doc.write_text(doc.read_text().replace("…", "11.3"))
    assert problems(doc, tmp_path) == []
    doc.write_text(doc.read_text().replace("total_seconds", "seconds.04_grpo_training"))
    assert problems(doc, tmp_path) == ["doc.md:1: docs/results/ref.json: no 'seconds' in 'seconds.04_grpo_training'"]


def _fake_study(out, seeds, **kwargs):
    out = Path(out)
    study = {"seeds": list(seeds), "parts": {"visits": {}, "all_tasks": {}}, "wall_seconds": 3.0}
    for name in ("visits", "all_tasks"):
        (out / name).mkdir(parents=True, exist_ok=True)
        (out / name / "miniature.json").write_text(json.dumps({"part": name}))
        (out / name / "seed0").mkdir(exist_ok=True)
        (out / name / "seed0" / "model.bin").write_bytes(b"weights stay in the run folder")
    (out / "study.json").write_text(json.dumps(study))
    (out / "study.md").write_text("tables\n")
    return study


def test_the_study_and_the_sweep_ship_their_result_files_byte_for_byte(monkeypatch, tmp_path, capsys):
    import study.__main__ as command

    monkeypatch.setattr(command, "run_study", _fake_study)
    monkeypatch.setattr(command, "study_markdown", lambda study, out: "tables")
    shipped = tmp_path / "shipped"
    assert command.main(["--study", str(tmp_path / "run"), "--results", str(shipped)]) == 0
    files = sorted(str(p.relative_to(shipped)) for p in shipped.rglob("*") if p.is_file())
    assert files == ["all_tasks/miniature.json", "study.json", "study.md", "visits/miniature.json"]  # no weights
    assert all((shipped / f).read_bytes() == (tmp_path / "run" / f).read_bytes() for f in files)
    assert f"shipped {shipped / 'study.json'}" in capsys.readouterr().out

    def fake_sweep(out, seeds, **kwargs):
        Path(out, "sweep_evidence.json").write_bytes(RESULTS.joinpath("sweep_evidence.json").read_bytes())
        return {"chosen": {}, "seeds": seeds, "warm_start": {"0": {"click_accuracy": 0.5}}, "data": {"n_heldout": 1},
                "wall_seconds": 1.0}

    monkeypatch.setattr(command, "run_sweep", fake_sweep)
    monkeypatch.setattr(command, "sweep_table", lambda result: "")
    assert study_main(["--sweep", str(tmp_path / "sweep"), "--results", str(tmp_path / "res")]) == 0
    assert (tmp_path / "res" / "sweep_evidence.json").read_bytes() == (RESULTS / "sweep_evidence.json").read_bytes()
    with pytest.raises(FileNotFoundError, match="no such result file to ship"):
        ship_results(tmp_path / "sweep", ["sweep.json"], tmp_path / "res")


def test_make_study_ships_to_docs_results():
    assert study_result_files({"parts": {"visits": {}}}) == ["study.json", "study.md", "visits/miniature.json"]
    assert STUDY_RESULTS == ROOT / "docs" / "results" / "study"
    make = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert "RESULTS ?= docs/results/study" in make and "--results $(RESULTS)" in make
