"""Time of the kernels' RLE string decoder against the previous one, per string.

Decodes every detection string of results files (default: the LVIS-like set
``lvis_c1_n300_s0_x1`` and the COCO-val-like ``val_c50_d1_n0_g36781_s0`` of
``benchmarks/_data``, made by ``run_all.py --build-only lvis val2017``) with
the decoder the kernels use (``_rle._decode``: intervals, and ``_rle._rle_total``:
totals only) and with the previous decoder kept beside it for the tests
(``_rle._decode_ref_impl``), one string after the other into one reused buffer,
as the IoU step does.  The strings are cut into groups of ``--group``; each
group is decoded ``--repeat`` times by each decoder in turn and its fastest
time kept, so that another job taking the CPU for a while spoils one repeat of
a group, not the result; the table sums the groups' minima.  The two
decoders' totals and intervals are checked equal first.

    python benchmarks/bench_rle_decode.py [--repeat N] [--group N] [DT.json ...]
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import HERE, md_table, print_header  # noqa: E402

DEFAULT = [HERE / "_data" / "lvis_c1_n300_s0_x1" / "dt.json",
           HERE / "_data" / "val_c50_d1_n0_g36781_s0" / "dt.json"]
#: (previous decoder, intervals) -> label
MODES = {(True, True): "previous _decode", (False, True): "_decode",
         (True, False): "previous _rle_total", (False, False): "_rle_total"}


def strings_of(path: Path) -> list:
    """The RLE strings (bytes) of a results file's compressed masks."""
    out = []
    for r in json.loads(path.read_text()):
        c = r.get("segmentation", {}).get("counts") if isinstance(r.get("segmentation"), dict) else None
        if isinstance(c, str):
            out.append(c.encode())
        elif isinstance(c, bytes):
            out.append(c)
    return out


def measure(strings: list, repeat: int, group: int) -> dict:
    """Summed per-group minima (ns) of every mode of :data:`MODES`."""
    import numpy as np

    from boundary_api.masks import _rle

    table = _rle.StringTable(strings)
    new = _rle._decode_table(table)
    old = _rle._decode_table(table, reference=True)
    if not all(np.array_equal(a, b) for a, b in zip(new, old)):
        raise SystemExit("the two decoders disagree")
    tables = [_rle.StringTable(strings[i:i + group]) for i in range(0, len(strings), group)]
    total = dict.fromkeys(MODES, 0)
    for t in tables:
        best = dict.fromkeys(MODES, float("inf"))
        for _ in range(repeat):
            for ref, runs in MODES:
                t0 = time.perf_counter_ns()
                _rle._decode_table(t, reference=ref, runs=runs, keep=False)
                best[ref, runs] = min(best[ref, runs], time.perf_counter_ns() - t0)
        for k in MODES:
            total[k] += best[k]
    return total


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="*", type=Path, help="results files (default: the two sets above)")
    ap.add_argument("--repeat", type=int, default=15, help="runs of each group per decoder (default 15)")
    ap.add_argument("--group", type=int, default=200, help="strings per group (default 200)")
    args = ap.parse_args()
    files = args.files or DEFAULT
    missing = [str(f) for f in files if not f.is_file()]
    if missing:
        print(f"missing: {', '.join(missing)} (python benchmarks/run_all.py --build-only lvis val2017)",
              file=sys.stderr)
        return 2
    print_header("RLE string decoder: the kernels' against the previous one", 1)
    rows = []
    for f in files:
        strings = strings_of(f)
        chars = sum(map(len, strings))
        total = measure(strings, args.repeat, args.group)
        for runs in (True, False):
            old, new = total[True, runs], total[False, runs]
            rows.append([f.parent.name, len(strings), round(chars / len(strings)), MODES[False, runs],
                         f"{old / len(strings):.0f}", f"{new / len(strings):.0f}",
                         f"{new / chars:.2f}", f"{old / new:.2f}x"])
    print(md_table(["set", "strings", "chars/string", "decoder", "previous ns/string", "ns/string",
                    "ns/char", "speed-up"], rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
