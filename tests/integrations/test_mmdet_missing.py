"""boundary_api.integrations.mmdet without MMDetection: one line saying what to install
(quick tier; the metrics themselves are tested on a real MMDetection in test_mmdet.py)."""
import importlib
import sys

import pytest


def test_import_without_mmdetection_says_what_to_install(monkeypatch):
    for name in list(sys.modules):
        if name == "mmdet" or name.startswith("mmdet.") or name == "boundary_api.integrations.mmdet":
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "mmdet", None)  # import mmdet now fails, installed or not
    with pytest.raises(ImportError) as info:
        importlib.import_module("boundary_api.integrations.mmdet")
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("boundary_api.integrations.mmdet needs MMDetection 3: pip install mmdet mmengine")
    assert "mmcv" in message
    assert "boundary_api.integrations.mmdet" not in sys.modules
