/* npy.c — NumPy .npy files (fp8kv/npy.h): a deterministic writer and a reader that trusts
 * nothing in the file.
 *
 * Layout: "\x93NUMPY", major, minor, header length (u16 LE for 1.0, u32 LE for 2.0), an ASCII
 * Python dict literal padded with spaces and a final '\n', then the raw C-order elements.
 */
#include "fp8kv/npy.h"

#include "fp8kv/diag.h"
#include "fp8kv/fileio.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The element bytes are written and read as they lie in memory; that is numpy's '<' order
 * only on a little-endian host. */
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
               "fp8kv's .npy code needs a little-endian host");

#define MAGIC "\x93NUMPY"
#define MAGIC_LEN 6
/* numpy aligns the data to 64 bytes (ARRAY_ALIGN) and leaves room for the first axis to grow
 * to 21 digits (GROWTH_AXIS_MAX_DIGITS); copying both makes our files byte-identical to
 * numpy.save's. */
#define ARRAY_ALIGN 64
#define GROWTH_AXIS_MAX_DIGITS 21
/* A v2.0 header may claim up to 4 GiB; ours are ~100 bytes, so anything past this is hostile. */
#define MAX_HEADER_LEN (1u << 20)

static const struct {
    const char *descr;
    size_t size;
} dtypes[FP8KV_NPY_DTYPE_COUNT] = {
    [FP8KV_NPY_U8] = {"|u1", 1},  [FP8KV_NPY_U16] = {"<u2", 2},  [FP8KV_NPY_U32] = {"<u4", 4},
    [FP8KV_NPY_F32] = {"<f4", 4}, [FP8KV_NPY_F64] = {"<f8", 8},  [FP8KV_NPY_I32] = {"<i4", 4},
    [FP8KV_NPY_I64] = {"<i8", 8}, [FP8KV_NPY_I8] = {"|i1", 1},   [FP8KV_NPY_I16] = {"<i2", 2},
    [FP8KV_NPY_F16] = {"<f2", 2}, [FP8KV_NPY_RAW8] = {"|V1", 1}, [FP8KV_NPY_RAW16] = {"|V2", 2},
};

const char *fp8kv_npy_descr(enum fp8kv_npy_dtype dtype)
{
    return (unsigned)dtype < FP8KV_NPY_DTYPE_COUNT ? dtypes[dtype].descr : NULL;
}

size_t fp8kv_npy_elem_size(enum fp8kv_npy_dtype dtype)
{
    return (unsigned)dtype < FP8KV_NPY_DTYPE_COUNT ? dtypes[dtype].size : 0;
}

/* ---- writing ---------------------------------------------------------------------------- */

/* element_bytes: shape[0] * shape[1] * elem, or -1 when that overflows size_t. */
static int element_bytes(const size_t shape[2], size_t elem, size_t *count, size_t *bytes)
{
    if (shape[1] != 0 && shape[0] > SIZE_MAX / shape[1])
        return -1;
    *count = shape[0] * shape[1];
    if (elem != 0 && *count > SIZE_MAX / elem)
        return -1;
    *bytes = *count * elem;
    return 0;
}

/* format_header: the whole prefix (magic through '\n') into buf, as numpy 1.24 writes it:
 * keys sorted, repr() of each value, growth spaces, then spaces and '\n' up to a multiple of
 * 64 — a whole extra 64 when already aligned, as numpy does. Returns its length or 0. */
