"""Make tests/data/video/pandas_tables.json: ``DataFrame.to_string(index=False)`` of
columns chosen to exercise pandas' float formatting (trailing zeros trimmed equally, NaN,
negatives, values below 1e-6 that switch a column to exponents, exact zeros and ones),
which boundary_api.video.files.pandas_table reproduces for evaluation_method.py's tables.

Run with a Python that has pandas (the official-vos environment of
tests/data/video/README.md)::

    /work/venvs/official-vos/bin/python tests/video/make_pandas_tables.py
"""
import json
import math
import os

import pandas as pd

OUT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "video",
                   "pandas_tables.json")

#: case -> [(heading, values)]; floats given as repr strings, "nan" for NaN
CASES = {
    "global": [("J&F-Mean", [0.557132]), ("J-Mean", [0.5039849]), ("J-Decay", [-0.02872]), ("F-Mean", [0.5]),
               ("F-Decay", [float("nan")])],
    "trim": [("Sequence", ["a_1", "bb_2", "c_10"]), ("J-Mean", [0.5, 0.25, 0.125]), ("F-Mean", [1.0, 0.0, 0.5]),
             ("B-Mean", [0.1234567, 0.1, 0.2])],
    "exponent": [("J-Decay", [1e-17, -0.5, 0.25]), ("F-Decay", [0.0, -0.0, 5e-7]), ("B-Decay", [1e-6, 0.3, 0.0])],
    "nan_column": [("Sequence", ["x_1", "y_1"]), ("J-Mean", [float("nan"), float("nan")]),
                   ("F-Mean", [float("nan"), 0.999999949])],
    "long_names": [("Sequence", ["a-very-long-sequence-name_12", "s_1"]), ("J-Mean", [0.123456789, 0.9999995])],
}


def _enc(v):
    return "nan" if isinstance(v, float) and math.isnan(v) else v


def main():
    out = {"pandas": pd.__version__, "cases": {}}
    for case, columns in CASES.items():
        frame = pd.DataFrame({h: v for h, v in columns})
        out["cases"][case] = {"columns": [[h, [_enc(x) for x in v]] for h, v in columns],
                              "text": frame.to_string(index=False)}
    with open(OUT, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
