"""The package's layout (docs/architecture.md): the mask layer at the bottom, the shared
instance engine on it, one package per protocol (never importing another protocol),
one package per concern above them, integrations and the command line on top; no import
circle; the command line reads and checks nothing itself; the 0.1.0 paths warn and give
the new modules; no source file grows past ~800 lines without saying why."""
import ast
import importlib
import os
import re
import subprocess
import sys
import warnings

import pytest

import boundary_api
from boundary_api._deprecated import MOVED_MODULES

PKG = os.path.dirname(boundary_api.__file__)  # the package imported (installed or in the checkout)
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the checkout
DOCS = os.path.join(ROOT, "docs", "architecture.md")

# what each part of the package may import from the package (besides itself)
BASE = {"_io", "_parallel", "_version"}
PROTOCOLS = {"coco", "lvis", "cityscapes", "panoptic", "semantic", "video", "saco"}
ALLOWED = {
    "masks": BASE,
    "data": set(),  # the demo's files
    "instance": BASE | {"masks"},
    # one package per protocol: the mask layer (and, for COCO/LVIS, the instance engine)
    "coco": BASE | {"masks", "instance"},
    "lvis": BASE | {"masks", "instance"},
    "cityscapes": BASE | {"masks"},
    "panoptic": BASE | {"masks"},
    "semantic": BASE | {"masks"},
    # video: label-map frames on the mask layer, tracks on the instance engine
    "video": BASE | {"masks", "instance"},
    # SA-Co (SAM 3's cgF1): pairs and annotator files on the instance engine
    "saco": BASE | {"masks", "instance"},
    # one package per concern, over the protocols
    "scale": BASE | {"masks", "instance", "coco", "lvis"},
    "diagnostics": BASE | {"masks", "instance", "coco", "lvis"},
    "sensitivity": BASE | {"masks", "instance", "coco", "lvis", "panoptic"},
    "report": BASE | {"masks", "instance", "coco", "lvis", "diagnostics"},
    "swap": BASE | {"coco", "lvis"},
    # instance files (COCO or LVIS from the ground truth) read, checked and evaluated by one call
    "evaluate": BASE | {"masks", "instance", "coco", "lvis"},
    "integrations": BASE | {"masks", "instance", "coco", "lvis", "cityscapes", "panoptic", "semantic", "video",
                            "scale"},
    "cli": BASE | {"masks", "instance", "coco", "lvis", "cityscapes", "panoptic", "semantic", "video", "scale",
                   "diagnostics", "sensitivity", "report", "integrations", "evaluate", "saco"},
    # the 0.1.0 paths: each only calls _deprecated.alias
    "_deprecated": set(),
    **{old.split(".")[1]: {"_deprecated"} for old in MOVED_MODULES},
}


def _modules():
    for root, _, files in os.walk(PKG):
        for f in sorted(files):
            if f.endswith(".py"):
                path = os.path.join(root, f)
                rel = os.path.relpath(path, PKG)[:-3].split(os.sep)
                yield rel, path


def _targets(rel, node):
    """The modules of boundary_api (as lists of names) an import statement names."""
    pkg = rel[:-1] if rel[-1] != "__init__" else rel[:-1]
    if isinstance(node, ast.ImportFrom):
        if node.level:
            base = pkg[:len(pkg) - (node.level - 1)]
            mod = base + (node.module.split(".") if node.module else [])
        elif node.module and node.module.split(".")[0] == "boundary_api":
            mod = node.module.split(".")[1:]
        else:
            return []
        return [mod + [a.name] if _is_module(mod + [a.name]) else mod for a in node.names] or [mod]
    if isinstance(node, ast.Import):
        return [a.name.split(".")[1:] for a in node.names if a.name.split(".")[0] == "boundary_api"]
    return []


def _is_module(parts):
    path = os.path.join(PKG, *parts)
    return os.path.isdir(path) or os.path.exists(path + ".py")


def _imports(rel, path, top_level_only=False):
    tree = ast.parse(open(path, encoding="utf-8").read())
    nodes = tree.body if top_level_only else ast.walk(tree)
    for node in nodes:
        for target in _targets(rel, node):
            if target:
                yield target


