"""Make the video object segmentation golden values (tests/data/video/*.json).

Generates every case of ``vos_cases.py`` with boundary_api.video.synthetic,
runs the official evaluators on them, unmodified, in a child Python that has
their dependencies (``official_vos.py``), and stores what they returned,
computed internally, printed and wrote.  Our own code: the official code is
read from checkouts outside the repository::

    BOUNDARY_API_DAVIS2017=/work/official/davis2017-evaluation \\
    BOUNDARY_API_SAV=/work/official/sav \\
    BOUNDARY_API_VOS_BENCHMARK=/work/official/vos-benchmark \\
    BOUNDARY_API_VOS_PYTHON=/work/venvs/official-vos/bin/python \\
    python tests/video/make_vos_golden.py

(or the same as ``--davis2017``, ``--sav``, ``--vos-benchmark``, ``--python``).
``--cases a,b`` remakes only those cases (the others are kept from the
existing files).  Each checkout's commit is read from a ``COMMIT`` file in it
(written when it was extracted with ``git archive``) or from ``git rev-parse``.
"""
import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import vos_cases  # noqa: E402

OUT = os.path.join(os.path.dirname(HERE), "data", "video")
FILES = {"davis": "davis_golden.json", "sav": "sav_golden.json"}


def commit_of(path):
    if not path:
        return None
    f = os.path.join(path, "COMMIT")
    if os.path.exists(f):
        with open(f) as fh:
            return fh.read().strip()
    try:
        return subprocess.run(["git", "-C", path, "rev-parse", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def scrub(x, root):
    """``x`` with the case's folder in every string written as ``<case>``."""
    if isinstance(x, dict):
        return {k: scrub(v, root) for k, v in x.items()}
    if isinstance(x, list):
        return [scrub(v, root) for v in x]
    if isinstance(x, str):
        return x.replace(root, "<case>")
    return x


# ----------------------------------------------------------------------------
# what make_vos_golden.py and make_mose_lvos_golden.py share
# ----------------------------------------------------------------------------

def case_names(ap, cases, given):
    """The names of ``--cases`` (all of ``cases`` when empty); unknown ones refused."""
    names = [n for n in given.split(",") if n] or list(cases)
    unknown = [n for n in names if n not in cases]
    if unknown:
        ap.error(f"unknown cases {unknown}")
    return names


@contextlib.contextmanager
def scratch(prefix, keep):
    """A scratch folder for the generated cases, removed afterwards unless ``keep``."""
    work = tempfile.mkdtemp(prefix=prefix)
    try:
        yield work
    finally:
        if keep:
            print(f"cases kept in {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


class Runs:
    """The cases ``names`` of ``cases`` (a :class:`vos_cases.Cases`) written under
    ``work`` and run by an official script: :meth:`run`, then :meth:`store`."""

    def __init__(self, cases, names, work):
        self.cases, self.names, self.work = cases, names, work
        self.jobs, self.built = [], {}
        for name in names:
            t = time.perf_counter()
            root = os.path.join(work, name)
            jobs, arrays = cases.build(name, root)
            self.built[name] = (root, len(self.jobs), len(jobs), vos_cases.fingerprint(arrays))
            self.jobs += jobs
            print(f"built {name}: {len(jobs)} jobs, {time.perf_counter() - t:.1f} s", flush=True)

    def run(self, python, script, *flags, what="official runs"):
        """``python script JOBS.json OUT.json flags...`` in the scratch folder: OUT.json read."""
        jobs_file, out_file = os.path.join(self.work, "jobs.json"), os.path.join(self.work, "out.json")
        with open(jobs_file, "w") as f:
            json.dump(self.jobs, f)
        t = time.perf_counter()
        subprocess.run([python, os.path.join(HERE, script), jobs_file, out_file, *flags], check=True,
                       cwd=self.work)
        print(f"{what}: {time.perf_counter() - t:.1f} s", flush=True)
        with open(out_file) as f:
            self.ran = json.load(f)
        return self.ran

    def store(self, path, kind, about, official):
        """The golden file ``path``: its cases of ``kind`` made again from the run (the
        others kept), ``about``, ``official`` and the run's versions."""
        doc = {"cases": {}}
        if os.path.exists(path):
            with open(path) as f:
                doc = json.load(f)
        doc["about"] = about
        doc["official"] = official
        doc["versions"] = self.ran["versions"]
        got = doc.setdefault("cases", {})
        results = self.ran["results"]
        for name in self.names:
            c = self.cases[name]
            if c.kind != kind:
                continue
            root, first, n, fp = self.built[name]
            got[name] = {"covers": c.covers, "slow": c.slow, "fingerprint": fp,
                         "jobs": [{"job": self.cases.relative(j, root), "result": scrub(r, root)}
                                  for j, r in zip(self.jobs[first:first + n], results[first:first + n])]}
        doc["cases"] = {k: got[k] for k in self.cases if k in got}
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            json.dump(doc, f, indent=None, separators=(",", ":"))
            f.write("\n")
        print(f"wrote {path} ({os.path.getsize(path) / 1e3:.0f} kB)")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--davis2017", default=os.environ.get("BOUNDARY_API_DAVIS2017"))
    ap.add_argument("--sav", default=os.environ.get("BOUNDARY_API_SAV"))
    ap.add_argument("--vos-benchmark", default=os.environ.get("BOUNDARY_API_VOS_BENCHMARK"))
    ap.add_argument("--python", default=os.environ.get("BOUNDARY_API_VOS_PYTHON", sys.executable),
                    help="a Python with the official code's dependencies")
    ap.add_argument("--cases", default="", help="comma-separated case names (default: all)")
    ap.add_argument("--out", default=OUT)
    ap.add_argument("--keep", action="store_true", help="keep the scratch folder with the generated cases")
    a = ap.parse_args(argv)
    if not a.davis2017 or not a.sav:
        ap.error("give the official checkouts: --davis2017 DIR --sav DIR (or BOUNDARY_API_DAVIS2017 / BOUNDARY_API_SAV)")
    names = case_names(ap, vos_cases.CASES, a.cases)
    with scratch("vos_golden_", a.keep) as work:
        runs = Runs(vos_cases.CASES, names, work)
        runs.run(a.python, "official_vos.py", "--davis2017", a.davis2017, "--sav", a.sav,
                 *(["--vos-benchmark", a.vos_benchmark] if a.vos_benchmark else []))
        official = {"davis2017-evaluation": {"repo": "davisvideochallenge/davis2017-evaluation",
                                             "commit": commit_of(a.davis2017)},
                    "sav": {"repo": "facebookresearch/sam2 (sav_dataset)", "commit": commit_of(a.sav)},
                    "vos-benchmark": {"repo": "hkchengrex/vos-benchmark", "commit": commit_of(a.vos_benchmark)}}
        for kind, fname in FILES.items():
            runs.store(os.path.join(a.out, fname), kind,
                       "Golden values of the official evaluators on data generated by "
                       "boundary_api.video.synthetic (tests/video/vos_cases.py); see README.md.", official)


if __name__ == "__main__":
    main()
