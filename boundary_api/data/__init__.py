"""The bundled demo: a small synthetic ground truth and its results (``boundary-eval`` with no
arguments evaluates them)."""
