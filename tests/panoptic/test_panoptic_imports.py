"""What a panoptic evaluation imports: the package's own PNG decoder needs
neither OpenCV nor Pillow, nor anything of the instance evaluators, and no
progress bar is imported when there is no terminal to show it on."""
from conftest import DATA, modules_after


def test_pq_compute_imports_no_opencv_pillow_or_instance_evaluators():
    mods = modules_after(f"""
        import contextlib, io, os
        from boundary_api import pq_compute
        root = os.path.join({DATA!r}, "panoptic")
        with contextlib.redirect_stdout(io.StringIO()):
            for iou_type in ("segm", "boundary"):
                pq_compute(os.path.join(root, "panoptic_examples.json"), os.path.join(root, "pred_shift3.json"),
                           os.path.join(root, "panoptic_examples"), os.path.join(root, "pred_shift3"),
                           iou_type=iou_type)
    """)
    for name in ("cv2", "PIL", "lvis", "boundary_api.instance", "boundary_api.coco", "matplotlib", "numpy.ma", "tqdm"):
        assert name not in mods, name


def test_names_of_the_package_still_load_on_first_use():
    mods = modules_after("""
        import boundary_api
        assert "COCOeval" in dir(boundary_api)
        from boundary_api import COCO, COCOeval, boundary_iou, LVISEval, pq_compute
        assert COCOeval.__module__.startswith("boundary_api.coco")
    """)
    assert "boundary_api.coco" in mods and "boundary_api.instance" in mods
