"""The miniature's dispatch pin (`parallel.pin_dispatch`): on x86-64, two instruction-set dispatch levels
give other bytes for the same one-thread computation without the pin and the same bytes with it.

A machine with another CPU is stood in for by the variables that make torch's math libraries dispatch
as an older CPU would (ATen's `default` capability, MKL's `COMPATIBLE` code path, oneDNN's SSE4.1), set
before torch computes anything, in a process of its own. The ops are those the tiny model's steps are
made of: a matmul and a `Linear` (MKL), a softmax and attention (ATen's vectorised kernels) and GELU
(oneDNN)."""

import json
import os
import platform
import subprocess
import sys

import pytest

from harness.miniature.parallel import DISPATCH_PIN, pin_dispatch

X86 = platform.machine().lower() in ("x86_64", "amd64")

#: How an older x86-64 CPU (no AVX) would dispatch: the baseline every x86-64 CPU has.
OLDER_CPU = {"ATEN_CPU_CAPABILITY": "default", "MKL_CBWR": "COMPATIBLE", "ONEDNN_MAX_CPU_ISA": "SSE41"}

PROBE = r"""
import hashlib, json, torch
torch.set_num_threads(1)
g = torch.Generator().manual_seed(0)
a, b = torch.randn(257, 513, generator=g), torch.randn(513, 129, generator=g)
lin = torch.nn.Linear(513, 129)
with torch.no_grad():
    lin.weight.copy_(torch.randn(129, 513, generator=g))
    lin.bias.copy_(torch.randn(129, generator=g))
x = torch.randn(7, 300, generator=g)
q, k, v = (torch.randn(1, 2, 9, 16, generator=g) for _ in range(3))
out = {"matmul": a @ b, "linear": lin(a), "softmax": torch.softmax(3.7 * x, -1),
       "attention": torch.nn.functional.scaled_dot_product_attention(q, k, v),
       "gelu": torch.nn.functional.gelu(x)}
print(json.dumps({n: hashlib.sha256(t.detach().numpy().tobytes()).hexdigest() for n, t in out.items()}))
"""


def _bytes_of(env: dict) -> dict:
    clean = {k: v for k, v in os.environ.items() if k not in DISPATCH_PIN}
    proc = subprocess.run([sys.executable, "-c", PROBE], env={**clean, **env, "OMP_NUM_THREADS": "1"},
                          capture_output=True, text=True, timeout=300, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_pin_sets_only_on_x86():
    env: dict = {}
    assert pin_dispatch(env) == (DISPATCH_PIN if X86 else {})
    assert env == (DISPATCH_PIN if X86 else {})


@pytest.mark.skipif(not X86, reason="instruction-set dispatch variables exist on x86-64 only")
def test_two_dispatch_levels_differ_unpinned_and_agree_pinned():
    native, older = _bytes_of({}), _bytes_of(OLDER_CPU)
    # without the pin every library's code path follows the CPU: each op's bytes differ
    differ = sorted(op for op in native if native[op] != older[op])
    assert differ == sorted(native), f"ops whose bytes did not depend on the dispatch level: " \
                                     f"{sorted(set(native) - set(differ))}"
    # with the pin both machines run the same code paths: the same bytes, op by op
    pinned_native = _bytes_of(pin_dispatch({}))
    pinned_older = _bytes_of(pin_dispatch(dict(OLDER_CPU)))
    assert pinned_native == pinned_older


@pytest.mark.skipif(not X86, reason="instruction-set dispatch variables exist on x86-64 only")
def test_a_partial_pin_is_caught():
    """The comparison above can fail: leave MKL unpinned and the matmul and Linear still follow the CPU."""
    partial = {k: v for k, v in DISPATCH_PIN.items() if k != "MKL_CBWR"}
    a, b = _bytes_of(partial), _bytes_of({**OLDER_CPU, **partial})
    assert a["matmul"] != b["matmul"] and a["linear"] != b["linear"]
    assert a["softmax"] == b["softmax"]
