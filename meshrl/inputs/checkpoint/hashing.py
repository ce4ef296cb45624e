"""A stable hash of a resolved config dict (canonical JSON, sha256), for `config_hash=`."""

from __future__ import annotations

import hashlib
import json


def hash_config(config: dict) -> str:
    """sha256 hex of `config` as sorted-key JSON: equal dicts give equal hashes."""
    return hashlib.sha256(json.dumps(config, sort_keys=True, default=str).encode()).hexdigest()
