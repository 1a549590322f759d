"""``boundary-eval shard``: split a COCO/LVIS ground truth (and its results) into image shards."""
from __future__ import annotations

from .streaming import run_shard as run
from .streaming import shard_parser as parser

__all__ = ["parser", "run"]
