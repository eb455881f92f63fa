"""The Hugging Face hub: what a hub id looks like, and whether the network may (and can) be used,
asked before any download so that an unreachable hub fails in seconds, not minutes."""

from __future__ import annotations

import os
import re
import socket
from urllib.parse import urlparse

#: A hub repository id: `owner/name`, each part starting with a letter or digit.
HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*")


def is_hub_id(name: str) -> bool:
    """True when `name` has the form `owner/name`."""
    return HUB_ID.fullmatch(name) is not None


def hub_offline() -> bool:
    """True when HF_HUB_OFFLINE or TRANSFORMERS_OFFLINE says not to use the network."""
    value = os.environ.get("HF_HUB_OFFLINE") or os.environ.get("TRANSFORMERS_OFFLINE") or "0"
    return value.strip().lower() in ("1", "true", "yes", "on")


def hub_reachable(timeout: float = 3.0) -> bool:
    """Whether the hub answers a short socket probe."""
    endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co")
    host = urlparse(endpoint).hostname or "huggingface.co"
    try:
        with socket.create_connection((host, 443), timeout=timeout):
            return True
    except OSError:
        return False
