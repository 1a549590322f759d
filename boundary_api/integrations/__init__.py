"""Thin layers over the evaluators for other frameworks: Detectron2's COCO/LVIS/Cityscapes and
semantic evaluators (``detectron2*``), the framework-free parts they use (``d2_*``),
MMDetection's COCO/LVIS metrics (``mmdet``), torchmetrics (``torchmetrics``)."""
