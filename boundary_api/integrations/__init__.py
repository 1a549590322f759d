"""Thin layers over the evaluators for other frameworks: Detectron2's evaluators
(``detectron2``, needs Detectron2) and the framework-free part they use (``d2_results``)."""