@pytest.mark.parametrize("layer", sorted(ALLOWED))
def test_layers_import_only_downwards(layer):
    bad = []
    for rel, path in _modules():
        if rel[0] != layer and rel[0] != layer + ".py":
            if not (len(rel) == 1 and rel[0] == layer):
                continue
        for target in _imports(rel, path):
            if target[0] != layer and target[0] not in ALLOWED[layer]:
                bad.append(f"{'/'.join(rel)}.py imports boundary_api.{'.'.join(target)}")
    assert bad == []


def test_every_part_of_the_package_has_a_rule():
    parts = {rel[0] for rel, _ in _modules() if len(rel) > 1 or rel[0] not in ("__init__",)}
    assert parts - set(ALLOWED) - BASE == set()


def test_the_layers_form_no_circle():
    # a depth-first search over ALLOWED: no part reaches itself
    def reach(part, seen):
        for nxt in ALLOWED.get(part, ()):
            if nxt == start:
                return True
            if nxt not in seen:
                seen.add(nxt)
                if reach(nxt, seen):
                    return True
        return False

    for start in ALLOWED:
        assert not reach(start, set()), start


def test_no_import_circle_between_modules():
    """Module-level imports between the modules of the package form no circle
    (an import inside a function is allowed to go anywhere its layer may)."""
    graph = {}
    for rel, path in _modules():
        name = ".".join(rel[:-1] if rel[-1] == "__init__" else rel)
        deps = set()
        for target in _imports(rel, path, top_level_only=True):
            deps.add(".".join(target))
        graph[name] = deps - {name}
    # a package's __init__ importing its own modules is not a circle back from them
    state, stack = {}, []

    def visit(node):
        state[node] = 1
        stack.append(node)
        for dep in graph.get(node, ()):
            if node.startswith(dep + ".") or dep == "":
                continue  # a module importing its own package's __init__ (its parent)
            if state.get(dep) == 1:
                cycle = stack[stack.index(dep):] + [dep]
                raise AssertionError(" -> ".join(cycle))
            if dep not in state:
                visit(dep)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)


def test_protocols_never_import_one_another():
    for rel, path in _modules():
        if rel[0] in PROTOCOLS:
            others = {t[0] for t in _imports(rel, path)} & (PROTOCOLS - {rel[0]})
            assert not others, ("/".join(rel), others)


def test_every_package_says_what_lives_there():
    for entry in sorted(os.listdir(PKG)):
        init = os.path.join(PKG, entry, "__init__.py")
        if os.path.exists(init):
            doc = ast.get_docstring(ast.parse(open(init, encoding="utf-8").read()))
            assert doc and len(doc.splitlines()) <= 6, entry


def test_architecture_page_names_every_package_and_rule():
    page = open(DOCS, encoding="utf-8").read()
    for entry in sorted(os.listdir(PKG)):
        if os.path.exists(os.path.join(PKG, entry, "__init__.py")):
            assert re.search(rf"^\s+{entry}/", page, re.M), f"docs/architecture.md does not draw {entry}/"
            assert f"`{entry}`" in page, f"docs/architecture.md does not say what {entry} may import"
    for old, (new, removal) in MOVED_MODULES.items():
        assert f"`{old}`" in page and f"`{new}`" in page and removal in page, old


def _cli_sources():
    cli = os.path.join(PKG, "cli")
    for f in sorted(os.listdir(cli)):
        if f.endswith(".py"):
            yield f, open(os.path.join(cli, f), encoding="utf-8").read()


def test_command_line_reads_and_checks_no_input_itself():
    """The subcommands parse arguments and call the library, which reads and checks
    the files: no JSON reading, no private checks of the library in cli/."""
    bad = []
    for f, src in _cli_sources():
        tree = ast.parse(src)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                names = {a.name for a in node.names}
                if node.module.endswith("_checks") or node.module.endswith("_columns") \
                        or node.module.endswith("_gt_columns"):
                    bad.append(f"{f} imports {node.module}")
                if names & {"read_json", "loads_json", "read_once", "open_input"}:
                    bad.append(f"{f} imports {sorted(names & {'read_json', 'loads_json', 'read_once', 'open_input'})}")
            if isinstance(node, ast.Attribute) and node.attr in ("load", "loads") \
                    and isinstance(node.value, ast.Name) and node.value.id == "json":
                bad.append(f"{f} calls json.{node.attr}")
    assert bad == []


