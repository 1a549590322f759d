"""``python -m boundary_api.cli``: the same as ``boundary-eval``."""
import sys

from .main import main

sys.exit(main())
