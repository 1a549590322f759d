"""Video segmentation: DAVIS, SA-V, MOSEv2 and LVOS J&F (video object segmentation, with
Boundary IoU per frame) and YouTube-VIS AP / HQ-YTVIS Tube-Boundary AP (video instance segmentation).
One reader per layout (DAVIS and SA-V folders, YouTube-VIS JSON), per-frame kernels on
label maps and run-length masks, tracks matched by the instance engine.
"""
from .davis import DAVIS, DAVISEvaluation
from ._jf import db_statistics
from .sav import sav_benchmark
from .mosev2 import mosev2_benchmark
from .lvos import LVOS, LVOSEvaluation
from .ytvos import YTVOS
from .ytvoseval import Params, YTVOSeval
from .files import evaluate_davis, evaluate_sav, evaluate_vis_files
from .files_mosev2_lvos import evaluate_lvos, evaluate_mosev2

__all__ = ["DAVIS", "DAVISEvaluation", "db_statistics", "sav_benchmark", "mosev2_benchmark", "LVOS",
           "LVOSEvaluation", "YTVOS", "YTVOSeval", "Params", "evaluate_davis", "evaluate_sav", "evaluate_mosev2",
           "evaluate_lvos", "evaluate_vis_files"]
