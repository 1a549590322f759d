"""tests/slow_tier.txt names tests that exist: a renamed test must not fall back
into the quick tier, nor a listed one vanish unnoticed."""
import ast
import functools
import os

from conftest import TESTS, slow_tier_ids

ROOT = os.path.dirname(TESTS)


@functools.lru_cache(maxsize=None)
def _functions(path):
    tree = ast.parse(open(path, encoding="utf-8").read())
    return {node.name for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}


def test_every_listed_test_exists():
    missing = []
    for nodeid in slow_tier_ids():
        path, _, rest = nodeid.partition("::")
        name = rest.split("::")[-1].split("[")[0]
        full = os.path.join(ROOT, path)
        if not os.path.exists(full) or name not in _functions(full):
            missing.append(nodeid)
    assert missing == []
