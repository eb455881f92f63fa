"""PEFT beside a torchao older than it accepts (Colab ships torchao 0.10.0 beside peft 0.20).

peft >= 0.19 asks `peft.import_utils.is_torchao_available()` while it wraps any layer that is not in 4-bit,
and that check raises an ImportError for a torchao below its floor instead of answering "no". Each case runs
in a fresh interpreter with a stand-in torchao 0.10.0 (a package and its dist-info) first on PYTHONPATH, so
PEFT's cached answer and this process's modules are left alone."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
OLD_TORCHAO = "0.10.0"
FAULT = "Found an incompatible version of torchao"


@pytest.fixture(scope="module")
def old_torchao(tmp_path_factory) -> Path:
    """A folder holding an importable `torchao` package that reports version 0.10.0."""
    root = tmp_path_factory.mktemp("old_torchao")
    (root / "torchao").mkdir()
    (root / "torchao" / "__init__.py").write_text(f'__version__ = "{OLD_TORCHAO}"\n')
    info = root / f"torchao-{OLD_TORCHAO}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: torchao\nVersion: {OLD_TORCHAO}\n")
    return root


def run_beside(old_torchao: Path, code: str, cwd: Path) -> subprocess.CompletedProcess:
    """`code` in a fresh interpreter that finds the old torchao before anything installed."""
    path = os.pathsep.join(filter(None, [str(old_torchao), str(REPO), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYTHONPATH": path, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=600)


def test_the_stand_in_torchao_makes_bare_peft_fail_on_a_plain_linear(old_torchao, tmp_path):
    """The fault itself: `get_peft_model` on a model of one float Linear raises PEFT's ImportError.
    (Should a PEFT release answer "no" instead, this fails, and settle_peft_torchao may go.)"""
    done = run_beside(old_torchao, """
        from importlib.metadata import version
        import torch, peft, torchao
        assert torchao.__version__ == version("torchao") == "0.10.0", (torchao.__file__, version("torchao"))
        model = torch.nn.Sequential(torch.nn.Linear(8, 8))
        try:
            peft.get_peft_model(model, peft.LoraConfig(r=2, target_modules=["0"]))
        except ImportError as exc:
            print("raised:", exc)
        else:
            print("wrapped")
        """, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.startswith("raised: ") and FAULT in done.stdout, done.stdout


def test_load_policy_and_the_merge_go_on_beside_the_old_torchao(old_torchao, tiny_model_dir, tmp_path):
    """`load_policy` with a new LoRA adapter and no quantisation wraps the tiny model (plain LoRA layers,
    nothing of torchao's), torchao stays importable afterwards, and merging a saved adapter - with PEFT's
    cached answer cleared, as in a fresh process - goes through too."""
    done = run_beside(old_torchao, f"""
        import logging, sys
        logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
        logging.getLogger("gui_r1_lite.modeling").setLevel(logging.INFO)
        from peft.import_utils import is_torchao_available
        from peft.tuners.lora import LoraLayer
        from gui_r1_lite.modeling import load_policy
        from gui_r1_lite.tiny import TINY_MAX_PIXELS, TINY_MIN_PIXELS
        from gui_r1_lite.training import merge_adapter

        tiny = {str(tiny_model_dir)!r}
        policy = load_policy(tiny, lora=True, device="cpu", min_pixels=TINY_MIN_PIXELS, max_pixels=TINY_MAX_PIXELS)
        layers = [m for m in policy.model.modules() if isinstance(m, LoraLayer)]
        print("lora layers:", len(layers))
        print("layer types:", sorted({{type(m).__module__ + "." + type(m).__name__ for m in layers}}))
        print("trainable:", sum(p.numel() for p in policy.model.parameters() if p.requires_grad))
        import torchao
        print("torchao:", torchao.__version__)
        print("peft sees torchao:", is_torchao_available())

        policy.model.save_pretrained("adapter")
        is_torchao_available.cache_clear()  # as a fresh process meets the merge
        merged = merge_adapter(tiny, "adapter", "merged")
        print("merged:", (merged / "config.json").is_file())
        """, tmp_path)
    assert done.returncode == 0, done.stderr[-4000:]
    lines = dict(line.split(": ", 1) for line in done.stdout.splitlines())
    assert int(lines["lora layers"]) > 0 and int(lines["trainable"]) > 0, done.stdout
    assert lines["layer types"] == "['peft.tuners.lora.layer.Linear']", done.stdout
    assert lines["torchao"] == OLD_TORCHAO and lines["peft sees torchao"] == "False", done.stdout
    assert lines["merged"] == "True", done.stdout
    assert f"torchao {OLD_TORCHAO} is older than this peft accepts" in done.stderr, done.stderr[-3000:]
    assert FAULT not in done.stdout + done.stderr


# --- in this process: which branch `settle_peft_torchao` takes, with PEFT's check faked ---------------------

@pytest.fixture
def torchao_entry_restored():
    """`sys.modules["torchao"]` as it was before the test (settle_peft_torchao may hide torchao there)."""
    missing = object()
    before = sys.modules.pop("torchao", missing)
    try:
        yield
    finally:
        if before is missing:
            sys.modules.pop("torchao", None)
        else:
            sys.modules["torchao"] = before


def peft_check_of_an_old_torchao(monkeypatch, cached: bool) -> list[bool]:
    """PEFT's `is_torchao_available` as peft >= 0.19 answers a torchao below its floor (an ImportError
    whenever torchao can be found, else False), cached for the process or not; returns the list of
    whether each call found torchao."""
    import functools
    import importlib.util

    import peft.import_utils

    calls: list[bool] = []

    def is_torchao_available() -> bool:
        calls.append(importlib.util.find_spec("torchao") is not None)
        if calls[-1]:
            raise ImportError(f"{FAULT}. Found version {OLD_TORCHAO}, but only versions above 0.16.0 are supported")
        return False

    monkeypatch.setattr(peft.import_utils, "is_torchao_available",
                        functools.lru_cache(is_torchao_available) if cached else is_torchao_available)
    return calls


def test_a_peft_that_does_not_cache_its_answer_keeps_torchao_hidden(old_torchao, monkeypatch,
                                                                   torchao_entry_restored):
    import importlib.util

    from peft import import_utils

    from gui_r1_lite.lora import settle_peft_torchao

    monkeypatch.syspath_prepend(str(old_torchao))  # the stand-in torchao 0.10.0 and its dist-info
    calls = peft_check_of_an_old_torchao(monkeypatch, cached=False)
    assert settle_peft_torchao() == OLD_TORCHAO
    assert calls == [True, False, True], calls  # its verdict, hidden once, and still the ImportError after
    assert "torchao" in sys.modules and sys.modules["torchao"] is None  # hidden for the rest of the process
    assert importlib.util.find_spec("torchao") is None and import_utils.is_torchao_available() is False


def test_a_peft_that_caches_its_answer_leaves_torchao_importable(old_torchao, monkeypatch, torchao_entry_restored):
    import importlib.util

    from peft import import_utils

    from gui_r1_lite.lora import settle_peft_torchao

    monkeypatch.syspath_prepend(str(old_torchao))
    calls = peft_check_of_an_old_torchao(monkeypatch, cached=True)
    assert settle_peft_torchao() == OLD_TORCHAO
    assert calls == [True, False], calls  # the third call is answered by PEFT's cache
    assert "torchao" not in sys.modules and importlib.util.find_spec("torchao") is not None
    assert import_utils.is_torchao_available() is False


def test_without_torchao_nothing_is_asked_nor_hidden(monkeypatch, torchao_entry_restored):
    import importlib.util

    import peft.import_utils

    from gui_r1_lite.lora import settle_peft_torchao

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a, **k: None if name == "torchao" else find_spec(name, *a, **k))

    def is_torchao_available() -> bool:
        raise AssertionError("PEFT was asked about a torchao that is not there")
    monkeypatch.setattr(peft.import_utils, "is_torchao_available", is_torchao_available)
    assert settle_peft_torchao() is None
    assert "torchao" not in sys.modules
