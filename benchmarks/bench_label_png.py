"""Time to read one 854x480 label-map PNG (DAVIS size): the package's own
decoder against Pillow's ``np.array(Image.open(path))``.

Writes ``--files`` DAVIS-like label maps (a few smooth objects on background,
indices 0..N) with Pillow, as palette PNGs (8-bit with the DAVIS palette, and
Pillow's 2-bit reduction of a short palette), 8-bit greyscale and 16-bit
greyscale, into a temporary folder, checks that both readers give the same
arrays, then times per file, the fastest of ``--repeat`` runs, each reader in
turn: Pillow; ``boundary_api.masks.imagefiles.read_label_map`` (the file read,
its size checked, the native decoder); the decoder alone on the file's bytes
with a reused scratch (``_png.png_label_map``, what a video kernel calling the
C interface pays).  Prints the median per file of each, in microseconds.

    python benchmarks/bench_label_png.py [--files N] [--repeat N]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import md_table, print_header  # noqa: E402

H, W = 480, 854


def davis_like(rng, objects: int):
    """An (H, W) uint8 label map: ``objects`` wobbly ellipses over background 0."""
    import numpy as np

    yy, xx = np.mgrid[:H, :W]
    lab = np.zeros((H, W), np.uint8)
    for k in range(1, objects + 1):
        cy, cx = rng.integers(60, H - 60), rng.integers(80, W - 80)
        ry, rx = rng.integers(20, 160), rng.integers(20, 220)
        wobble = 0.15 * np.sin(xx / rng.uniform(4, 12)) * np.cos(yy / rng.uniform(4, 12))
        lab[((yy - cy) / ry) ** 2 + ((xx - cx) / rx) ** 2 <= 1 + wobble] = k
    return lab


def write_files(folder: Path, n: int):
    """{kind: [paths]} of n files of each kind."""
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(0)
    davis = [0, 0, 0, 128, 0, 0, 0, 128, 0, 128, 128, 0, 0, 0, 128, 128, 0, 128, 0, 128, 128, 128, 128, 128]
    out = {"palette 8-bit": [], "palette 2-bit": [], "grey 8-bit": [], "grey 16-bit": []}
    for i in range(n):
        lab = davis_like(rng, int(rng.integers(1, 6)))
        im = Image.fromarray(lab, "P")
        im.putpalette(davis + [0] * (768 - len(davis)))
        p = folder / f"p8_{i}.png"
        im.save(p)
        out["palette 8-bit"].append(p)
        small = Image.fromarray(np.minimum(lab, 3), "P")
        small.putpalette(davis[:12])
        p = folder / f"p2_{i}.png"
        small.save(p, bits=2)
        out["palette 2-bit"].append(p)
        p = folder / f"g8_{i}.png"
        Image.fromarray(lab, "L").save(p)
        out["grey 8-bit"].append(p)
        p = folder / f"g16_{i}.png"
        Image.fromarray(lab.astype(np.uint16) * 1000).save(p)
        out["grey 16-bit"].append(p)
    return out


def best(fn, repeat: int) -> float:
    t = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter_ns()
        fn()
        t = min(t, time.perf_counter_ns() - t0)
    return t / 1e3


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=20, help="files of each kind (default 20)")
    ap.add_argument("--repeat", type=int, default=30, help="runs per file and reader (default 30)")
    args = ap.parse_args()
    import numpy as np
    from PIL import Image

    from boundary_api.masks import _png
    from boundary_api.masks.imagefiles import read_label_map

    import PIL

    print_header("label-map PNG decoding, 854x480", 1)
    print(f"- Pillow {PIL.__version__}\n")
    rows = []
    scratch = np.empty(H * (2 * W + 1) + 64, np.uint8)
    with tempfile.TemporaryDirectory() as tmp:
        files = write_files(Path(tmp), args.files)
        for kind, paths in files.items():
            times = {"Pillow": [], "read_label_map": [], "decoder alone": []}
            sizes = []
            for p in paths:
                blob = p.read_bytes()
                sizes.append(len(blob))

                def pillow():
                    with Image.open(p) as im:
                        return np.array(im)

                want = pillow()
                got = read_label_map(p)
                if not (np.array_equal(got, want) and got.dtype == want.dtype):
                    raise SystemExit(f"{p}: the readers disagree")
                if _png.png_label_map(blob) is None:
                    raise SystemExit(f"{p}: not decoded natively")
                times["Pillow"].append(best(pillow, args.repeat))
                times["read_label_map"].append(best(lambda: read_label_map(p), args.repeat))
                times["decoder alone"].append(best(lambda: _png.png_label_map(blob, scratch), args.repeat))
            med = {k: statistics.median(v) for k, v in times.items()}
            rows.append([kind, f"{statistics.median(sizes) / 1024:.1f}", f"{med['Pillow']:.0f}",
                         f"{med['read_label_map']:.0f}", f"{med['decoder alone']:.0f}",
                         f"{med['Pillow'] / med['read_label_map']:.1f}x"])
    print(md_table(["kind", "file KiB (median)", "Pillow us", "read_label_map us", "decoder alone us",
                    "Pillow / read_label_map"], rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
