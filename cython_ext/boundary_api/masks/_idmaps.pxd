# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
# Declarations of boundary_api.masks._idmaps for the protocol kernels (cimport).
# Definitions: _idmaps.pyx.

from libc.stdint cimport int64_t, uint32_t

from boundary_api.masks._rle cimport I64Vec

# Append to vecs[j] the maximal ones-intervals (row-major positions) of the
# segment sel[j], for every j, in one pass over the H x W id map; 0 or -1.
cdef int _pan_runs(const uint32_t* ids, int64_t H, int64_t W, const uint32_t* sel, Py_ssize_t k,
                   I64Vec* vecs) noexcept nogil

# ValueError unless ``sel`` is sorted and distinct (``name`` names it)
cdef _check_sorted_ids(const uint32_t[::1] sel, str name)

# Append to vecs[j] the intervals of the segment sel[j] (sorted, distinct), for
# every j, from the runs of an id map (``ends``, ``ids``: see pan_ids_to_runs),
# and to ``void_runs`` (unless NULL) the intervals of id 0; 0 or -1.
cdef int _pan_run_vecs(const int64_t* ends, const uint32_t* ids, Py_ssize_t n, const uint32_t* sel,
                       Py_ssize_t k, I64Vec* vecs, I64Vec* void_runs) noexcept nogil
