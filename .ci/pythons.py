"""The supported CPython versions that .ci/run installs the package on, besides
its own interpreter: the oldest one (``requires-python`` in pyproject.toml) and
the newest one (of the ``Programming Language :: Python :: 3.N`` classifiers)
that pyenv provides on this machine.

Prints one ``X.Y.Z PATH`` line per interpreter (the newest patch release of
that minor version; one line when both are the same) on stdout, and on stderr
what is missing, which is then not tested.  Runs on any supported Python (no
tomllib: pyproject.toml is read with two regular expressions).
"""
import os
import re
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def supported_minors(pyproject_text):
    """``(oldest, [every minor version of the classifiers])`` as ints (3.N -> N)."""
    m = re.search(r'^requires-python\s*=\s*">=\s*3\.(\d+)"', pyproject_text, re.M)
    if not m:
        raise SystemExit("pyproject.toml: no requires-python = \">=3.N\"")
    oldest = int(m.group(1))
    minors = sorted(int(n) for n in re.findall(r'"Programming Language :: Python :: 3\.(\d+)"', pyproject_text))
    if not minors or minors[0] != oldest:
        raise SystemExit(f"pyproject.toml: requires-python says 3.{oldest}, the classifiers start at "
                         f"{'3.%d' % minors[0] if minors else 'nothing'}")
    return oldest, minors


def pyenv_pythons():
    """``{minor: (patch, path)}`` of the newest CPython 3.N.P of each minor in pyenv."""
    root = os.environ.get("PYENV_ROOT")
    if not root and shutil.which("pyenv"):
        root = subprocess.run(["pyenv", "root"], capture_output=True, text=True).stdout.strip()
    if not root or not os.path.isdir(os.path.join(root, "versions")):
        return None
    found = {}
    for name in os.listdir(os.path.join(root, "versions")):
        m = re.fullmatch(r"3\.(\d+)\.(\d+)", name)
        path = os.path.join(root, "versions", name, "bin", "python3")
        if m and os.access(path, os.X_OK):
            minor, patch = int(m.group(1)), int(m.group(2))
            if minor not in found or patch > found[minor][0]:
                found[minor] = (patch, path)
    return found


def main():
    with open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8") as f:
        oldest, minors = supported_minors(f.read())
    found = pyenv_pythons()
    if found is None:
        print("no pyenv on this machine: the oldest and newest supported Pythons are not tested",
              file=sys.stderr)
        return 0
    chosen = []
    if oldest in found:
        chosen.append(oldest)
    else:
        print(f"pyenv has no Python 3.{oldest} (the oldest supported): not tested", file=sys.stderr)
    newest = max((n for n in minors if n in found), default=None)
    if newest is not None and newest not in chosen:
        chosen.append(newest)
    missing = [f"3.{n}" for n in minors if newest is None or n > newest]
    if missing:
        print(f"pyenv has no Python {', '.join(missing)} (supported): not tested", file=sys.stderr)
    for n in chosen:
        patch, path = found[n]
        print(f"3.{n}.{patch} {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
