"""The package's layers: the mask layer at the bottom, one package per paradigm on it
(never importing one another), integrations and the command line on top; no cycles; the
documented import paths keep working."""
import ast
import importlib
import os

import pytest

import boundary_api

PKG = os.path.dirname(boundary_api.__file__)

# what each part of the package may import from the package (besides itself)
BASE = {"_io", "_parallel", "_version"}
ALLOWED = {
    "masks": BASE,
    "instance": BASE | {"masks"},
    "panoptic": BASE | {"masks"},
    "semantic": BASE | {"masks"},
    "analysis": BASE | {"masks", "instance", "panoptic"},
    "integrations": BASE | {"masks", "instance", "panoptic", "semantic"},
    "report": BASE | {"masks", "instance", "panoptic", "semantic"},
    # cluster surface on top of the instance package (issue 17)
    "distributed": BASE | {"masks", "instance"},
    # opt-in stand-ins for pycocotools / lvis (issue 24)
    "swap": BASE | {"instance"},
    "cli": BASE | {"masks", "instance", "panoptic", "semantic", "integrations", "analysis", "report",
                   "distributed"},
}


def _modules():
    for root, _, files in os.walk(PKG):
        for f in files:
            if f.endswith(".py"):
                path = os.path.join(root, f)
                rel = os.path.relpath(path, PKG)[:-3].split(os.sep)
                yield rel, path


def _imports(rel, path):
    """Top-level parts of boundary_api that the module at ``rel`` imports."""
    tree = ast.parse(open(path, encoding="utf-8").read())
    pkg = rel[:-1]  # the module's package, relative to boundary_api
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg[:len(pkg) - (node.level - 1)] if node.level > 1 else list(pkg)
                target = base + (node.module.split(".") if node.module else [])
                if not target:  # "from . import x" at the top level
                    target = [node.names[0].name]
            elif node.module and node.module.split(".")[0] == "boundary_api":
                target = node.module.split(".")[1:] or [node.names[0].name]
            else:
                continue
            yield target[0]
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == "boundary_api" and len(parts) > 1:
                    yield parts[1]


@pytest.mark.parametrize("layer", sorted(ALLOWED))
def test_layers_import_only_downwards(layer):
    bad = []
    for rel, path in _modules():
        if rel[0] != layer:
            continue
        for target in _imports(rel, path):
            if target != layer and target not in ALLOWED[layer]:
                bad.append(f"{'/'.join(rel)}.py imports boundary_api.{target}")
    assert bad == []


def test_base_modules_import_nothing_from_the_package():
    for name in BASE:
        path = os.path.join(PKG, name + ".py")
        if os.path.exists(path):
            assert list(_imports([name], path)) == []


def test_every_package_says_what_lives_there():
    for entry in sorted(os.listdir(PKG)):
        init = os.path.join(PKG, entry, "__init__.py")
        if entry in ALLOWED and os.path.exists(init):
            doc = ast.get_docstring(ast.parse(open(init, encoding="utf-8").read()))
            assert doc and len(doc.splitlines()) <= 3, entry


@pytest.mark.parametrize("path, names", [
    ("boundary_api", ["COCO", "COCOeval", "LVIS", "LVISResults", "LVISEval", "pq_compute", "dilation_pixels",
                      "mask_to_boundary", "rle_to_boundary", "boundary_iou", "AnnotationCache", "cache_for",
                      "init_as_pycocotools", "init_as_lvis", "restore_originals", "swapped"]),
    ("boundary_api.masks", ["boundary_iou", "dilation_pixels", "mask_to_boundary", "rle_to_boundary"]),
    ("boundary_api.panoptic", ["pq_compute", "rgb2id", "id2rgb"]),
    ("boundary_api.reference", ["mask_to_boundary", "boundary_iou"]),
    ("boundary_api.d2_results", ["coco_boundary_metrics", "lvis_boundary_metrics", "prepare_results"]),
    ("boundary_api.cli", ["main"]),
    ("boundary_api.report", ["collect", "figures", "write_html", "write_pngs"]),
    ("boundary_api.instance.analysis", ["analyze_errors", "pr_curves", "boundary_coverage"]),
])
def test_documented_import_paths(path, names):
    module = importlib.import_module(path)
    for name in names:
        assert callable(getattr(module, name)), (path, name)


def test_compatibility_paths_are_the_same_objects():
    from boundary_api import d2_results, reference
    from boundary_api.integrations import d2_results as new_d2
    from boundary_api.masks import reference as new_ref

    assert reference.mask_to_boundary is new_ref.mask_to_boundary
    assert d2_results.coco_boundary_metrics is new_d2.coco_boundary_metrics
