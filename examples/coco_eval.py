"""Evaluate a COCO or LVIS result file with Boundary AP.

The same as the ``boundary-eval`` command (see ``--help``); the reference
implementation's flag names work too::

    python examples/coco_eval.py --gt-json-file instances_val2017.json \\
        --dt-json-file segm_results.json --iou-type boundary

With no arguments it evaluates the bundled demo.
"""
import sys

from boundary_api.cli import main

if __name__ == "__main__":
    sys.exit(main())
