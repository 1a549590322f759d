"""The ``boundary-eval`` command: ``main`` dispatches to one module per subcommand
(``instances``, ``panoptic``, ``demo``); ``output`` writes the ``--json-out`` documents."""
from .instances import instance_parser
from .main import main

__all__ = ["main", "instance_parser"]
