"""DAVIS 2017 video object segmentation: ``DAVIS`` (the dataset's folders) and
``DAVISEvaluation``, drop-ins for davis2017-evaluation's classes of the same
names, with Boundary IoU per frame as a third measure ('B')."""
from __future__ import annotations

import glob
import logging
import os
import sys
from collections import defaultdict
from typing import Dict, Sequence

import numpy as np

from . import _jf
from .._io import FileNotFoundValueError as _file_error, input_error_class
from .._parallel import progress_bar, resolve_threads
from ..masks.boundary import check_dilation_ratio

__all__ = ["DAVIS", "DAVISEvaluation"]

log = logging.getLogger(__name__)

#: the most proposals (result objects) the unsupervised task takes
MAX_PROPOSALS = 20


class DAVIS:
    """The folders of a DAVIS 2017 dataset, as davis2017-evaluation's ``DAVIS`` reads them.

    Parameters
    ----------
    root : str
        The folder holding ``JPEGImages``, ``Annotations`` (semi-supervised),
        ``Annotations_unsupervised`` and ``ImageSets``.
    task : {'semi-supervised', 'unsupervised'}
    subset : {'train', 'val', 'test-dev', 'test-challenge'}
    sequences : 'all', str or list of str
        'all': the sequences of ``ImageSets/<year>/<subset>.txt``, in its order.
    resolution : str
        The subfolder of ``JPEGImages`` and the annotations ('480p').
    codalab : bool
        Allow sequences without images (only the annotations are needed).

    Attributes
    ----------
    sequences : dict
        ``{name: {'images': [paths], 'masks': [paths]}}``, paths sorted by name.

    Raises
    ------
    ValueError
        An unknown task or subset (as the original).
    FileNotFoundError
        A missing folder, sequence list or sequence (a ``ValueError`` too);
        unlike the original, also a sequence with fewer annotation PNGs than
        images (the original fails later, reading the missing ones).
    """

    SUBSET_OPTIONS = ['train', 'val', 'test-dev', 'test-challenge']
    TASKS = ['semi-supervised', 'unsupervised']
    DATASET_WEB = 'https://davischallenge.org/davis2017/code.html'
    VOID_LABEL = 255

    def __init__(self, root, task='unsupervised', subset='val', sequences='all', resolution='480p', codalab=False):
        if subset not in self.SUBSET_OPTIONS:
            raise ValueError(f'Subset should be in {self.SUBSET_OPTIONS}')
        if task not in self.TASKS:
            raise ValueError(f'The only tasks that are supported are {self.TASKS}')
        self.task = task
        self.subset = subset
        self.root = root
        self.img_path = os.path.join(self.root, 'JPEGImages', resolution)
        annotations = 'Annotations' if task == 'semi-supervised' else 'Annotations_unsupervised'
        self.mask_path = os.path.join(self.root, annotations, resolution)
        year = '2019' if task == 'unsupervised' and subset in ('test-dev', 'test-challenge') else '2017'
        self.imagesets_path = os.path.join(self.root, 'ImageSets', year)
        self._check_directories()
        if sequences == 'all':
            with open(os.path.join(self.imagesets_path, f'{self.subset}.txt'), 'r') as f:
                names = [x.strip() for x in f.readlines()]
        else:
            names = sequences if isinstance(sequences, list) else [sequences]
        self.sequences = defaultdict(dict)
        for seq in names:
            images = sorted(glob.glob(os.path.join(glob.escape(self.img_path), glob.escape(seq), '*.jpg')))
            masks = sorted(glob.glob(os.path.join(glob.escape(self.mask_path), glob.escape(seq), '*.png')))
            if len(images) == 0 and not codalab:
                raise _file_error(f'Images for sequence {seq} not found. ' + self._why_no_images(seq, masks))
            if not masks:
                raise _file_error(f"Annotations for sequence {seq} not found: no PNG file in "
                                  f"{os.path.join(self.mask_path, seq)}{self._unknown_sequence(seq)}")
            if len(masks) < len(images):
                raise _file_error(f"Sequence {seq} has {len(images)} images but only {len(masks)} annotation "
                                  f"PNGs in {os.path.join(self.mask_path, seq)}: every frame needs its annotation")
            self.sequences[seq]['images'] = images
            self.sequences[seq]['masks'] = masks

    def _check_directories(self):
        if not os.path.exists(self.root):
            raise _file_error(f'DAVIS not found in the specified directory, download it from {self.DATASET_WEB} '
                              f'(no folder {self.root})')
        sets = os.path.join(self.imagesets_path, f'{self.subset}.txt')
        if not os.path.exists(sets):
            raise _file_error(f'Subset sequences list for {self.subset} not found, download the missing subset '
                              f'for the {self.task} task from {self.DATASET_WEB} (looked for {sets}'
                              f'{self._inner_root()})')
        if self.subset in ['train', 'val'] and not os.path.exists(self.mask_path):
            raise _file_error(f'Annotations folder for the {self.task} task not found, download it from '
                              f'{self.DATASET_WEB} (looked for {self.mask_path}{self._flat_annotations()})')

    # ------------------------------------------------------------ what went wrong
    def _inner_root(self) -> str:
        """The fix when ``root`` is the folder above the DAVIS folder."""
        rel = os.path.relpath(self.imagesets_path, self.root)
        try:
            inner = sorted(d for d in os.listdir(self.root) if os.path.isdir(os.path.join(self.root, d, rel)))
        except OSError:
            inner = []
        if inner:
            return f"; {os.path.join(self.root, inner[0])} has it: give that folder as the DAVIS root"
        return "; the DAVIS root is the folder of JPEGImages, Annotations and ImageSets"

    def _flat_annotations(self) -> str:
        """The fix when the annotations lack the resolution level."""
        above = os.path.dirname(self.mask_path)
        if os.path.isdir(above):
            return (f"; {above} has no {os.path.basename(self.mask_path)} folder: davis2017-evaluation reads "
                    f"{os.path.basename(above)}/{os.path.basename(self.mask_path)}/<sequence>/<frame>.png")
        return ""

    def _why_no_images(self, seq: str, masks: list) -> str:
        """Where the images of ``seq`` were looked for, and the likely fix."""
        folder = os.path.join(self.img_path, seq)
        if not masks:
            return f"(no .jpg in {folder}){self._unknown_sequence(seq)}"
        codalab = "--codalab (codalab=True) evaluates without images"
        above = os.path.dirname(self.img_path)
        if not os.path.isdir(above):
            return f"(no folder {above}; {codalab})"
        if os.path.isdir(os.path.join(above, seq)):
            return (f"(no .jpg in {folder}: {os.path.join(above, seq)} lacks the level "
                    f"{os.path.basename(self.img_path)}: davis2017-evaluation reads "
                    f"{os.path.basename(above)}/{os.path.basename(self.img_path)}/<sequence>; {codalab})")
        return f"(no .jpg in {folder}; {codalab})"

    def _unknown_sequence(self, seq: str) -> str:
        """A hint when ``seq`` is no sequence of the dataset at all (a typo)."""
        if os.path.isdir(os.path.join(self.mask_path, seq)):
            return ""
        try:
            known = sorted(d for d in os.listdir(self.mask_path) if os.path.isdir(os.path.join(self.mask_path, d)))
        except OSError:
            return ""
        import difflib

        close = difflib.get_close_matches(seq, known, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        shown = ", ".join(known[:8]) + (f" (and {len(known) - 8} more)" if len(known) > 8 else "")
        return f": {seq!r} is no sequence of {self.mask_path} ({shown}){hint}"

    def get_sequences(self):
        """The sequence names, in the order of the sequence list."""
        for seq in self.sequences:
            yield seq

    def get_frames(self, sequence):
        """(image, mask) arrays of every frame, as the original yields them."""
        from PIL import Image

        for img, msk in zip(self.sequences[sequence]['images'], self.sequences[sequence]['masks']):
            with Image.open(img) as im:
                image = np.array(im)
            yield image, _jf.read_frame(msk, "annotation")

    def _get_all_elements(self, sequence, obj_type):
        from PIL import Image

        paths = self.sequences[sequence][obj_type]
        arrays = []
        for p in paths:
            with Image.open(p) as im:
                arrays.append(np.array(im))
        out = np.zeros((len(paths), *arrays[0].shape))
        for i, a in enumerate(arrays):
            out[i, ...] = a
        return out, [_frame_id(p) for p in paths]

    def get_all_images(self, sequence):
        """Every image of the sequence in one float64 array, and the frame ids."""
        return self._get_all_elements(sequence, 'images')

    def get_all_masks(self, sequence, separate_objects_masks=False):
        """Every annotation of the sequence as the original returns them:
        (masks, void masks, frame ids); with ``separate_objects_masks`` the
        masks are one boolean array per object of the first frame.  (The
        evaluation itself never holds a sequence in memory.)"""
        masks, masks_id = self._get_all_elements(sequence, 'masks')
        masks_void = np.zeros_like(masks)
        for i in range(masks.shape[0]):
            masks_void[i, ...] = masks[i, ...] == 255
            masks[i, masks[i, ...] == 255] = 0
        if separate_objects_masks:
            num_objects = int(np.max(masks[0, ...]))
            ids = np.arange(1, num_objects + 1)[:, None, None, None]
            masks = masks[None, ...] == ids
        return masks, masks_void, masks_id


def _frame_id(path: str) -> str:
    """The frame id davis2017-evaluation takes from a file name: the name
    without its last extension, its other dots dropped ('a.b.png' -> 'ab')."""
    return ''.join(path.split('/')[-1].split('.')[:-1])


class DAVISEvaluation:
    """J&F of a DAVIS results folder, a drop-in for davis2017-evaluation's
    ``DAVISEvaluation``, with the paper's Boundary IoU per frame as metric 'B'.

    Parameters
    ----------
    davis_root : str
        The DAVIS folder (``JPEGImages``, ``Annotations``, ``ImageSets``...).
    task : {'semi-supervised', 'unsupervised'}
    gt_set : {'train', 'val', 'test-dev', 'test-challenge'}
    sequences : 'all', str or list of str
    codalab : bool
        Sequences need no images (only annotations).
    num_threads : int, optional
        Threads reading and evaluating frames (default: all cores); the
        numbers do not depend on it.
    dilation_ratio : float, optional
        Boundary IoU's band width as a fraction of the frame diagonal (metric 'B').
    decay : {'official', 'exact'}
        How the Decay statistic bins frames: 'official' (default) as
        davis2017-evaluation, whose bin bounds wrap around past 256 frames;
        'exact' without that wrap (see :func:`db_statistics`).

    Notes
    -----
    The official conventions are kept: the objects of a sequence are the
    labels 1..N of its first annotation (N its largest label; void 255 is
    background there); in the semi-supervised task the first and last frames
    are not evaluated (their results are never read) and void pixels count
    as background; in the unsupervised task void pixels are left out of J
    and F, at most 20 proposals are matched to the objects with the
    Hungarian method on (mean J + mean F) / 2 (or the one metric asked for),
    and the rows are listed in the matched proposals' order.  Frames are read
    one at a time (memory does not grow with a sequence's length), on
    ``num_threads`` threads.
    """

    def __init__(self, davis_root, task, gt_set, sequences='all', codalab=False, *, num_threads=None,
                 dilation_ratio=0.02, decay="official"):
        self.davis_root = davis_root
        self.task = task
        self.dataset = DAVIS(root=davis_root, task=task, subset=gt_set, sequences=sequences, codalab=codalab)
        self.num_threads = resolve_threads(num_threads)
        self.dilation_ratio = check_dilation_ratio(dilation_ratio)
        if decay not in ("official", "exact"):
            raise ValueError(f"decay must be 'official' or 'exact', got {decay!r}")
        self.decay = decay
        #: per-frame values of the last evaluation: ``{'<seq>_<n>': {'J': array, 'F': ..., 'B': ...}}``
        self.per_frame: Dict[str, Dict[str, np.ndarray]] = {}
        #: where those values come from: ``{'<seq>_<n>': (frame ids, annotation files, result files,
        #: image files or None, ground-truth label, result label)}``
        self._frames: Dict[str, tuple] = {}

    def evaluate(self, res_path, metric=('J', 'F'), debug=False):
        """Evaluate a results folder (``<res_path>/<sequence>/<frame id>.png``,
        palette PNGs whose indices are object ids).

        Parameters
        ----------
        res_path : str
        metric : str or tuple of str
            'J' and/or 'F' (as the original), plus 'B' for Boundary IoU.
        debug : bool
            Print each sequence's name once evaluated (as the original).

        Returns
        -------
        dict
            ``{'J': {'M': [...], 'R': [...], 'D': [...], 'M_per_object': {...}}, 'F': ..., 'B': ...}``
            for the metrics asked: per object, the mean, recall and decay of
            its per-frame values (np.float64), objects named ``<sequence>_<n>``.

        Raises
        ------
        ValueError
            A metric other than J, F, B ('T' included, as the original) or
            neither J nor F; a result label above the sequence's object
            count (semi-supervised) or above 20 (unsupervised); a result of
            another size than its annotation; an unreadable file.
        FileNotFoundError
            A missing results folder or frame (also a ``ValueError``).
        """
        metric = metric if isinstance(metric, (tuple, list)) else [metric]
        if 'T' in metric:
            raise ValueError('Temporal metric not supported!')
        if 'J' not in metric and 'F' not in metric:
            raise ValueError('Metric possible values are J for IoU or F for Boundary')
        unknown = [m for m in metric if m not in ('J', 'F', 'B')]
        if unknown:
            raise ValueError(f"unknown metric {unknown[0]!r}: the metrics are 'J', 'F' and 'B'")
        if not os.path.isdir(res_path):
            raise _file_error(f"results folder not found: {res_path}")
        names = [m for m in ('J', 'F', 'B') if m in metric]
        metrics_res = {m: {"M": [], "R": [], "D": [], "M_per_object": {}} for m in names}
        self.per_frame = {}
        self._frames = {}
        seqs = list(self.dataset.get_sequences())
        bar = progress_bar(len(seqs), "DAVIS sequences", unit="seq")
        try:
            for seq in seqs:
                values, sources = self._evaluate_sequence(seq, res_path, names)
                for ii in range(len(values)):
                    seq_name = f'{seq}_{ii + 1}'
                    self.per_frame[seq_name] = values[ii]
                    self._frames[seq_name] = sources[ii]
                    for m in names:
                        M, R, D = _jf.db_statistics(values[ii][m], self.decay)
                        metrics_res[m]["M"].append(M)
                        metrics_res[m]["R"].append(R)
                        metrics_res[m]["D"].append(D)
                        metrics_res[m]["M_per_object"][seq_name] = M
                if debug:
                    sys.stdout.write(seq + '\n')
                    sys.stdout.flush()
                if bar is not None:
                    bar.update(1)
        finally:
            if bar is not None:
                bar.close()
        return metrics_res

    # ------------------------------------------------------------------
    def _evaluate_sequence(self, seq: str, res_path: str, names: Sequence[str]):
        """Per-frame values of every object of one sequence (in the
        official row order), and each object's frames: (frame ids,
        annotation files, result files, image files or None, ground-truth
        label, result label)."""
        masks = self.dataset.sequences[seq]['masks']
        first = _jf.read_frame(masks[0], "annotation")
        first = np.where(first == DAVIS.VOID_LABEL, 0, first)
        n_obj = int(first.max()) if first.size else 0
        semi = self.task == 'semi-supervised'
        evaluated = masks[1:-1] if semi else masks
        if not evaluated:
            raise input_error_class(IndexError)(
                f"sequence {seq} has {len(masks)} annotated frames: the semi-supervised task evaluates all but "
                "the first and the last, so it needs at least 3")
        res_dir = os.path.join(res_path, seq)
        pairs = []
        for m in evaluated:
            frame_id = _frame_id(m)
            r = os.path.join(res_dir, f'{frame_id}.png')
            if not os.path.isfile(r):
                raise _file_error(f"{seq} frame {frame_id} not found: {r} (the frames have to be indexed PNG "
                                  "files placed inside the corresponding sequence folder, named as the "
                                  "annotations)")
            pairs.append((m, r))
        images = {_frame_id(p): p for p in self.dataset.sequences[seq]['images']}
        frame_ids = [_frame_id(m) for m, _ in pairs]

        def sources(gt_label, res_label):
            return (frame_ids, [m for m, _ in pairs], [r for _, r in pairs], [images.get(f) for f in frame_ids],
                    gt_label, res_label)

        limit = n_obj if semi else MAX_PROPOSALS
        options = _jf.CountOptions(
            void_label=DAVIS.VOID_LABEL, mask_res_by_void=not semi, max_gt_label=n_obj, max_res_label=limit,
            pair_mode=_jf.DIAGONAL if semi else _jf.ALL_PAIRS, want_f='F' in names, want_b='B' in names,
            dilation_ratio=self.dilation_ratio)

        def label_error(frame, label):
            where = f"{seq} frame {_frame_id(evaluated[frame])} has index {label}"
            if semi:
                return ValueError(f"In your PNG files there is an index higher than the number of objects in the "
                                  f"sequence! ({where}; the first annotation has {n_obj} objects)")
            return ValueError(f"In your PNG files there is an index higher than the maximum number "
                              f"({MAX_PROPOSALS}) of proposals allowed! ({where})")

        counts = _jf.count_frames(pairs, options, None, self.num_threads, label_error,
                                  shape=first.shape)
        objs = list(range(1, n_obj + 1))
        if semi:
            c = _jf.dense_counts(counts, objs, objs)
            k = np.arange(n_obj)
            per = {'J': _jf.j_values(c["inter"][k, k], c["area_res"], c["area_gt"])}
            if 'F' in names:
                per['F'] = _jf.f_values(c["fg"][k, k], c["gm"][k, k], c["nb_res"], c["nb_gt"])
            if 'B' in names:
                per['B'] = _jf.b_values(c["band_inter"][k, k], c["band_res"], c["band_gt"])
            return [{m: per[m][i] for m in names} for i in range(n_obj)], [sources(i + 1, i + 1)
                                                                            for i in range(n_obj)]
        n_res = counts.max_res_label
        n_prop = max(n_res, n_obj)
        props = list(range(1, n_prop + 1))
        c = _jf.dense_counts(counts, objs, props)
        per = _jf.pair_values(c, names)
        if 'J' in names and 'F' in names:
            all_metrics = (np.mean(per['J'], axis=2) + np.mean(per['F'], axis=2)) / 2
        else:
            all_metrics = np.mean(per['J'], axis=2) if 'J' in names else np.mean(per['F'], axis=2)
        from scipy.optimize import linear_sum_assignment

        row_ind, col_ind = linear_sum_assignment(-all_metrics)
        return ([{m: per[m][row_ind[i], col_ind[i]] for m in names} for i in range(len(row_ind))],
                [sources(int(col_ind[i]) + 1, int(row_ind[i]) + 1) for i in range(len(row_ind))])
