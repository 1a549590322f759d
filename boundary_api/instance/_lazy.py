"""The state a drop-in evaluator shows as pycocotools / lvis attributes, built on first
use: ``ious`` as a lazily filled dict (``IouDict``), ``evalImgs``, ``_gts``/``_dts`` as
lazy attributes (``Lazy``), and the ``LazyEvaluator`` mixin that COCOeval and LVISEval
share for ``vars()``, ``dir()``, pickling and override detection."""
from __future__ import annotations

import logging
import types
from collections.abc import ItemsView, KeysView, ValuesView
from typing import TYPE_CHECKING, Optional, Sequence, Tuple



if TYPE_CHECKING:  # (the engine imports this module)
    from ._engine import Evaluation

log = logging.getLogger(__name__)

IOU_MODES = {"segm": 0, "boundary": 1, "bbox": 2}


class IouDict(dict):
    """``ious`` as pycocotools and lvis keep them, built lazily.

    A key ``(image_id, category_id)`` for every evaluated image and category
    (category ``-1`` when categories are not used), image-major as the
    libraries' dict comprehensions make them; the value is the ``(D, G)`` IoU
    matrix, or ``[]`` for a pair without detections or without ground
    truths.  ``len``, iteration, ``in``, ``get``, ``keys()``, ``values()`` and
    ``items()`` answer from the evaluation without building every entry; a
    matrix is made when first read and then kept (the same object on every
    read).  The first change (assignment, deletion, ``update``, ...) turns the
    object into an ordinary dict of all entries.  Copies and pickles are
    plain dicts.

    Parameters
    ----------
    state : Evaluation, optional
        The evaluation to answer from; without it, an ordinary dict.
    """

    #: the Evaluation answered from; None once the dict holds every entry
    _state = None

    def __init__(self, state: Optional["Evaluation"] = None):
        super().__init__()
        if state is not None:
            self._state = state
            # pycocotools/lvis build the dict with a comprehension: a repeated
            # id keeps its first position
            self._imgs = list(dict.fromkeys(state.img_ids))
            self._cats = list(dict.fromkeys(state.cat_ids))
            self._img_pos = {img: i for i, img in reversed(list(enumerate(state.img_ids)))}
            self._cat_pos = {cat: k for k, cat in reversed(list(enumerate(state.cat_ids)))}
            self._pair = None

    # -------------------------------------------------------------- the grid
    def _pair_of(self, key):
        """Pair index of ``key``, -1 for an evaluated but empty pair, None
        for a key that was not evaluated."""
        if type(key) is not tuple or len(key) != 2:
            hash(key)  # unhashable keys raise TypeError, as for a dict
            return None
        i = self._img_pos.get(key[0])
        k = self._cat_pos.get(key[1])
        if i is None or k is None:
            return None
        if self._pair is None:
            st = self._state
            self._pair = dict(zip(zip(st.pair_img.tolist(), st.pair_cat.tolist()), range(st.num_pairs)))
        return self._pair.get((i, k), -1)

    def _grid(self):
        for img in self._imgs:
            for cat in self._cats:
                yield (img, cat)

    def _materialize(self) -> None:
        """Hold every entry, in the libraries' order; answer as a dict from now on."""
        if self._state is None:
            return
        items = [(key, self[key]) for key in self._grid()]
        self._state = None
        dict.clear(self)
        dict.update(self, items)

    # ------------------------------------------------------------- reading
    def __missing__(self, key):
        if self._state is None:
            raise KeyError(key)
        p = self._pair_of(key)
        if p is None:
            raise KeyError(key)
        value = self._state.iou_matrix(p) if p >= 0 else []
        dict.__setitem__(self, key, value)
        return value

    def __len__(self):
        if self._state is None:
            return dict.__len__(self)
        return len(self._imgs) * len(self._cats)

    def __iter__(self):
        if self._state is None:
            return dict.__iter__(self)
        return self._grid()

    def __reversed__(self):
        if self._state is None:
            return dict.__reversed__(self)
        return reversed(list(self._grid()))

    def __contains__(self, key):
        if self._state is None:
            return dict.__contains__(self, key)
        return self._pair_of(key) is not None

    def get(self, key, default=None):
        if self._state is None:
            return dict.get(self, key, default)
        return self[key] if key in self else default

    def keys(self):
        return dict.keys(self) if self._state is None else KeysView(self)

    def values(self):
        return dict.values(self) if self._state is None else ValuesView(self)

    def items(self):
        return dict.items(self) if self._state is None else ItemsView(self)

    def copy(self) -> dict:
        return {key: self[key] for key in self}

    def __reduce__(self):
        return (dict, (self.copy(),))

    def __repr__(self):
        self._materialize()
        return dict.__repr__(self)

    def __eq__(self, other):
        self._materialize()
        if isinstance(other, IouDict):
            other._materialize()
        return dict.__eq__(self, other)

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    __hash__ = None

    def __or__(self, other):
        self._materialize()
        return dict.__or__(self, other)

    def __ror__(self, other):
        self._materialize()
        return dict.__ror__(self, other)

    # ------------------------------------------------------------ changing
    # every change first makes the dict hold all entries, in order
    def __setitem__(self, key, value):
        self._materialize()
        dict.__setitem__(self, key, value)

    def __delitem__(self, key):
        self._materialize()
        dict.__delitem__(self, key)

    def __ior__(self, other):
        self._materialize()
        return dict.__ior__(self, other)

    def pop(self, *args):
        self._materialize()
        return dict.pop(self, *args)

    def popitem(self):
        self._materialize()
        return dict.popitem(self)

    def setdefault(self, key, default=None):
        self._materialize()
        return dict.setdefault(self, key, default)

    def update(self, *args, **kwargs):
        self._materialize()
        dict.update(self, *args, **kwargs)

    def clear(self):
        self._materialize()
        dict.clear(self)


