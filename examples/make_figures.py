"""Regenerate the README's figures of the paper's sensitivity analysis.

    python examples/make_figures.py [--gt tests/data/lvis/lvis_val_100.json] [--samples 60]

Runs the same analysis as ``boundary-eval sensitivity`` on the shipped LVIS v0.5 val
sample (the paper samples LVIS v0.5 val) and writes, under examples/figures/, the two
figures the README shows (severity curves for objects above 96^2 px, and scale errors
across object sizes) plus curves.csv with the numbers behind them.  Deterministic:
the same data, samples and seed give the same numbers.
"""
import argparse
import os
import shutil
import tempfile

from boundary_api.sensitivity.plots import save_figures
from boundary_api.sensitivity.curves import sensitivity_analysis

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
KEEP = ("fig6_severity", "fig4_scale_error_sizes")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--gt", default=os.path.join(ROOT, "tests", "data", "lvis", "lvis_val_100.json"))
    p.add_argument("--samples", type=int, default=60)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default=os.path.join(HERE, "figures"))
    args = p.parse_args()
    res = sensitivity_analysis(args.gt, measures=["mask_iou", "trimap_iou", "f_measure", "mf_measure",
                                                  "boundary_iou"],
                               samples=args.samples, seed=args.seed, progress=True)
    os.makedirs(args.out, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        written = save_figures(res, tmp, formats=("png",), dpi=90)
        for name in KEEP:
            shutil.copy(written[name][0], os.path.join(args.out, f"{name}.png"))
    res.write_csv(os.path.join(args.out, "curves.csv"))
    print(f"wrote {', '.join(k + '.png' for k in KEEP)} and curves.csv to {args.out}")


if __name__ == "__main__":
    main()
