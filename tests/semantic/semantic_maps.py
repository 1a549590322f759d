"""Generated label maps for the semantic tests: many touching classes, thin structures,
ignore regions, and predictions that shift, relabel and leave pixels unpredicted."""
import cv2
import numpy as np


def random_gt(rng, h, w, n, ignore=255, thin=6, ignore_boxes=2):
    """A ground truth map: a coarse grid of random classes (many touching regions),
    ellipses, 1-2 pixel lines and some ignore rectangles."""
    gh, gw = int(rng.integers(2, 9)), int(rng.integers(2, 9))
    small = rng.integers(0, n, (gh, gw)).astype(np.uint8)
    m = cv2.resize(small, (w, h), interpolation=cv2.INTER_NEAREST)
    for _ in range(int(rng.integers(1, 4))):
        cx, cy = int(rng.integers(0, w)), int(rng.integers(0, h))
        ax, ay = int(rng.integers(1, max(2, w // 3))), int(rng.integers(1, max(2, h // 3)))
        cv2.ellipse(m, (cx, cy), (ax, ay), float(rng.uniform(0, 180)), 0, 360, int(rng.integers(0, n)), -1)
    for _ in range(thin):
        p1 = (int(rng.integers(0, w)), int(rng.integers(0, h)))
        p2 = (int(rng.integers(0, w)), int(rng.integers(0, h)))
        cv2.line(m, p1, p2, int(rng.integers(0, n)), int(rng.integers(1, 3)))
    for _ in range(ignore_boxes):
        y0, x0 = int(rng.integers(0, h)), int(rng.integers(0, w))
        m[y0:y0 + int(rng.integers(1, h // 3 + 2)), x0:x0 + int(rng.integers(1, w // 3 + 2))] = ignore
    return m


def perturb(rng, gt, n, ignore=255):
    """A prediction from a ground truth map: shifted, partly relabelled (also with a
    class the ground truth may lack), some lines, and a few unpredicted pixels."""
    h, w = gt.shape
    p = np.roll(gt, (int(rng.integers(-3, 4)), int(rng.integers(-3, 4))), axis=(0, 1)).copy()
    p[p == ignore] = rng.integers(0, n)  # predictions on ignore regions are real classes
    for _ in range(3):
        y0, x0 = int(rng.integers(0, h)), int(rng.integers(0, w))
        p[y0:y0 + int(rng.integers(1, h // 4 + 2)), x0:x0 + int(rng.integers(1, w // 4 + 2))] = rng.integers(0, n)
    for _ in range(3):
        p1 = (int(rng.integers(0, w)), int(rng.integers(0, h)))
        p2 = (int(rng.integers(0, w)), int(rng.integers(0, h)))
        cv2.line(p, p1, p2, int(rng.integers(0, n)), 1)
    holes = rng.random((h, w)) < 0.002
    p[holes] = ignore  # "no class"
    return p