def instance_dict(obj) -> dict:
    """``obj``'s own attribute dict, read past a class that redefines
    ``__dict__`` (the evaluators do, so that ``vars(ev)`` shows their
    attributes built on demand)."""
    getter = _DICT_SLOTS.get(type(obj))
    if getter is None:
        for klass in type(obj).__mro__:
            slot = klass.__dict__.get("__dict__")
            if isinstance(slot, types.GetSetDescriptorType):
                getter = _DICT_SLOTS[type(obj)] = slot.__get__
                break
        else:  # pragma: no cover - every evaluator has an instance dict
            raise TypeError(f"{type(obj).__name__} objects have no instance dict")
    return getter(obj)


_DICT_SLOTS: dict = {}


class Lazy:
    """An evaluator attribute (``evalImgs``, ``ious``, ``_gts``, ...) kept,
    as the original library keeps it, in the instance dict under its own
    name; while it is absent there after a native evaluation, the first read
    builds it from the evaluation's state.

    ``builder`` names the evaluator method ``builder(state)`` that makes the
    value.  Assigning stores the value as usual; :func:`reset_lazy` makes the
    attribute absent again (to be built on demand).
    """

    def __init__(self, builder: str):
        self.builder = builder

    def __set_name__(self, owner, name):
        self.name = name

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        d = instance_dict(obj)
        try:
            return d[self.name]
        except KeyError:
            pass
        state = d.get("_state")
        if state is None:
            raise AttributeError(f"{type(obj).__name__!r} object has no attribute {self.name!r}")
        value = getattr(obj, self.builder)(state)
        d[self.name] = value
        return value

    def __set__(self, obj, value):
        instance_dict(obj)[self.name] = value

    def __delete__(self, obj):
        try:
            del instance_dict(obj)[self.name]
        except KeyError:
            raise AttributeError(self.name) from None


def reset_lazy(obj, names: Sequence[str]) -> None:
    """Make the :class:`Lazy` attributes ``names`` of ``obj`` absent, to be
    built from its ``_state`` when read."""
    d = instance_dict(obj)
    for name in names:
        d.pop(name, None)