static size_t format_header(char *buf, size_t cap, enum fp8kv_npy_dtype dtype, int ndim,
                            const size_t shape[2])
{
    char dict[160];
    char first[32];
    int n;
    if (ndim == 1)
        n = snprintf(dict, sizeof dict,
                     "{'descr': '%s', 'fortran_order': False, 'shape': (%zu,), }",
                     dtypes[dtype].descr, shape[0]);
    else
        n = snprintf(dict, sizeof dict,
                     "{'descr': '%s', 'fortran_order': False, 'shape': (%zu, %zu), }",
                     dtypes[dtype].descr, shape[0], shape[1]);
    int first_len = snprintf(first, sizeof first, "%zu", shape[0]);
    if (n < 0 || (size_t)n >= sizeof dict || first_len < 0)
        return 0;
    size_t dict_len = (size_t)n;
    if (first_len < GROWTH_AXIS_MAX_DIGITS)
        dict_len += (size_t)(GROWTH_AXIS_MAX_DIGITS - first_len);
    size_t hlen = dict_len + 1; /* the final '\n' */
    size_t pad = ARRAY_ALIGN - (MAGIC_LEN + 4 + hlen) % ARRAY_ALIGN;
    size_t total = MAGIC_LEN + 4 + hlen + pad;
    if (total > cap || hlen + pad > 0xFFFF)
        return 0;
    memcpy(buf, MAGIC, MAGIC_LEN);
    buf[6] = 1; /* version 1.0 */
    buf[7] = 0;
    buf[8] = (char)((hlen + pad) & 0xFF);
    buf[9] = (char)((hlen + pad) >> 8);
    memcpy(buf + 10, dict, (size_t)n);
    memset(buf + 10 + n, ' ', total - 11 - (size_t)n);
    buf[total - 1] = '\n';
    return total;
}

int fp8kv_npy_write(const char *path, enum fp8kv_npy_dtype dtype, int ndim, const size_t *shape,
                    const void *data)
{
    if (path == NULL)
        return fp8kv_fail("npy write: no path given");
    if ((unsigned)dtype >= FP8KV_NPY_DTYPE_COUNT)
        return fp8kv_fail("%s: cannot write dtype %d (not one of u1/u2/u4/f4/f8/i4/i8)", path,
                          (int)dtype);
    if (ndim < 1 || ndim > FP8KV_NPY_MAX_DIMS || shape == NULL)
        return fp8kv_fail("%s: cannot write an array of %d dimensions (1 or 2 supported)", path,
                          ndim);
    size_t dims[2] = {shape[0], ndim == 2 ? shape[1] : 1};
    size_t count, bytes;
    if (element_bytes(dims, dtypes[dtype].size, &count, &bytes) != 0)
        return fp8kv_fail("%s: shape too large (byte count overflows)", path);
    if (data == NULL && bytes != 0)
        return fp8kv_fail("%s: no data given for %zu elements", path, count);

    char header[256];
    size_t header_len = format_header(header, sizeof header, dtype, ndim, dims);
    if (header_len == 0)
        return fp8kv_fail("%s: cannot format the .npy header", path);

    /* Write beside the target and rename, so a reader never sees half a file. */
    size_t path_len = strlen(path);
    char *tmp = malloc(path_len + sizeof ".tmp");
    if (tmp == NULL)
        return fp8kv_fail("%s: out of memory", path);
    memcpy(tmp, path, path_len);
    memcpy(tmp + path_len, ".tmp", sizeof ".tmp");

    FILE *f = fopen(tmp, "wb");
    if (f == NULL) {
        int e = errno;
        free(tmp);
        return fp8kv_fail("%s: cannot create %s.tmp: %s", path, path, strerror(e));
    }
    int ok = fwrite(header, 1, header_len, f) == header_len;
    if (ok && bytes != 0)
        ok = fwrite(data, 1, bytes, f) == bytes;
    if (fflush(f) != 0 || ferror(f))
        ok = 0;
    int e = errno;
    if (fclose(f) != 0) {
        if (ok)
            e = errno;
        ok = 0;
    }
    if (ok && rename(tmp, path) != 0) {
        e = errno;
        ok = 0;
    }
    if (!ok) {
        remove(tmp);
        free(tmp);
        return fp8kv_fail("%s: write failed: %s", path, strerror(e));
    }
    free(tmp);
    return 0;
}

/* ---- reading: the header dict ----------------------------------------------------------- */

