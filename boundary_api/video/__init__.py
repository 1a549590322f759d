"""Video segmentation: DAVIS and SA-V J&F (video object segmentation, with Boundary IoU
per frame) and YouTube-VIS AP / HQ-YTVIS Tube-Boundary AP (video instance segmentation).
One reader per layout (DAVIS and SA-V folders, YouTube-VIS JSON), per-frame kernels on
label maps and run-length masks, tracks matched by the instance engine.
"""
from .davis import DAVIS, DAVISEvaluation
from ._jf import db_statistics
from .sav import sav_benchmark
from .ytvos import YTVOS
from .ytvoseval import Params, YTVOSeval
from .files import evaluate_davis, evaluate_sav, evaluate_vis_files

__all__ = ["DAVIS", "DAVISEvaluation", "db_statistics", "sav_benchmark", "YTVOS", "YTVOSeval", "Params",
           "evaluate_davis", "evaluate_sav", "evaluate_vis_files"]
