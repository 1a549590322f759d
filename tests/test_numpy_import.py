"""``import boundary_api`` imports NumPy with OpenBLAS' idle-thread spin set to
its minimum (``OPENBLAS_THREAD_TIMEOUT``), only when it makes that import, and
leaves the environment as it found it."""
import json
import os
import subprocess
import sys
import textwrap

import pytest

# Records OPENBLAS_THREAD_TIMEOUT as it is when NumPy's package starts to load
# (OpenBLAS reads it then), and the environment after the imports.
_PROBE = textwrap.dedent("""
    import importlib.abc, json, os, sys
    seen = []
    class Probe(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name == "numpy" and not seen:
                seen.append(os.environ.get("OPENBLAS_THREAD_TIMEOUT"))
            return None
    sys.meta_path.insert(0, Probe())
    for name in sys.argv[1:]:
        __import__(name)
    print(json.dumps({"at_numpy_import": seen[0] if seen else "not seen",
                      "after": os.environ.get("OPENBLAS_THREAD_TIMEOUT")}))
""")


def _run(modules, env_extra=None):
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_THREAD_TIMEOUT", "GOTO_THREAD_TIMEOUT")}
    env.update(env_extra or {})
    out = subprocess.run([sys.executable, "-c", _PROBE, *modules], env=env, capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_numpy_is_imported_with_the_shortest_blas_spin_and_the_environment_restored():
    assert _run(["boundary_api"]) == {"at_numpy_import": "4", "after": None}


@pytest.mark.parametrize("var", ["OPENBLAS_THREAD_TIMEOUT", "GOTO_THREAD_TIMEOUT"])
def test_a_timeout_the_user_set_is_left_alone(var):
    got = _run(["boundary_api"], {var: "12"})
    assert got["at_numpy_import"] == ("12" if var == "OPENBLAS_THREAD_TIMEOUT" else None)
    assert got["after"] == ("12" if var == "OPENBLAS_THREAD_TIMEOUT" else None)


def test_numpy_imported_first_is_not_touched():
    assert _run(["numpy", "boundary_api"]) == {"at_numpy_import": None, "after": None}
