"""Every code example of README.md and docs/*.md runs, so none goes stale.

- A ```python block runs as written (each block is self-contained: its own
  imports), in a scratch folder where ``tests/`` and ``examples/`` of the
  checkout are reachable by the relative paths the examples use.
- In a ```bash / ```sh / ```console block, every command line that starts with
  ``boundary-eval`` runs (backslash continuations joined), with a time limit,
  and must exit 0.  Other lines (``pip install ...``, ``pytest``) are not run.
- An HTML comment on the line before a block says how it runs:
  ``<!-- docs-test: slow -->`` puts it in the slow tier (``pytest -m slow``);
  ``<!-- docs-test: requires detectron2 -->`` runs it only where that module
  imports (Detectron2 is not on PyPI).  No other way to leave a block out.
  ``<!-- docs-test: warns <regex> -->`` says that the example shows a
  ``UserWarning`` matching ``<regex>`` (its output, asserted); any other
  warning it gives is reported as usual.
"""
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_INCLUDE = re.compile(r"^`{3,}\{include\}\s+(\S+)", re.M)


def included_files(pages):
    """The files the manual's pages pull in with MyST's ``{include}`` (CHANGELOG.md,
    benchmarks/README.md, ...): they are pages of the site too."""
    return sorted({(page.parent / m.group(1)).resolve() for page in pages
                   for m in _INCLUDE.finditer(page.read_text(encoding="utf-8"))})


DOCS = sorted((ROOT / "docs").glob("*.md"))
PAGES = [ROOT / "README.md"] + DOCS + included_files(DOCS)
# the width of the manual's code blocks: what a 1280 px window shows without scrolling
# (tests/test_docs_browser.py checks the rendered pages)
MAX_COLUMNS = 100
SHELL = {"bash", "sh", "console", "shell"}
COMMAND_TIMEOUT = 300

_FENCE = re.compile(r"^(`{3,})\s*(\S*).*$")
_MARK = re.compile(r"^<!--\s*docs-test:\s*(.*?)\s*-->$")


def code_blocks(path: Path):
    """``(language, line number of the opening fence, text, marks)`` of each fenced block."""
    lines = path.read_text(encoding="utf-8").splitlines()
    out, i = [], 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, lang = m.group(1), m.group(2).lower()
        marks = []
        j = i - 1
        while j >= 0 and _MARK.match(lines[j].strip()):
            marks.append(_MARK.match(lines[j].strip()).group(1))
            j -= 1
        body = []
        i += 1
        while i < len(lines) and lines[i].rstrip() != fence:
            body.append(lines[i])
            i += 1
        out.append((lang, i - len(body), "\n".join(body) + "\n", marks))
        i += 1
    return out


def shell_commands(text: str):
    """The ``boundary-eval`` command lines of a shell block, as argument lists."""
    joined, cur = [], ""
    for line in text.splitlines():
        if line.rstrip().endswith("\\"):
            cur += line.rstrip()[:-1] + " "
            continue
        joined.append(cur + line)
        cur = ""
    cmds = []
    for line in joined:
        line = line.strip()
        if line.startswith("$ "):
            line = line[2:]
        if line.startswith("boundary-eval"):
            cmds.append(shlex.split(line, comments=True))
    return cmds


# optional packages that have a test tier of their own (markers in pyproject.toml), and
# the tier of packages that are installed only there (.ci/run's torch tier installs lightning)
OPTIONAL_TIERS = {"detectron2": "detectron2", "torch": "torch", "lightning": "torch", "mmdet": "mmdet"}


def _cases():
    cases = []
    for page in PAGES:
        for lang, line, text, marks in code_blocks(page):
            if lang != "python" and not (lang in SHELL and shell_commands(text)):
                continue
            bad = [m for m in marks if m != "slow" and not m.startswith(("requires ", "warns "))]
            assert not bad, f"{page.name}:{line}: unknown docs-test mark {bad}"
            pytest_marks = [pytest.mark.slow] if "slow" in marks else []
            # an example that needs an optional package belongs to that package's tier
            pytest_marks += [getattr(pytest.mark, OPTIONAL_TIERS[m.split(None, 1)[1]]) for m in marks
                             if m.startswith("requires ") and m.split(None, 1)[1] in OPTIONAL_TIERS]
            cases.append(pytest.param(page, lang, line, text, marks, marks=pytest_marks,
                                      id=f"{page.relative_to(ROOT)}:{line}"))
    return cases


@pytest.fixture
def scratch(tmp_path, monkeypatch):
    """A working folder in which ``tests/data/...`` and ``examples/...`` resolve."""
    for name in ("tests", "examples"):
        (tmp_path / name).symlink_to(ROOT / name)
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("page, lang, line, text, marks", _cases())
def test_example_runs(page, lang, line, text, marks, scratch):
    for m in marks:
        if m.startswith("requires "):
            pytest.importorskip(m.split(None, 1)[1])
    where = f"{page.name}:{line}"
    if lang == "python":
        code = compile(text, where, "exec")
        warns = [m.split(None, 1)[1] for m in marks if m.startswith("warns ")]
        if warns:
            with pytest.warns(UserWarning, match=warns[0]):
                exec(code, {"__name__": "__docs_example__"})
        else:
            exec(code, {"__name__": "__docs_example__"})
        return
    for argv in shell_commands(text):
        proc = subprocess.run([sys.executable, "-m", "boundary_api.cli"] + argv[1:], cwd=scratch,
                              capture_output=True, text=True, timeout=COMMAND_TIMEOUT)
        assert proc.returncode == 0, f"{where}: {' '.join(argv)} exited {proc.returncode}:\n{proc.stderr[-2000:]}"


def test_every_page_is_found_and_has_runnable_examples():
    names = {p.name for p in PAGES}
    assert "README.md" in names and "index.md" in names
    assert len(_cases()) >= 20


def test_slow_tier_list_names_existing_examples():
    """An example listed in tests/slow_tier.txt by its line must still start there (a
    listed id that no longer exists puts a slow example back into the quick tier); the
    ``<!-- docs-test: slow -->`` mark moves with the example and is the better way."""
    from conftest import slow_tier_ids

    ids = {p.id for p in _cases()}
    prefix = "tests/test_docs_examples.py::test_example_runs["
    stale = [i for i in slow_tier_ids() if i.startswith(prefix) and i[len(prefix):-1] not in ids]
    assert stale == []


def test_included_files_are_pages():
    names = {p.relative_to(ROOT).as_posix() for p in PAGES}
    assert {"CHANGELOG.md", "benchmarks/README.md", "benchmarks/PROFILE.md"} <= names


def test_code_lines_fit_the_manual():
    """No line of a code block of the manual is wider than MAX_COLUMNS (the README's too:
    GitHub shows it in a column of about that width)."""
    wide = [f"{page.relative_to(ROOT)}:{line + i}: {len(text)} columns"
            for page in PAGES for lang, line, block, _ in code_blocks(page) if not lang.startswith("{")
            for i, text in enumerate(block.splitlines()) if len(text) > MAX_COLUMNS]
    assert not wide, "\n".join(wide)


def test_block_parser(tmp_path):
    text = "intro\n<!-- docs-test: slow -->\n```bash\nboundary-eval a \\\n  --b c  # note\npip x\n```\n"
    page = tmp_path / "probe.md"
    page.write_text(text)
    blocks = code_blocks(page)
    assert blocks == [("bash", 3, "boundary-eval a \\\n  --b c  # note\npip x\n", ["slow"])]
    assert shell_commands(blocks[0][2]) == [["boundary-eval", "a", "--b", "c"]]
