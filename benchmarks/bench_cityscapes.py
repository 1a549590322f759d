"""Benchmark: Cityscapes instance segmentation AP / Boundary AP.

Generates a Cityscapes-format validation set (1024x2048 ``*_gtFine_instanceIds.png``
ground truth with Cityscapes-like instance counts, groups, void, small and
occluding instances; per image a ``*_pred.txt`` with binary mask PNGs written as
Detectron2's ``CityscapesInstanceEvaluator`` writes them) and times, each in a
fresh process on the same files:

* ``boundary_api`` Boundary AP (``evaluate_cityscapes(iou_type="boundary")``),
* ``boundary_api`` mask AP (``iou_type="segm"``),
* cityscapesScripts' own ``evaluateImgLists`` (mask AP),
* optionally the Boundary IoU reference (``--reference DIR``: a folder holding a
  copy of the reference's ``boundary_iou`` package, numpy-patched, kept outside
  this repository).

and checks that the numbers agree (boundary_api boundary vs the reference,
boundary_api segm vs cityscapesScripts)::

    python benchmarks/bench_cityscapes.py --images 100 --reference /work/scratch/ref

The data goes to ``benchmarks/_data/cityscapes_<N>/`` (git-ignored) and is
reused when present.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
MARK = "@@RESULT@@ "

# mean instances per image of Cityscapes val (fine annotations, ~10k instances on 500 images)
MEAN_INSTANCES = {24: 6.8, 25: 1.1, 26: 9.3, 27: 0.2, 28: 0.2, 31: 0.05, 32: 0.3, 33: 2.3}


# ----------------------------------------------------------------------------
# data
# ----------------------------------------------------------------------------
def make_data(out: Path, n_images: int, seed: int = 0) -> None:
    import cv2
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(seed)
    H, W = 1024, 2048
    cities = ["frankfurt", "lindau", "munster"]
    for i in range(n_images):
        city = cities[i % 3]
        core = f"{city}_{i:06d}_000019"
        gdir = out / "gtFine" / "val" / city
        rdir = out / "results"
        (rdir / "masks").mkdir(parents=True, exist_ok=True)
        gdir.mkdir(parents=True, exist_ok=True)
        gt = np.full((H, W), 7, np.uint16)  # road
        gt[: H // 3] = 23  # sky
        gt[H // 3: H // 2] = 11  # building
        gt[H // 2: H // 2 + 60] = 8  # sidewalk
        gt[H - 110:] = 1  # ego vehicle (void)
        gt[:, :6] = 3  # out of roi (void)
        gt[rng.integers(H // 3, H // 2):H // 2, rng.integers(0, W // 2):] = 21  # vegetation
        insts = []  # (id, label)
        for label, mean in MEAN_INSTANCES.items():
            insts += [label] * int(rng.poisson(mean))
        rng.shuffle(insts)
        k_of = {}
        for label in insts:
            # objects further away (higher up) are smaller; painted far to near
            y = int(rng.uniform(H * 0.42, H * 0.85))
            scale = (y - H * 0.38) / (H * 0.5)
            if label in (24, 25):
                ax = (max(2, int(rng.uniform(8, 30) * scale * 2)), max(4, int(rng.uniform(30, 90) * scale * 2)))
            elif label in (32, 33):
                ax = (max(3, int(rng.uniform(20, 45) * scale * 2)), max(3, int(rng.uniform(14, 30) * scale * 2)))
            else:
                ax = (max(4, int(rng.uniform(50, 160) * scale * 2)), max(3, int(rng.uniform(25, 70) * scale * 2)))
            x = int(rng.uniform(0, W))
            group = rng.random() < 0.04
            k_of[label] = k_of.get(label, 0) + 1
            iid = label if group else label * 1000 + k_of[label]
            m = np.zeros((H, W), np.uint8)
            cv2.ellipse(m, (x, y), ax, float(rng.uniform(-10, 10)), 0, 360, 1, -1)
            if label in (26, 27, 28, 31):  # car-like: box under the ellipse top
                cv2.rectangle(m, (x - ax[0], y), (x + ax[0], y + ax[1] // 2), 1, -1)
            gt[m > 0] = iid
        Image.fromarray(gt).save(gdir / f"{core}_gtFine_instanceIds.png")
        lines = []
        ids = [v for v in np.unique(gt) if v >= 1000]
        j = 0

        def put(mask, label, score):
            nonlocal j
            name = f"masks/{core}_{j:03d}.png"
            Image.fromarray(mask.astype(np.uint8) * 255).save(rdir / name)
            lines.append(f"{name} {label} {score:.4f}")
            j += 1

        kernel = np.ones((3, 3), np.uint8)
        for iid in ids:
            label = int(iid) // 1000
            if rng.random() > 0.9:
                continue  # missed
            m = (gt == iid).astype(np.uint8)
            ys, xs = np.nonzero(m)
            size = max(np.ptp(ys), np.ptp(xs)) + 1
            for dup in range(1 + (rng.random() < 0.3)):
                p = np.roll(m, (int(rng.integers(-1, 2) * max(1, size // 25)), int(rng.integers(-1, 2) * max(1, size // 25))), (0, 1))
                it = int(rng.integers(0, 3))
                if it:
                    p = (cv2.dilate if rng.random() < 0.5 else cv2.erode)(p, kernel, iterations=it)
                lab = label if rng.random() > 0.05 else int(rng.choice(list(MEAN_INSTANCES)))
                put(p, lab, rng.uniform(0.3, 1.0) * (0.6 if dup else 1.0))
        for _ in range(int(rng.integers(5, 15))):  # false positives
            m = np.zeros((H, W), np.uint8)
            cv2.ellipse(m, (int(rng.uniform(0, W)), int(rng.uniform(H * 0.4, H * 0.9))),
                        (int(rng.uniform(5, 120)), int(rng.uniform(5, 80))), 0, 0, 360, 1, -1)
            put(m, int(rng.choice(list(MEAN_INSTANCES))), rng.uniform(0.05, 0.5))
        (rdir / f"{core}_pred.txt").write_text("\n".join(lines) + "\n")
        print(f"\rgenerated {i + 1}/{n_images}", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)


def data_stats(data: Path) -> dict:
    import glob

    import numpy as np
    from PIL import Image

    gts = sorted(glob.glob(str(data / "gtFine" / "val" / "*" / "*_gtFine_instanceIds.png")))
    n_inst = sum(int((np.unique(np.asarray(Image.open(g))) >= 1000).sum()) for g in gts)
    n_pred = sum(len(p.read_text().split("\n")) - 1 for p in (data / "results").glob("*.txt"))
    return {"images": len(gts), "gt_instances": n_inst, "predictions": n_pred}


# ----------------------------------------------------------------------------
# cases (children)
# ----------------------------------------------------------------------------
def _gt_and_preds(mod, data: Path):
    import glob

    gts = sorted(glob.glob(str(data / "gtFine" / "val" / "*" / "*_gtFine_instanceIds.png")))
    mod.args.predictionPath = os.path.abspath(data / "results")
    mod.args.predictionWalk = None
    return gts, [mod.getPrediction(g, mod.args) for g in gts]


def _cpu() -> float:
    import resource

    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def child(case: str, data: Path, ratio: float, reference: str) -> dict:
    out = _child(case, data, ratio, reference)
    out["cpu"] = _cpu()  # all threads of the process, imports included
    return out


def _child(case: str, data: Path, ratio: float, reference: str) -> dict:
    tic = time.perf_counter()
    if case.startswith("boundary_api"):
        from boundary_api.cityscapes import evaluate_cityscapes

        r = evaluate_cityscapes(data / "gtFine" / "val", data / "results", iou_type=case.split("-")[1],
                                dilation_ratio=ratio)
        ap = [r["per_class"][c]["AP_per_threshold"] for c in r["instLabels"]]
        return {"wall": time.perf_counter() - tic, "AP": r["AP"], "AP50": r["AP50"], "ap": ap}
    import numpy as np

    if not hasattr(np, "in1d"):  # numpy >= 2.4 removed it; both tools call it
        np.in1d = lambda a, b: np.isin(a, b).ravel()
    tmp = tempfile.mkdtemp()
    os.chdir(tmp)  # cityscapesScripts writes matches.json into the working directory
    if case == "cityscapesscripts-segm":
        import cityscapesscripts.evaluation.evalInstanceLevelSemanticLabeling as mod
    else:
        sys.path.insert(0, reference)
        import boundary_iou.cityscapes_instance_api.evalInstanceLevelSemanticLabeling as mod

        mod.args.iou_type = "boundary"
        mod.args.dilation_ratio = ratio
    # their JSON side files (gtInstances.json cache, matches.json) are not part of the
    # evaluation, and matches.json fails on numpy 2 integers: not written
    mod.writeDict2JSON = lambda *args, **kwargs: None
    mod.args.gtInstancesFile = os.path.join(tmp, "gtInstances.json")
    mod.args.JSONOutput = False
    mod.args.quiet = True
    mod.args.colorized = False
    gts, preds = _gt_and_preds(mod, data)
    res = mod.evaluateImgLists(preds, gts, mod.args)
    ap = np.asarray(res["resultApMatrix"])[0].tolist()
    return {"wall": time.perf_counter() - tic, "AP": res["averages"]["allAp"],
            "AP50": res["averages"]["allAp50%"], "ap": ap}


def run_case(case: str, data: Path, ratio: float, reference: str) -> dict:
    cmd = [sys.executable, __file__, "--child", case, "--data", str(data), "--dilation-ratio", str(ratio),
           "--reference", reference or ""]
    p = subprocess.run(cmd, capture_output=True, text=True)
    for line in p.stdout.splitlines():
        if line.startswith(MARK):
            return json.loads(line[len(MARK):])
    raise RuntimeError(f"{case} failed:\n{p.stderr[-2000:]}")


def max_diff(a, b) -> float:
    import numpy as np

    a, b = np.asarray(a, float), np.asarray(b, float)
    both = np.isnan(a) & np.isnan(b)
    if (np.isnan(a) != np.isnan(b)).any():
        return float("inf")
    return float(np.abs(np.where(both, 0, a - b)).max())


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--images", type=int, default=100, help="images to generate (>= 100 for the README numbers)")
    p.add_argument("--data", default=None, help="data folder (default benchmarks/_data/cityscapes_<images>)")
    p.add_argument("--dilation-ratio", type=float, default=0.005)
    p.add_argument("--reference", default="", help="folder holding the reference's boundary_iou package")
    p.add_argument("--repeat", type=int, default=1, help="runs of the fast cases (best counts)")
    p.add_argument("--cases", default=None,
                   help="comma-separated subset of boundary_api-boundary, boundary_api-segm, "
                        "cityscapesscripts-segm, reference-boundary (default: all available)")
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)
    a = p.parse_args()
    data = Path(a.data) if a.data else HERE / "_data" / f"cityscapes_{a.images}"
    if a.child:
        print(MARK + json.dumps(child(a.child, data, a.dilation_ratio, a.reference)))
        return
    if not (data / "results").is_dir():
        make_data(data, a.images)
    import numpy

    print(f"# Cityscapes instance AP benchmark\n\n{data_stats(data)}; 1024x2048; dilation ratio "
          f"{a.dilation_ratio}; numpy {numpy.__version__}; cores {len(os.sched_getaffinity(0))}; "
          f"load average before {os.getloadavg()[0]:.2f}\n")
    cases = ["boundary_api-boundary", "boundary_api-segm", "cityscapesscripts-segm"]
    if a.reference:
        cases.append("reference-boundary")
    if a.cases:
        cases = [c for c in cases if c in a.cases.split(",")]
    res = {}
    for case in cases:
        reps = a.repeat if case.startswith("boundary_api") else 1
        runs = [run_case(case, data, a.dilation_ratio, a.reference) for _ in range(reps)]
        res[case] = min(runs, key=lambda r: r["wall"])
        print(f"{case:24s} wall {res[case]['wall']:8.2f} s  cpu {res[case]['cpu']:8.2f} s   "
              f"AP {res[case]['AP']:.6f}  AP50 {res[case]['AP50']:.6f}   (load {os.getloadavg()[0]:.2f})", flush=True)
    print()
    if "boundary_api-segm" in res and "cityscapesscripts-segm" in res:
        print(f"boundary_api segm vs cityscapesScripts: max |AP diff| "
              f"{max_diff(res['boundary_api-segm']['ap'], res['cityscapesscripts-segm']['ap']):.3g}")
    if "boundary_api-boundary" not in res:
        return
    ours = res["boundary_api-boundary"]["wall"]
    if "cityscapesscripts-segm" in res:
        print(f"boundary_api boundary is {res['cityscapesscripts-segm']['wall'] / ours:.1f}x faster than "
              f"cityscapesScripts' segm (cpu time: "
              f"{res['cityscapesscripts-segm']['cpu'] / res['boundary_api-boundary']['cpu']:.1f}x less)")
    if "reference-boundary" in res:
        print(f"boundary_api boundary vs reference: max |AP diff| "
              f"{max_diff(res['boundary_api-boundary']['ap'], res['reference-boundary']['ap']):.3g}; "
              f"{res['reference-boundary']['wall'] / ours:.1f}x faster (cpu time: "
              f"{res['reference-boundary']['cpu'] / res['boundary_api-boundary']['cpu']:.1f}x less)")


if __name__ == "__main__":
    main()
