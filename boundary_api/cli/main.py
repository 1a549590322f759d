"""``boundary-eval``: Boundary AP / Boundary PQ from result files.

Instance segmentation (COCO or LVIS)::

    boundary-eval --gt instances_val2017.json --dt segm_results.json
    boundary-eval --gt lvis_v1_val.json --dt results.json --iou-type boundary

Panoptic segmentation::

    boundary-eval panoptic --gt-json panoptic_val2017.json --gt-folder panoptic_val2017/ \\
        --pred-json pred.json --pred-folder pred/ --iou-type boundary

Semantic segmentation (PNG label maps)::

    boundary-eval semantic --gt-dir gt/ --pred-dir pred/ --num-classes 19 --json-out m.json

With no arguments it evaluates a small bundled demo and prints Mask AP and
Boundary AP side by side.
"""
from __future__ import annotations

import logging
import sys
from typing import List, Optional

from . import demo, instances, panoptic, semantic
from ._common import PROG, check_out_path


def main(argv: Optional[List[str]] = None) -> int:
    """Entry point of ``boundary-eval``; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not logging.getLogger().handlers:
        logging.basicConfig(level=logging.WARNING, format=f"{PROG}: %(levelname)s: %(message)s")
    try:
        if argv and argv[0] == "panoptic":
            args = panoptic.parser().parse_args(argv[1:])
            check_out_path(args.json_out, [args.gt_json, args.pred_json])
            return panoptic.run(args)
        if argv and argv[0] == "semantic":
            args = semantic.parser().parse_args(argv[1:])
            check_out_path(args.json_out, [])
            return semantic.run(args)
        if argv and argv[0] == "measures":
            from . import measures
            return measures.main(argv[1:])
        parser = instances.instance_parser()
        args = parser.parse_args(argv)
        if args.gt is None and args.dt is None:
            return demo.run(args)
        if args.gt is None or args.dt is None:
            parser.error("--gt and --dt are needed together (or neither, for the demo)")
        check_out_path(args.json_out, [args.gt, args.dt])
        return instances.run(args)
    except (ValueError, TypeError, OSError, MemoryError) as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