@pytest.mark.parametrize("old", sorted(MOVED_MODULES))
def test_old_paths_warn_and_give_the_new_module(old):
    new, removal = MOVED_MODULES[old]
    if "detectron2" in new and importlib.util.find_spec("detectron2") is None:
        # importing it needs Detectron2: check the warning in a process without it
        code = f"import warnings; warnings.simplefilter('error', DeprecationWarning)\ntry:\n import {old}\n" \
               f"except DeprecationWarning as e: print(e)"
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=os.sep)
        assert new in out.stdout and removal in out.stdout, out
        return
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=re.escape(new)) as record:
        exec(compile(f"import {old}", __file__, "exec"), {})
    module = sys.modules[old]
    assert module is importlib.import_module(new)
    assert removal in str(record[0].message)
    assert record[0].filename == __file__  # the warning points at the import, not at the package


def test_old_paths_warn_at_the_importing_line_in_a_script():
    code = "import boundary_api.measures\n"
    out = subprocess.run([sys.executable, "-W", "default", "-c", code], capture_output=True, text=True, cwd=os.sep)
    assert "<string>:1: DeprecationWarning: boundary_api.measures is deprecated" in out.stderr, out.stderr


@pytest.mark.parametrize("path, names", [
    ("boundary_api", ["COCO", "COCOeval", "LVIS", "LVISResults", "LVISEval", "pq_compute", "dilation_pixels",
                      "mask_to_boundary", "rle_to_boundary", "boundary_iou", "AnnotationCache", "cache_for",
                      "init_as_pycocotools", "init_as_lvis", "restore_originals", "swapped"]),
    ("boundary_api.masks", ["boundary_iou", "dilation_pixels", "mask_to_boundary", "rle_to_boundary"]),
    ("boundary_api.masks.measures", ["boundary_iou", "mask_iou", "trimap_iou", "multiscale_iou"]),
    ("boundary_api.masks.reference", ["mask_to_boundary", "boundary_iou"]),
    ("boundary_api.coco", ["COCO", "COCOeval"]),
    ("boundary_api.lvis", ["LVIS", "LVISResults", "LVISEval"]),
    ("boundary_api.cityscapes", ["evaluate_cityscapes", "evaluate_img_lists", "evaluate_arrays", "print_results"]),
    ("boundary_api.panoptic", ["pq_compute", "rgb2id", "id2rgb"]),
    ("boundary_api.semantic", ["SemanticEvaluator", "evaluate_folders"]),
    ("boundary_api.scale", ["Partial", "evaluate_partial", "merge_partials", "evaluate_streaming", "evaluate_dask"]),
    ("boundary_api.diagnostics", ["analyze_errors", "pr_curves", "boundary_coverage"]),
    ("boundary_api.evaluate", ["evaluate_files", "table_title"]),
    ("boundary_api.diagnostics.files", ["load_files", "analyze_files"]),
    ("boundary_api.sensitivity.curves", ["sensitivity_analysis"]),
    ("boundary_api.integrations.d2_results", ["coco_boundary_metrics", "lvis_boundary_metrics", "prepare_results"]),
    ("boundary_api.cli", ["main"]),
    ("boundary_api.report", ["collect", "figures", "write_html", "write_pngs"]),
])
def test_documented_import_paths(path, names):
    module = importlib.import_module(path)
    for name in names:
        assert callable(getattr(module, name)), (path, name)


def test_top_level_names_are_the_protocol_packages_objects():
    from boundary_api import coco, instance, lvis

    assert boundary_api.COCOeval is coco.COCOeval and boundary_api.COCO is coco.COCO
    assert boundary_api.LVISEval is lvis.LVISEval and boundary_api.LVISResults is lvis.LVISResults
    assert boundary_api.AnnotationCache is instance.AnnotationCache


LIMIT = 800


def _long_files():
    for top in ("boundary_api", "cython_ext"):
        for root, _, files in os.walk(os.path.join(ROOT, top)):
            for f in files:
                if f.endswith((".py", ".pyx", ".pxi", ".pxd")):
                    path = os.path.join(root, f)
                    with open(path, encoding="utf-8") as fh:
                        lines = fh.read().splitlines()
                    if len(lines) > LIMIT:
                        head = "\n".join(lines[:15]).lower()
                        if "longer than" not in head and "lines because" not in head:
                            yield os.path.relpath(path, ROOT), len(lines)


