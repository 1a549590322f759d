"""The differential fuzz suite's runner (issue 40, item 5): cases of one family
compared in child processes with a memory cap and a timeout.

A case is a plain picklable object (file bytes and a few settings) made by the
test module from a fixed seed.  :func:`run_cases` writes the cases to a file
and starts worker processes (``fuzz_worker.py``) that compare them one after the
other through the public API, boundary_api against the original (json +
pycocotools / lvis, Pillow), and print one JSON line per case.  The address
space of a worker is capped (``RLIMIT_AS``), and a case that takes longer than
the timeout kills its worker.  A worker that dies (a signal, the memory cap, a
hang) leaves the case it was on unreported: that case is then run again twice,
boundary_api alone and the original alone, which tells whose crash it was, and
a new worker goes on with the next case.
"""
from __future__ import annotations

import collections
import json
import os
import pickle
import selectors
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.dirname(HERE)

#: a worker's address space (bytes): the imports take ~0.4 GB
MEMORY_CAP = 2 << 30
#: seconds one case may take
CASE_TIMEOUT = 60.0

#: outcomes that fail the test (the others are counted)
FAILURES = ("mismatch", "ours_only", "theirs_only", "crash_ours", "hang_ours", "error")

#: counts of every family run in this session, for the terminal summary
SESSION = collections.OrderedDict()


def _env():
    sys.path.insert(0, TESTS)
    from conftest import child_env

    env = child_env()
    env["OPENBLAS_NUM_THREADS"] = "1"
    env["OMP_NUM_THREADS"] = "1"
    env["PYTHONHASHSEED"] = "0"
    env["PYTHONPATH"] = os.pathsep.join([HERE, TESTS] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    return env


def _run_worker(family: str, path: str, indices: list, side: str, env: dict, timeout: float = CASE_TIMEOUT):
    """Run cases ``indices`` in one worker after the other, restarting after a
    death; yields (index, outcome dict), a dead worker's case as
    ``{"status": "died", "detail": ...}`` (``timeout``: seconds a case may take)."""
    todo = list(indices)
    while todo:
        idx_file = path + f".{os.getpid()}.{todo[0]}.idx"
        with open(idx_file, "w") as f:
            json.dump(todo, f)
        proc = subprocess.Popen([sys.executable, os.path.join(HERE, "fuzz_worker.py"), family, path, idx_file, side,
                                 str(MEMORY_CAP)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                                cwd=os.path.dirname(path))
        sel = selectors.DefaultSelector()
        sel.register(proc.stdout, selectors.EVENT_READ)
        buf = b""
        done = 0
        deadline = time.monotonic() + timeout + 30  # (the first case also waits for the imports)
        hung = False
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                hung = True
                proc.kill()
                break
            if not sel.select(timeout=left):
                continue
            chunk = os.read(proc.stdout.fileno(), 1 << 16)
            if not chunk:
                break
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                rec = json.loads(line)
                yield todo[done], rec
                done += 1
                deadline = time.monotonic() + timeout
        sel.close()
        proc.stdout.close()
        err = proc.stderr.read().decode(errors="replace")[-2000:]
        proc.stderr.close()
        rc = proc.wait()
        os.unlink(idx_file)
        if done < len(todo):
            how = "hang" if hung else f"exit {rc}"
            yield todo[done], {"status": "died", "detail": f"{how}: {err.strip().splitlines()[-1:] or ''}"}
            todo = todo[done + 1:]
        else:
            todo = []


def run_cases(family: str, cases: list, workers: int = 2, timeout: float = CASE_TIMEOUT, env_extra=None) -> dict:
    """Compare every case; returns ``{"counts": {status: n}, "failures":
    [(index, outcome), ...], "outcomes": {index: outcome}, "n": len(cases),
    "seconds": ...}`` and records the counts for the session's summary.  A
    case that kills the original's side (``crash_theirs``) keeps what the
    package's side alone gave (``"ours"``: its own outcome dict); ``timeout``:
    seconds a case may take before it counts as never ending; ``env_extra``:
    more environment variables of the workers."""
    env = dict(_env(), **(env_extra or {}))
    t0 = time.monotonic()
    outcomes = {}
    # the cases' files in memory where the system has a tmpfs (a disk's
    # small writes cost milliseconds each)
    shm = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
    with tempfile.TemporaryDirectory(prefix=f"fuzz_{family}_", dir=shm) as tmp:
        path = os.path.join(tmp, "cases.pkl")
        with open(path, "wb") as f:
            pickle.dump(cases, f)
        shares = [list(range(k, len(cases), workers)) for k in range(workers)]
        gens = [_run_worker(family, path, share, "both", env, timeout) for share in shares if share]
        # the workers run side by side; their lines are read in turn
        import threading

        lock = threading.Lock()

        def drain(gen):
            for i, rec in gen:
                with lock:
                    outcomes[i] = rec

        threads = [threading.Thread(target=drain, args=(g,)) for g in gens]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        # a case that killed its worker: whose crash was it?
        for i, rec in list(outcomes.items()):
            if rec["status"] != "died":
                continue
            ours = dict(_run_worker(family, path, [i], "ours", env, timeout))[i]
            theirs = dict(_run_worker(family, path, [i], "theirs", env, timeout))[i]
            if ours["status"] == "died":
                status = "hang_ours" if ours["detail"].startswith("hang") else "crash_ours"
                outcomes[i] = {"status": status, "detail": ours["detail"]}
            elif theirs["status"] == "died":
                outcomes[i] = {"status": "crash_theirs", "detail": theirs["detail"], "ours": ours}
            else:
                outcomes[i] = {"status": "error", "detail": f"worker died, neither side alone: {rec['detail']}"}
    counts = collections.Counter(rec["status"] for rec in outcomes.values())
    missing = len(cases) - len(outcomes)
    if missing:
        counts["error"] += missing
    failures = sorted((i, rec) for i, rec in outcomes.items() if rec["status"] in FAILURES)
    result = {"n": len(cases), "counts": dict(counts), "failures": failures, "outcomes": outcomes,
              "seconds": time.monotonic() - t0, "kinds": collections.Counter(
                  c.get("family_kind", family) if isinstance(c, dict) else family for c in cases)}
    SESSION[family] = result
    return result


def describe(result: dict) -> str:
    """One paragraph: inputs, outcomes, time, and the first failures."""
    lines = [f"{result['n']} inputs in {result['seconds']:.1f} s: "
             + ", ".join(f"{k} {v}" for k, v in sorted(result["counts"].items()))]
    for i, rec in result["failures"][:10]:
        lines.append(f"  case {i}: {rec['status']}: {rec.get('detail', '')[:400]}")
    return "\n".join(lines)
