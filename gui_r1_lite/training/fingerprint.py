"""A short hash of a model's trainable weights, so that tests can compare ranks without tensors."""

from __future__ import annotations

import hashlib


def trainable_fingerprint(model) -> str:
    """Hash of the trainable weights (name and float32 bytes of each, in name order)."""
    import torch

    h = hashlib.sha256()
    for name, p in sorted(model.named_parameters(), key=lambda kv: kv[0]):
        if p.requires_grad:
            h.update(name.encode())
            h.update(p.detach().to(torch.float32).cpu().numpy().tobytes())
    return h.hexdigest()[:16]
