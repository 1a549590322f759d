"""``boundary-eval sensitivity``: the paper's sensitivity curves for a ground-truth file."""
from __future__ import annotations

import argparse
import os

from ..sensitivity.perturbations import ERRORS
from ..masks.measures import MEASURES
from ._common import PROG, HelpFormatter, InputError, add_common_flags, positive_int, ratio
from .output import build_document, write_json


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=f"{PROG} sensitivity",
        description="Sensitivity analysis of the segmentation measures (Cheng et al., CVPR 2021, section 3): "
                    "sample ground-truth objects, apply simulated errors at a range of severities, compare "
                    "with every measure, and write the figures (PNG and SVG: fig6 severity curves for objects "
                    "above 96^2 px, fig7 curves across object sizes, fig4 Mask/Trimap IoU and F-measure under "
                    "dilation and erosion across sizes, fig8 inner holes, fig9 mF-measure vs Boundary IoU) "
                    "plus curves.csv and curves.json with the numbers behind every curve.",
        formatter_class=HelpFormatter,
    )
    p.add_argument("--gt", required=True, metavar="GT.json",
                   help="COCO or LVIS instances ground truth (the paper samples LVIS v0.5 val)")
    p.add_argument("--out", required=True, metavar="DIR", help="output directory (created if needed)")
    p.add_argument("--errors", nargs="+", choices=ERRORS, default=list(ERRORS), metavar="ERROR",
                   help=f"error types, among: {', '.join(ERRORS)}")
    p.add_argument("--measures", nargs="+", choices=MEASURES,
                   default=["mask_iou", "trimap_iou", "f_measure", "mf_measure", "boundary_iou"], metavar="MEASURE",
                   help=f"measures, among: {', '.join(MEASURES)}")
    p.add_argument("--samples", type=positive_int, default=100, metavar="N",
                   help="objects above 96^2 px for the severity curves, and objects per size bin")
    p.add_argument("--seed", type=int, default=0, metavar="S", help="seed of the sampling and the random errors")
    p.add_argument("--dilation-ratio", type=ratio, default=0.02, metavar="R",
                   help="d of Trimap IoU, F-measure and Boundary IoU, as a fraction of the image diagonal")
    p.add_argument("--no-sizes", action="store_true",
                   help="skip the curves across object sizes (figures 4, 7 and 8's right panel)")
    p.add_argument("--formats", nargs="+", choices=("png", "svg", "pdf"), default=["png", "svg"],
                   help="figure file formats")
    p.add_argument("--threads", type=positive_int, default=None, metavar="N", help="threads (default: all cores)")
    add_common_flags(p)  # -q: no progress bar and no list of written files
    return p


def run(args) -> int:
    import importlib

    try:
        for name in ("matplotlib", "shapely"):
            importlib.import_module(name)
    except ImportError as exc:
        raise InputError(f"the sensitivity analysis needs {exc.name}: pip install 'boundary-api[analysis]'") from None
    from ..sensitivity.plots import save_figures
    from ..sensitivity.curves import sensitivity_analysis

    if args.seed < 0:
        raise InputError(f"--seed must be >= 0, got {args.seed}")
    if os.path.exists(args.out) and not os.path.isdir(args.out):
        raise InputError(f"--out {args.out} exists and is not a directory")
    res = sensitivity_analysis(args.gt, errors=args.errors, measures=args.measures, samples=args.samples,
                               seed=args.seed, dilation_ratio=args.dilation_ratio, sized=not args.no_sizes,
                               num_threads=args.threads, progress=not args.quiet)
    os.makedirs(args.out, exist_ok=True)
    doc = build_document("sensitivity", None, None, {"--gt": args.gt}, {},
                         settings_extra={k: v for k, v in res.settings.items() if k != "gt"},
                         extra={"curves": res.records})
    written = [os.path.join(args.out, "curves.json"), os.path.join(args.out, "curves.csv")]
    write_json(written[0], doc)
    res.write_csv(written[1])
    figs = save_figures(res, args.out, formats=tuple(args.formats))
    if not args.quiet:
        for paths in figs.values():
            written += paths
        print(f"{res.settings['large_objects']} large objects, {res.settings['sized_objects']} objects across "
              f"sizes; wrote:")
        for path in written:
            print(f"  {path}")
    return 0
