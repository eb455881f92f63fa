"""Shipped result files name the repository's own files relative to it, never by this machine's path."""

from __future__ import annotations

import json

from study.results import REPO_ROOT, ship_results


def test_shipped_files_name_repository_files_relative_to_it(tmp_path):
    run, dest = tmp_path / "run", tmp_path / "dest"
    (run / "visits").mkdir(parents=True)
    record = {"heldout_source": f"{REPO_ROOT}/data_samples/test/miniwob_test.parquet", "elsewhere": "/data/x.parquet"}
    (run / "visits" / "miniature.json").write_text(json.dumps(record))
    [copy] = ship_results(run, ["visits/miniature.json"], dest)
    shipped = json.loads(copy.read_text())
    assert shipped == {"heldout_source": "data_samples/test/miniwob_test.parquet", "elsewhere": "/data/x.parquet"}
    assert str(REPO_ROOT) not in copy.read_text()
