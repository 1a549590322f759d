# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
# Declarations of boundary_api.masks._png for the protocol kernels (cimport): the
# inflater, the byte-wise row filter (inline), and the label-map decoder.
# Definitions: _png.pyx.

from libc.stdint cimport uint8_t, uint16_t
from libc.string cimport memcpy

# zlib stream -> ``out`` (zeroed, exactly ``cap`` bytes expected, checked against
# the stream's Adler-32); 0 or -1
cdef int _inflate(const uint8_t* src, Py_ssize_t n, uint8_t* out, Py_ssize_t cap) noexcept nogil


cdef inline void _unfilter_row(int f, const uint8_t* line, const uint8_t* prev, uint8_t* cur,
                               Py_ssize_t rb, int bpp) noexcept nogil:
    """PNG row reconstruction (filters 1-4; ``prev`` NULL on the first row)."""
    cdef Py_ssize_t x
    cdef int a, bb, c, p, pa, pb, pc
    if f == 2 and prev == NULL:
        memcpy(cur, line, rb)
    elif f == 1:
        for x in range(rb):
            cur[x] = <uint8_t> (line[x] + (cur[x - bpp] if x >= bpp else 0))
    elif f == 2:
        for x in range(rb):
            cur[x] = <uint8_t> (line[x] + prev[x])
    elif f == 3:
        for x in range(rb):
            a = cur[x - bpp] if x >= bpp else 0
            bb = prev[x] if prev != NULL else 0
            cur[x] = <uint8_t> (line[x] + ((a + bb) >> 1))
    else:
        for x in range(rb):
            a = cur[x - bpp] if x >= bpp else 0
            bb = prev[x] if prev != NULL else 0
            c = prev[x - bpp] if (prev != NULL and x >= bpp) else 0
            p = a + bb - c
            pa = p - a if p >= a else a - p
            pb = p - bb if p >= bb else bb - p
            pc = p - c if p >= c else c - p
            if pa <= pb and pa <= pc:
                cur[x] = <uint8_t> (line[x] + a)
            elif pb <= pc:
                cur[x] = <uint8_t> (line[x] + bb)
            else:
                cur[x] = <uint8_t> (line[x] + c)


# --------------------------------------------------------------------------
# Label maps: single-channel PNGs (palette indices, grey samples) decoded to
# the values Pillow's ``np.array(Image.open(path))`` gives, without the GIL.
#
#     cdef PngLabelInfo info
#     kind = png_label_info(data, n, &info)      # 0: not decoded here (use Pillow)
#     scratch = malloc(png_label_scratch_size(&info))
#     status = png_decode_labels(&info, out, scratch)   # out: height * width values
#
# The functions touch no global state and may run on any number of threads at
# once, each with its own ``info``, ``scratch`` and ``out``.
# --------------------------------------------------------------------------

# what the values of a natively decodable label map are (``PngLabelInfo.kind``)
cdef enum:
    PNG_LABEL_PALETTE = 1   # colour type 3, 1/2/4/8 bits: the palette indices (0..2**depth - 1)
    PNG_LABEL_GRAY = 2      # colour type 0, 1/2/4/8 bits: Pillow's values: 1 bit 0/1 (mode "1"),
                            #   2 bits 0/85/170/255 and 4 bits 0/17/.../255 (Pillow scales them
                            #   to mode "L"), 8 bits as stored
    PNG_LABEL_GRAY16 = 3    # colour type 0, 16 bits: the samples (mode "I;16"), 0..65535

ctypedef struct PngLabelInfo:
    Py_ssize_t height
    Py_ssize_t width
    int depth               # bits per sample: 1, 2, 4, 8 or 16
    int color_type          # 0 (grey) or 3 (palette)
    int kind                # PNG_LABEL_*
    const uint8_t* file     # the file's bytes, as given to png_label_info (they must stay valid
    Py_ssize_t file_size    #   and unchanged until the decoding is done)
    Py_ssize_t idat         # offset of the first IDAT chunk (its length field)
    Py_ssize_t idat_chunks  # number of IDAT chunks (consecutive)
    Py_ssize_t zlen         # bytes of image data in them

# Reads the header and walks the chunks (CRCs checked) of the PNG file ``s[:n]``.
# Returns the kind (> 0) with ``info`` filled when the file is a non-interlaced
# palette or greyscale PNG this decoder reads exactly as Pillow does; 0 for
# anything else (interlaced, colour, alpha, not a PNG, a chunk Pillow would
# read differently or refuse, a wrong CRC, a header promising more pixels than
# the data can hold: the caller reads such a file with Pillow).  It allocates
# nothing; ``height * width`` is not checked against any limit (the caller's).
cdef int png_label_info(const uint8_t* s, Py_ssize_t n, PngLabelInfo* info) noexcept nogil

# Bytes of scratch memory png_decode_labels needs (any content, any alignment).
cdef Py_ssize_t png_label_scratch_size(const PngLabelInfo* info) noexcept nogil

# Inflates and unfilters the image into ``out``: height * width values,
# row-major, as the kind says.  0 ok; 1 the data is corrupt (a bad Deflate
# stream or checksum, too few or too many bytes, an unknown filter type):
# ``out`` is then partly written, and the caller reads the file with Pillow,
# which decides (Pillow ignores some damage, e.g. a wrong Adler-32).
cdef int png_decode_labels(const PngLabelInfo* info, uint16_t* out, uint8_t* scratch) noexcept nogil

# The same into one byte per pixel, for depths up to 8 (returns 2, writing
# nothing, for 16 bits).
cdef int png_decode_labels_u8(const PngLabelInfo* info, uint8_t* out, uint8_t* scratch) noexcept nogil