def materialize_lazy(obj, names: Sequence[str]) -> dict:
    """``obj``'s instance dict with every :class:`Lazy` attribute ``names``
    built (what ``vars(obj)`` shows)."""
    d = instance_dict(obj)
    if d.get("_state") is not None:
        for name in names:
            if name not in d:
                getattr(obj, name)
    return d


def lazy_dir(obj, names: Sequence[str]) -> list:
    """``dir(obj)`` without building the :class:`Lazy` attributes ``names``
    (``object.__dir__`` reads ``__dict__``, which builds them)."""
    return sorted(set(dir(type(obj))) | set(instance_dict(obj)) | set(names))


class LazyEvaluator:
    """What the drop-in evaluators (``COCOeval``, ``LVISEval``) share about the
    state a native evaluation builds on demand, and about subclass overrides.

    A subclass lists its :class:`Lazy` attributes in ``_LAZY`` (the per-image
    results first), the original's
    methods the native path stands in for in ``_NATIVE_METHODS``, and the
    ``eval_imgs`` style (``"coco"`` or ``"lvis"``) in ``_EVAL_IMGS_STYLE``.
    """

    _LAZY: Tuple[str, ...] = ()
    _NATIVE_METHODS: Tuple[str, ...] = ()
    _EVAL_IMGS_STYLE = "coco"

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        # the first class to declare its native methods is the one whose
        # methods count as not overridden
        if "_NATIVE_METHODS" in cls.__dict__:
            cls._native_class = cls

    @property
    def __dict__(self):
        """The instance's attributes, those built on demand included (so
        that ``vars(ev)`` shows ``evalImgs``/``eval_imgs``, ``ious``, ``_gts``
        and ``_dts`` after a native evaluation)."""
        return materialize_lazy(self, self._LAZY)

    @__dict__.setter
    def __dict__(self, value):
        d = instance_dict(self)
        d.clear()
        d.update(value)

    def __dir__(self):
        # (tab completion must not build the attributes)
        return lazy_dir(self, self._LAZY)

    def __getstate__(self):
        """Pickle and copy state: every attribute built, the native
        evaluation's arrays left out (the copy accumulates with the
        original library's loops)."""
        state = dict(materialize_lazy(self, self._LAZY))
        state.pop("_state", None)
        return state

    def _matched_state(self) -> Optional["Evaluation"]:
        """The native evaluation ``accumulate()`` may read instead of the
        per-image results (``_LAZY[0]``: ``evalImgs`` / ``eval_imgs``): set by a
        native ``evaluate()``, and those not read or assigned since (else None)."""
        d = instance_dict(self)
        state = d.get("_state")
        if state is None or not state.matched or self._LAZY[0] in d:
            return None
        return state

    def _overridden(self) -> list:
        """The methods of ``_NATIVE_METHODS`` a subclass overrides."""
        cls, native = type(self), self._native_class
        return [name for name in self._NATIVE_METHODS if getattr(cls, name) is not getattr(native, name)]

    # ------------------------------------------------------- built when read
    def _build_eval_imgs(self, state) -> list:
        return state.eval_imgs(self._EVAL_IMGS_STYLE)

    def _build_ious(self, state) -> dict:
        return state.iou_dict().copy()

    def _build_gts(self, state):
        gts = state.build_gts()
        touch_pairs(gts, state.img_ids, state.cat_ids, state.use_cats, state.pooled_cats)
        return gts

    def _build_dts(self, state):
        dts = state.build_dts()
        touch_pairs(dts, state.img_ids, state.cat_ids, state.use_cats, state.pooled_cats)
        return dts


def touch_pairs(table, img_ids: Sequence, cat_ids: Sequence, use_cats: bool,
                pooled_cats: Sequence) -> None:
    """Index ``table`` (a ``defaultdict(list)``) at every (image, category)
    the original's ``computeIoU`` loop indexes, in its order: the entries
    pycocotools' and lvis' ``_gts`` / ``_dts`` gain during ``evaluate()``."""
    if use_cats:
        for img in img_ids:
            for cat in cat_ids:
                table[img, cat]
    else:
        for img in img_ids:
            for cat in pooled_cats:
                table[img, cat]
