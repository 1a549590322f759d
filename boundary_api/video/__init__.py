"""Video segmentation: DAVIS and SA-V J&F (video object segmentation, with Boundary IoU
per frame) and YouTube-VIS AP / HQ-YTVIS Tube-Boundary AP (video instance segmentation).
One reader per layout (DAVIS and SA-V folders, YouTube-VIS JSON), per-frame kernels on
label maps and run-length masks, tracks matched by the instance engine.
"""