/* The dict is parsed as the small subset of Python literals numpy writes: string keys, one
 * string, one bool and one tuple of non-negative ints, in any order, with optional trailing
 * commas. Anything else is an error, never a guess. */
struct parser {
    const char *p, *end;
    const char *path;
    int max_dims; /* FP8KV_NPY_MAX_DIMS, or FP8KV_NPY_MAX_ANY_DIMS for read_any */
};

static void skip_ws(struct parser *ps)
{
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
        ps->p++;
}

static int accept(struct parser *ps, char c)
{
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == c) {
        ps->p++;
        return 1;
    }
    return 0;
}

/* parse_string: a '…' or "…" literal without escapes into out[cap]. */
static int parse_string(struct parser *ps, char *out, size_t cap)
{
    skip_ws(ps);
    if (ps->p >= ps->end || (*ps->p != '\'' && *ps->p != '"'))
        return -1;
    char quote = *ps->p++;
    size_t n = 0;
    while (ps->p < ps->end && *ps->p != quote) {
        if (*ps->p == '\\' || n + 1 >= cap)
            return -1;
        out[n++] = *ps->p++;
    }
    if (ps->p >= ps->end)
        return -1;
    ps->p++;
    out[n] = '\0';
    return 0;
}

static int accept_word(struct parser *ps, const char *word)
{
    skip_ws(ps);
    size_t n = strlen(word);
    if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n) != 0)
        return 0;
    /* "Falsey" is not False. */
    if ((size_t)(ps->end - ps->p) > n) {
        char c = ps->p[n];
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')
            return 0;
    }
    ps->p += n;
    return 1;
}

/* parse_shape: a Python tuple "(a,)" or "(a, b)" (a trailing comma allowed) of decimal ints.
 * On error the message is recorded and FP8KV_ERR returned. */
static int parse_shape(struct parser *ps, int *ndim, size_t shape[FP8KV_NPY_MAX_ANY_DIMS])
{
    if (!accept(ps, '('))
        return fp8kv_fail("%s: header 'shape' is not a tuple", ps->path);
    int n = 0;
    int trailing_comma = 0;
    for (;;) {
        if (accept(ps, ')'))
            break;
        skip_ws(ps);
        if (ps->p < ps->end && *ps->p == '-')
            return fp8kv_fail("%s: header 'shape' has a negative dimension", ps->path);
        if (ps->p >= ps->end || *ps->p < '0' || *ps->p > '9')
            return fp8kv_fail("%s: header 'shape' is not a tuple of integers", ps->path);
        size_t v = 0;
        while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9') {
            unsigned d = (unsigned)(*ps->p++ - '0');
            if (v > (SIZE_MAX - d) / 10)
                return fp8kv_fail("%s: header 'shape' has a dimension too large", ps->path);
            v = v * 10 + d;
        }
        if (n >= ps->max_dims)
            return fp8kv_fail("%s: header 'shape' has more than %d dimensions", ps->path,
                              ps->max_dims);
        shape[n++] = v;
        trailing_comma = accept(ps, ',');
        if (!trailing_comma) {
            if (!accept(ps, ')'))
                return fp8kv_fail("%s: header 'shape' is not a tuple of integers", ps->path);
            break;
        }
    }
    if (n == 0)
        return fp8kv_fail("%s: header 'shape' is () (0-d arrays are not supported)", ps->path);
    /* "(3)" is the int 3 in Python, not a tuple. */
    if (n == 1 && !trailing_comma)
        return fp8kv_fail("%s: header 'shape' is not a tuple", ps->path);
    *ndim = n;
    return 0;
}

/* descr_to_dtype: numpy writes "|u1" for bytes; the other spellings of a one-byte type are
 * accepted because byte order means nothing there, and so are "<V2"/">V2" (opaque bytes have
 * no order). Wider numeric types must say little-endian. */
