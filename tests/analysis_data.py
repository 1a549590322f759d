"""Hand-built COCO ground truth and results (squares on 100 x 100 images) for the
error analysis and report tests."""
import contextlib
import io

import numpy as np
import pycocotools.mask as mask_utils

from boundary_api import COCO

H = W = 100


def square(y, x, s, t=None):
    m = np.zeros((H, W), np.uint8)
    m[y:y + (t or s), x:x + s] = 1
    return m


def rle(m):
    r = mask_utils.encode(np.asfortranarray(m))
    r["counts"] = r["counts"].decode("ascii")
    return r


def build(gts, dts, n_images=1, n_cats=2):
    """gts: (image, cat, mask[, iscrowd]); dts: (image, cat, mask, score)."""
    anns = []
    for i, g in enumerate(gts, 1):
        img, cat, m = g[:3]
        crowd = g[3] if len(g) > 3 else 0
        anns.append({"id": i, "image_id": img, "category_id": cat, "segmentation": rle(m),
                     "area": float(m.sum()), "bbox": list(map(float, mask_utils.toBbox(rle(m)))),
                     "iscrowd": crowd})
    ds = {"images": [{"id": i, "height": H, "width": W, "file_name": f"{i}.png"} for i in range(1, n_images + 1)],
          "categories": [{"id": c, "name": f"c{c}"} for c in range(1, n_cats + 1)],
          "annotations": anns}
    with contextlib.redirect_stdout(io.StringIO()):
        gt = COCO.from_dataset(ds)
        dt = gt.loadRes([{"image_id": img, "category_id": cat, "segmentation": rle(m), "score": s}
                         for img, cat, m, s in dts])
    return gt, dt
