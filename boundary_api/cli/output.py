"""``--json-out``: the JSON documents the subcommands write."""
from __future__ import annotations

import json
import math
import os


def finite_or_none(x: float):
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else x


def write_json(path: str, doc) -> None:
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
    os.replace(tmp, path)