static int descr_to_dtype(const char *descr, enum fp8kv_npy_dtype *dtype)
{
    static const struct {
        const char *alias;
        enum fp8kv_npy_dtype dtype;
    } aliases[] = {
        {"<u1", FP8KV_NPY_U8},    {">u1", FP8KV_NPY_U8},   {"=u1", FP8KV_NPY_U8},
        {"u1", FP8KV_NPY_U8},     {"<i1", FP8KV_NPY_I8},   {">i1", FP8KV_NPY_I8},
        {"=i1", FP8KV_NPY_I8},    {"i1", FP8KV_NPY_I8},    {"<V1", FP8KV_NPY_RAW8},
        {">V1", FP8KV_NPY_RAW8},  {"V1", FP8KV_NPY_RAW8},  {"<V2", FP8KV_NPY_RAW16},
        {">V2", FP8KV_NPY_RAW16}, {"V2", FP8KV_NPY_RAW16},
    };
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
        if (strcmp(descr, aliases[i].alias) == 0) {
            *dtype = aliases[i].dtype;
            return 0;
        }
    for (int d = 0; d < FP8KV_NPY_DTYPE_COUNT; d++)
        if (strcmp(descr, dtypes[d].descr) == 0) {
            *dtype = (enum fp8kv_npy_dtype)d;
            return 0;
        }
    return -1;
}

static int parse_dict(struct parser *ps, struct fp8kv_npy *out)
{
    int have_descr = 0, have_order = 0, have_shape = 0;
    if (!accept(ps, '{'))
        return fp8kv_fail("%s: header is not a dict", ps->path);
    for (;;) {
        if (accept(ps, '}'))
            break;
        char key[32];
        if (parse_string(ps, key, sizeof key) != 0)
            return fp8kv_fail("%s: header dict has a malformed key", ps->path);
        if (!accept(ps, ':'))
            return fp8kv_fail("%s: header dict lacks ':' after '%s'", ps->path, key);
        if (strcmp(key, "descr") == 0) {
            char descr[32];
            if (have_descr++)
                return fp8kv_fail("%s: header repeats 'descr'", ps->path);
            if (parse_string(ps, descr, sizeof descr) != 0)
                return fp8kv_fail("%s: header 'descr' is not a simple string", ps->path);
            if (descr_to_dtype(descr, &out->dtype) != 0)
                return fp8kv_fail(
                    "%s: unsupported descr '%s' (want |u1, <u2, <u4, <f4, <f8, <i4, <i8, |i1, "
                    "<i2, <f2, |V1 or |V2)",
                    ps->path, descr);
        } else if (strcmp(key, "fortran_order") == 0) {
            if (have_order++)
                return fp8kv_fail("%s: header repeats 'fortran_order'", ps->path);
            if (accept_word(ps, "True"))
                return fp8kv_fail("%s: fortran_order True is not supported (C order only)",
                                  ps->path);
            if (!accept_word(ps, "False"))
                return fp8kv_fail("%s: header 'fortran_order' is not a bool", ps->path);
        } else if (strcmp(key, "shape") == 0) {
            if (have_shape++)
                return fp8kv_fail("%s: header repeats 'shape'", ps->path);
            if (parse_shape(ps, &out->ndim, out->dims) != 0)
                return FP8KV_ERR;
        } else {
            return fp8kv_fail("%s: header has unexpected key '%s'", ps->path, key);
        }
        if (!accept(ps, ',')) {
            if (!accept(ps, '}'))
                return fp8kv_fail("%s: header dict is malformed (expected ',' or '}')", ps->path);
            break;
        }
    }
    skip_ws(ps);
    if (ps->p != ps->end)
        return fp8kv_fail("%s: header has bytes after the dict", ps->path);
    const char *missing = !have_shape ? "shape" : NULL; /* the first missing key is named */
    if (!have_order)
        missing = "fortran_order";
    if (!have_descr)
        missing = "descr";
    if (missing != NULL)
        return fp8kv_fail("%s: header lacks key '%s'", ps->path, missing);
    return 0;
}

