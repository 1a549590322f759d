"""``python -m benchmarks [options]``: the whole comparison, ``run_all.py``.

Exits non-zero when any run failed; see ``run_all.py --help``.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import run_all  # noqa: E402

if __name__ == "__main__":
    sys.exit(run_all.main())