def test_no_source_file_is_long_without_a_reason_at_its_top():
    assert list(_long_files()) == []


#: calls that open, copy or make files; the command line makes none of them, but for
#: (module, call) here: output.py writes what a subcommand is asked to write (--json-out,
#: synthetic --out, the demo's files), _common.py probes the --json-out target before the
#: evaluation (a file made and removed), main.py points a closed standard output at os.devnull
_FILE_CALLS = {"open", "os.open", "os.fdopen", "io.open", "gzip.open", "shutil.copyfileobj", "shutil.copyfile",
               "shutil.copy", "shutil.copy2", "shutil.move", "shutil.rmtree", "os.mkfifo", "np.load"}
_CLI_MAY = {("output.py", "open"), ("_common.py", "os.open"), ("main.py", "os.open")}


def _call_name(node):
    f = node.func
    if isinstance(f, ast.Name):
        return f.id
    if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name):
        return f"{f.value.id}.{f.attr}"
    return None


def test_command_line_opens_no_files():
    """Issue 31: every file a subcommand reads is read by the library it calls
    (a pipe too: no copies, no temporary folder in cli/); cli/ opens, copies
    and makes no file, but for writing its outputs in output.py."""
    bad = []
    for f, src in _cli_sources():
        for node in ast.walk(ast.parse(src)):
            if isinstance(node, ast.Call):
                name = _call_name(node)
                if name in _FILE_CALLS and (f, name) not in _CLI_MAY:
                    bad.append(f"{f}:{node.lineno} calls {name}")
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                mods = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                if any(m.split(".")[0] == "tempfile" for m in mods):
                    bad.append(f"{f}:{node.lineno} imports tempfile")
    assert bad == []


#: where a COCO / LVIS ground-truth or results file is parsed: the one reader of files
#: (instance/_files.py), the dataset classes' drop-in readers and their column scanners;
#: YouTube-VIS files have their one reader too, the dataset class video/ytvos.py, and SA-Co's
#: ground truths and predictions theirs, saco/_inputs.py
_INSTANCE_FILE_READERS = {("instance", "_files.py"), ("instance", "_gt_columns.py"), ("instance", "_columns.py"),
                          ("coco", "dataset.py"), ("lvis", "dataset.py"), ("lvis", "fixed_pooled.py"),
                          ("video", "ytvos.py"), ("saco", "_inputs.py")}
_INSTANCE_FILE_WORDS = ("ground truth", "results", "LVIS")


def test_one_reader_of_instance_files():
    """Issue 31: a COCO / LVIS ground-truth or results file is parsed (``read_json`` /
    ``loads_json`` of a "ground truth" or "results" file) only by instance/_files.py and
    the dataset classes: evaluate_files, the diagnostics, streaming and the sensitivity
    study call instance/_files.py, so one file gives one message everywhere.  (Streaming's
    line-by-line reader of JSON Lines results, scale/streaming.py ``iter_results``, reads
    what no whole-file reader can.)"""
    bad = []
    for rel, path in _modules():
        if tuple(rel[:-1] + [rel[-1] + ".py"])[-2:] in _INSTANCE_FILE_READERS or rel[0] in ("_io", "panoptic"):
            continue  # (panoptic's JSON is not an instance file)
        for node in ast.walk(ast.parse(open(path, encoding="utf-8").read())):
            if not isinstance(node, ast.Call) or _call_name(node) not in ("read_json", "loads_json",
                                                                          "_io.read_json"):
                continue
            what = node.args[1] if len(node.args) > 1 else next((k.value for k in node.keywords if k.arg == "what"),
                                                                None)
            text = what.value if isinstance(what, ast.Constant) and isinstance(what.value, str) else None
            if text is not None and text.startswith(_INSTANCE_FILE_WORDS):
                bad.append(f"{'/'.join(rel)}.py:{node.lineno} reads {text or 'a file'} itself")
    # and what the library's file-level entry points do not do themselves
    for rel, path in _modules():
        if rel[0] in ("evaluate", "diagnostics"):
            src = open(path, encoding="utf-8").read()
            for word in ("read_json", "check_instances_dataset", "check_results_file"):
                if re.search(rf"\b{word}\b", src):
                    bad.append(f"{'/'.join(rel)}.py uses {word}")
    assert bad == []
