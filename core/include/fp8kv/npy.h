/* fp8kv/npy.h — NumPy .npy v1.0 files: the container of every golden vector.
 *
 * The vectors use little-endian, C order, 1-D or 2-D arrays of u1/u2/u4/f4/f8/i4/i8. Arrays an
 * engine saves (caches and outputs judged by `fp8kv judge-kv`) may also be i1/i2/f2, raw 1- or
 * 2-byte elements (|V1, |V2: ml_dtypes' float8 and bfloat16 saved by numpy), and have up to
 * FP8KV_NPY_MAX_ANY_DIMS dimensions (fp8kv_npy_read_any). Written files are byte-for-byte
 * deterministic (numpy's own header layout: the dict padded with spaces and a final newline to a
 * multiple of 64 bytes) and load with numpy.load.
 */
#ifndef FP8KV_NPY_H
#define FP8KV_NPY_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum fp8kv_npy_dtype {
    FP8KV_NPY_U8,
    FP8KV_NPY_U16,
    FP8KV_NPY_U32,
    FP8KV_NPY_F32,
    FP8KV_NPY_F64,
    FP8KV_NPY_I32,
    FP8KV_NPY_I64,
    FP8KV_NPY_I8,
    FP8KV_NPY_I16,
    FP8KV_NPY_F16,
    FP8KV_NPY_RAW8,  /* |V1: one opaque byte (an ml_dtypes float8 saved by numpy) */
    FP8KV_NPY_RAW16, /* |V2: two opaque bytes (an ml_dtypes bfloat16) */
    FP8KV_NPY_DTYPE_COUNT
};

#define FP8KV_NPY_MAX_DIMS 2
#define FP8KV_NPY_MAX_ANY_DIMS 8

struct fp8kv_npy {
    enum fp8kv_npy_dtype dtype;
    int ndim;                            /* 1 or 2 (up to FP8KV_NPY_MAX_ANY_DIMS: read_any) */
    size_t shape[FP8KV_NPY_MAX_DIMS];    /* shape[1] is 1 when ndim is 1; beyond 2-D, the product
                                            of every dimension after the first */
    size_t dims[FP8KV_NPY_MAX_ANY_DIMS]; /* the shape as the file gives it (ndim entries) */
    size_t count;                        /* shape[0] * shape[1] */
    void *data;                          /* count elements, owned; NULL after a header-only read */
};

/* fp8kv_npy_descr: numpy's descr string of a dtype ("|u1", "<u2", "<u4", "<f4", "<f8", "<i4",
 * "<i8", "|i1", "<i2", "<f2", "|V1", "|V2"). */
const char *fp8kv_npy_descr(enum fp8kv_npy_dtype dtype);

/* fp8kv_npy_elem_size: bytes per element of a dtype. */
size_t fp8kv_npy_elem_size(enum fp8kv_npy_dtype dtype);

/* fp8kv_npy_write: writes an array to path atomically (path.tmp, then rename). shape has
 * ndim entries. Returns 0, or FP8KV_ERR with a message naming path. */
int fp8kv_npy_write(const char *path, enum fp8kv_npy_dtype dtype, int ndim, const size_t *shape,
                    const void *data);

/* fp8kv_npy_read: reads a whole file into out (out->data malloc'd; free with fp8kv_npy_free).
 * Rejects a bad magic, version, header dict, dtype outside the list above, fortran_order True,
 * more than 2 dimensions, and a data length that does not match the shape, with a message
 * naming path and what is wrong. Returns 0 or FP8KV_ERR. */
int fp8kv_npy_read(const char *path, struct fp8kv_npy *out);

/* fp8kv_npy_read_any: fp8kv_npy_read, allowing up to FP8KV_NPY_MAX_ANY_DIMS dimensions. */
int fp8kv_npy_read_any(const char *path, struct fp8kv_npy *out);

/* fp8kv_npy_read_header: as fp8kv_npy_read (length check included) but leaves data NULL.
 * fp8kv_npy_read_header_any: the same, allowing fp8kv_npy_read_any's dimensions. */
int fp8kv_npy_read_header(const char *path, struct fp8kv_npy *out);
int fp8kv_npy_read_header_any(const char *path, struct fp8kv_npy *out);

/* fp8kv_npy_read_expect: fp8kv_npy_read, then checks the dtype and ndim (and shape[0] when
 * want_len is not 0), naming path on a mismatch. */
int fp8kv_npy_read_expect(const char *path, enum fp8kv_npy_dtype dtype, int ndim, size_t want_len,
                          struct fp8kv_npy *out);

/* fp8kv_npy_parse: fp8kv_npy_read of a whole .npy file held in memory (the len bytes at
 * bytes): the same checks and messages, name (a path, or NULL) naming it; out->data receives a
 * malloc'd copy of the elements. A reader that hashes the bytes it read parses these very
 * bytes, so what it judges is what it hashed. 0 or FP8KV_ERR. */
int fp8kv_npy_parse(const void *bytes, size_t len, const char *name, struct fp8kv_npy *out);

/* fp8kv_npy_parse_header: as fp8kv_npy_parse (length check included) but leaves data NULL. */
int fp8kv_npy_parse_header(const void *bytes, size_t len, const char *name, struct fp8kv_npy *out);

/* fp8kv_npy_parse_expect: fp8kv_npy_parse, then fp8kv_npy_read_expect's checks of the dtype,
 * ndim and (want_len not 0) shape[0], naming name on a mismatch. */
int fp8kv_npy_parse_expect(const void *bytes, size_t len, const char *name,
                           enum fp8kv_npy_dtype dtype, int ndim, size_t want_len,
                           struct fp8kv_npy *out);

/* fp8kv_npy_free: frees out->data (safe on a zeroed or already freed struct). */
void fp8kv_npy_free(struct fp8kv_npy *out);

#ifdef __cplusplus
}
#endif
#endif