/* ---- reading: the file ------------------------------------------------------------------ */

/* parse_prefix: the magic, the version and the header length from the first `have` bytes of a
 * file (at most 12 are looked at); *prefix_len receives the bytes before the header (10 for
 * 1.0, 12 for 2.0). 0 or FP8KV_ERR. */
static int parse_prefix(const unsigned char *pre, size_t have, const char *path, size_t *hlen,
                        size_t *prefix_len)
{
    if (have < MAGIC_LEN ? memcmp(pre, MAGIC, have) != 0 : memcmp(pre, MAGIC, MAGIC_LEN) != 0)
        return fp8kv_fail("%s: bad magic (not a .npy file)", path);
    if (have < 8)
        return fp8kv_fail("%s: truncated header (%zu bytes)", path, have);
    /* 2.0 differs only in a 4-byte header length; 3.0 allows UTF-8 we would not accept. */
    if ((pre[6] != 1 && pre[6] != 2) || pre[7] != 0)
        return fp8kv_fail("%s: unsupported .npy version %u.%u (1.0 or 2.0 only)", path, pre[6],
                          pre[7]);
    const size_t len_bytes = pre[6] == 1 ? 2 : 4;
    if (have < 8 + len_bytes)
        return fp8kv_fail("%s: truncated header (no header length)", path);
    *hlen = (size_t)pre[8] | (size_t)pre[9] << 8;
    if (len_bytes == 4)
        *hlen |= (size_t)pre[10] << 16 | (size_t)pre[11] << 24;
    if (*hlen > MAX_HEADER_LEN)
        return fp8kv_fail("%s: header length %zu is implausible", path, *hlen);
    *prefix_len = 8 + len_bytes;
    return 0;
}

/* read_prefix: parse_prefix of the first bytes of f, read no further than the prefix. */
static int read_prefix(FILE *f, const char *path, size_t *hlen, size_t *prefix_len)
{
    unsigned char pre[12];
    size_t got = fread(pre, 1, 8, f);
    if (got == 8 && (pre[6] == 1 || pre[6] == 2) && pre[7] == 0)
        got += fread(pre + 8, 1, pre[6] == 1 ? 2 : 4, f);
    return parse_prefix(pre, got, path, hlen, prefix_len);
}

/* parse_header: the hlen bytes of the header dict, ASCII, parsed into out's dtype and shape.
 * 0 or FP8KV_ERR. */
static int parse_header(const char *header, size_t hlen, const char *path, int max_dims,
                        struct fp8kv_npy *out)
{
    for (size_t i = 0; i < hlen; i++)
        if ((unsigned char)header[i] >= 0x80 || header[i] == '\0')
            return fp8kv_fail("%s: header is not ASCII text", path);
    struct parser ps = {header, header + hlen, path, max_dims};
    if (parse_dict(&ps, out) != 0)
        return FP8KV_ERR;
    /* the 2-D view: the first dimension, and the product of the others (1 for a 1-D array) */
    out->shape[0] = out->dims[0];
    out->shape[1] = 1;
    for (int d = 1; d < out->ndim; d++) {
        if (out->dims[d] != 0 && out->shape[1] > SIZE_MAX / out->dims[d])
            return fp8kv_fail("%s: header 'shape' is too large (element count overflows)", path);
        out->shape[1] *= out->dims[d];
    }
    return 0;
}

/* read_header: parse_header of the next hlen bytes of f. 0 or FP8KV_ERR. */
static int read_header(FILE *f, const char *path, size_t hlen, int max_dims, struct fp8kv_npy *out)
{
    char *header = malloc(hlen + 1);
    if (header == NULL)
        return fp8kv_fail("%s: out of memory", path);
    int rc = 0;
    if (fread(header, 1, hlen, f) != hlen)
        rc = fp8kv_fail("%s: truncated header (shorter than its stated %zu bytes)", path, hlen);
    if (rc == 0)
        rc = parse_header(header, hlen, path, max_dims, out);
    free(header);
    return rc;
}

