"""``clihelp`` directive: the ``--help`` text of a ``boundary-eval`` command,
produced at build time, so the command-line reference is always the code's.

In MyST Markdown::

    ```{clihelp} panoptic
    ```

(no argument: the main command).
"""
import contextlib
import io
import os

from docutils import nodes
from docutils.parsers.rst import Directive


def help_text(words):
    """The text ``boundary-eval WORDS --help`` prints, at 100 columns."""
    from boundary_api.cli import main

    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "100"
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            try:
                main(list(words) + ["--help"])
            except SystemExit:
                pass
    finally:
        if old is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = old
    return out.getvalue().rstrip() + "\n"


class CliHelp(Directive):
    optional_arguments = 1
    has_content = False

    def run(self):
        text = help_text(self.arguments)
        if not text.strip():
            raise self.error(f"boundary-eval {' '.join(self.arguments)} --help printed nothing")
        node = nodes.literal_block(text, text)
        node["language"] = "text"
        return [node]


def setup(app):
    app.add_directive("clihelp", CliHelp)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
