# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Run-length kernels: RLE string codec, boundary extraction and the IoU step.

Private module (``boundary_api.masks._mask``).  Everything here works on the COCO
run-length format: a mask of ``h x w`` pixels is read in column-major order and
stored as alternating runs of zeros and ones, the counts being packed into an
ASCII string (5 bits per character, a continuation bit, and counts after the
second one stored as a difference to the count two places before).

Inside the kernels a mask is held as its *ones-intervals*: a sorted list of
half-open ``[start, end)`` pixel positions in column-major order, maximal (no
two touch).  The public wrappers in ``boundary_api.masks.boundary`` validate input;
the ``nogil`` loops below trust it.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE, PyBytes_FromStringAndSize
from cpython.unicode cimport PyUnicode_Check, PyUnicode_AsUTF8AndSize
from cpython.bytes cimport PyBytes_Check
from libc.stdint cimport int64_t, uint64_t, int32_t, uint8_t
from libc.stdlib cimport malloc, calloc, realloc, free
from libc.string cimport memset, memcpy

import numpy as np

cdef extern from *:
    """
    #if defined(_MSC_VER)
    #include <intrin.h>
    static inline int ba_ctz64(unsigned long long x) {
        unsigned long i; _BitScanForward64(&i, x); return (int)i;
    }
    #else
    static inline int ba_ctz64(unsigned long long x) { return __builtin_ctzll(x); }
    #endif
    """
    int ba_ctz64(unsigned long long x) nogil



# The kernels, split by job (Cython textual includes: one extension module, so
# the C helpers stay inline across files):
include "_rle.pxi"        # buffers, RLE string codec, interval geometry, string tables
include "_boundary.pxi"   # boundary extraction (erosion by a square on run lengths)
include "_iou.pxi"        # the IoU step of the instance evaluators
include "_png.pxi"        # PNG decoding: inflater, chunks, row filters (panoptic and Cityscapes readers)
include "_panoptic.pxi"   # panoptic id maps: segment runs, pair counts, boundaries
include "_cityscapes.pxi" # Cityscapes instance masks: pixel and boundary counts per ground-truth index
include "_semantic.pxi"   # semantic label maps: confusion counts and per-class boundaries
include "_measures.pxi"   # the segmentation measures side by side (boundary_api.measures)
include "_polygon.pxi"    # COCO polygons to RLE strings (pycocotools' rasterisation, natively)