/* check_data_length: the data after offset bytes of a file of file_size bytes is exactly the
 * shape's *bytes. 0 or FP8KV_ERR. */
static int check_data_length(const char *path, struct fp8kv_npy *out, unsigned long long file_size,
                             unsigned long long offset, size_t *bytes)
{
    if (element_bytes(out->shape, dtypes[out->dtype].size, &out->count, bytes) != 0)
        return fp8kv_fail("%s: shape (%zu, %zu) is too large (byte count overflows)", path,
                          out->shape[0], out->shape[1]);
    const unsigned long long have = file_size < offset ? 0ULL : file_size - offset;
    if (file_size < offset || have < *bytes)
        return fp8kv_fail("%s: truncated data (%llu bytes, shape needs %zu)", path, have, *bytes);
    if (have > *bytes)
        return fp8kv_fail("%s: %llu trailing bytes after the data", path, have - *bytes);
    return 0;
}

/* read_data: the bytes of the elements into out->data (never NULL after a full read, even for
 * an empty array), re-checking the length while reading: the file may change after fstat. */
static int read_data(FILE *f, const char *path, size_t bytes, struct fp8kv_npy *out)
{
    out->data = malloc(bytes != 0 ? bytes : 1);
    if (out->data == NULL)
        return fp8kv_fail("%s: out of memory for %zu bytes", path, bytes);
    if (fread(out->data, 1, bytes, f) != bytes)
        return fp8kv_fail("%s: truncated data (read error or file changed)", path);
    if (fgetc(f) != EOF)
        return fp8kv_fail("%s: trailing bytes after the data (file changed)", path);
    return 0;
}

/* read_file: parses the header, checks the data length against the file size and, when
 * want_data, reads the elements. out is zeroed first so it is safe to free on any path. */
static int read_file(const char *path, struct fp8kv_npy *out, int want_data, int max_dims)
{
    if (out == NULL)
        return fp8kv_fail("npy read: no output given");
    memset(out, 0, sizeof *out);
    if (path == NULL)
        return fp8kv_fail("npy read: no path given");
    FILE *f = fp8kv_fopen_regular(path, NULL);
    if (f == NULL)
        return FP8KV_ERR;
    struct stat st;
    size_t hlen = 0, prefix_len = 0, bytes = 0;
    int rc = 0;
    if (fstat(fileno(f), &st) != 0)
        rc = fp8kv_fail("%s: cannot stat: %s", path, strerror(errno));
    else if (!S_ISREG(st.st_mode))
        rc = fp8kv_fail("%s: not a regular file", path);
    if (rc == 0)
        rc = read_prefix(f, path, &hlen, &prefix_len);
    if (rc == 0)
        rc = read_header(f, path, hlen, max_dims, out);
    if (rc == 0)
        rc = check_data_length(path, out, (unsigned long long)st.st_size,
                               (unsigned long long)(prefix_len + hlen), &bytes);
    if (rc == 0 && want_data)
        rc = read_data(f, path, bytes, out);
    fclose(f);
    if (rc != 0)
        fp8kv_npy_free(out);
    return rc;
}

/* parse_bytes: read_file over a whole file held in memory: the same checks and messages, the
 * elements copied out of the len bytes at p. */
static int parse_bytes(const void *p, size_t len, const char *name, struct fp8kv_npy *out,
                       int want_data, int max_dims)
{
    if (out == NULL)
        return fp8kv_fail("npy parse: no output given");
    memset(out, 0, sizeof *out);
    if (name == NULL)
        name = "(a .npy file in memory)";
    if (p == NULL && len != 0)
        return fp8kv_fail("%s: no bytes given", name);
    static const unsigned char none[1];
    const unsigned char *b = p != NULL ? p : none;
    size_t hlen = 0, prefix_len = 0, bytes = 0;
    int rc = parse_prefix(b, len < 12 ? len : 12, name, &hlen, &prefix_len);
    if (rc == 0 && len - prefix_len < hlen)
        rc = fp8kv_fail("%s: truncated header (shorter than its stated %zu bytes)", name, hlen);
    if (rc == 0)
        rc = parse_header((const char *)b + prefix_len, hlen, name, max_dims, out);
    if (rc == 0)
        rc = check_data_length(name, out, len, (unsigned long long)(prefix_len + hlen), &bytes);
    if (rc == 0 && want_data) {
        out->data = malloc(bytes != 0 ? bytes : 1);
        if (out->data == NULL)
            rc = fp8kv_fail("%s: out of memory for %zu bytes", name, bytes);
        else if (bytes != 0)
            memcpy(out->data, b + prefix_len + hlen, bytes);
    }
    if (rc != 0)
        fp8kv_npy_free(out);
    return rc;
}

/* check_expect: out's dtype, ndim and (want_len not 0) first dimension are those wanted; on a
 * mismatch out is freed and the message names path. */
static int check_expect(const char *path, enum fp8kv_npy_dtype dtype, int ndim, size_t want_len,
                        struct fp8kv_npy *out)
{
    if (out->dtype != dtype) {
        fp8kv_fail("%s: dtype %s, expected %s", path, fp8kv_npy_descr(out->dtype),
                   fp8kv_npy_descr(dtype) ? fp8kv_npy_descr(dtype) : "(invalid)");
    } else if (out->ndim != ndim) {
        fp8kv_fail("%s: %d dimensions, expected %d", path, out->ndim, ndim);
    } else if (want_len != 0 && out->shape[0] != want_len) {
        fp8kv_fail("%s: %zu rows, expected %zu", path, out->shape[0], want_len);
    } else {
        return 0;
    }
    fp8kv_npy_free(out);
    return FP8KV_ERR;
}

int fp8kv_npy_parse(const void *bytes, size_t len, const char *name, struct fp8kv_npy *out)
{
    return parse_bytes(bytes, len, name, out, 1, FP8KV_NPY_MAX_DIMS);
}

int fp8kv_npy_parse_header(const void *bytes, size_t len, const char *name, struct fp8kv_npy *out)
{
    return parse_bytes(bytes, len, name, out, 0, FP8KV_NPY_MAX_DIMS);
}

int fp8kv_npy_parse_expect(const void *bytes, size_t len, const char *name,
                           enum fp8kv_npy_dtype dtype, int ndim, size_t want_len,
                           struct fp8kv_npy *out)
{
    if (fp8kv_npy_parse(bytes, len, name, out) != 0)
        return FP8KV_ERR;
    return check_expect(name ? name : "(a .npy file in memory)", dtype, ndim, want_len, out);
}

int fp8kv_npy_read(const char *path, struct fp8kv_npy *out)
{
    return read_file(path, out, 1, FP8KV_NPY_MAX_DIMS);
}

int fp8kv_npy_read_any(const char *path, struct fp8kv_npy *out)
{
    return read_file(path, out, 1, FP8KV_NPY_MAX_ANY_DIMS);
}

int fp8kv_npy_read_header(const char *path, struct fp8kv_npy *out)
{
    return read_file(path, out, 0, FP8KV_NPY_MAX_DIMS);
}

int fp8kv_npy_read_header_any(const char *path, struct fp8kv_npy *out)
{
    return read_file(path, out, 0, FP8KV_NPY_MAX_ANY_DIMS);
}

int fp8kv_npy_read_expect(const char *path, enum fp8kv_npy_dtype dtype, int ndim, size_t want_len,
                          struct fp8kv_npy *out)
{
    if (fp8kv_npy_read(path, out) != 0)
        return FP8KV_ERR;
    return check_expect(path, dtype, ndim, want_len, out);
}

void fp8kv_npy_free(struct fp8kv_npy *out)
{
    if (out == NULL)
        return;
    free(out->data);
    out->data = NULL;
}
