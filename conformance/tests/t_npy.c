/* t_npy.c — the .npy container: round trips, numpy's exact header bytes, determinism, and
 * the rejection (with a message naming the file) of every malformed file the reader guards
 * against. Each test works in its own directory under /tmp. */
#include <criterion/criterion.h>

#include "fp8kv/diag.h"
#include "testutil.h"
#include "fp8kv/fileio.h"
#include "fp8kv/npy.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char tmp_dir[64];

static void setup(void)
{
    strcpy(tmp_dir, "/tmp/fp8kv-t_npy-XXXXXX");
    cr_assert_not_null(mkdtemp(tmp_dir), "mkdtemp failed");
}

static void teardown(void)
{
    fp8kv_remove_tree(tmp_dir);
}

TestSuite(npy, .init = setup, .fini = teardown);

/* in_tmp: tmp_dir/name in a static buffer (one at a time). */
static const char *in_tmp(const char *name)
{
    static char buf[256];
    int n = snprintf(buf, sizeof buf, "%s/%s", tmp_dir, name);
    cr_assert(n > 0 && (size_t)n < sizeof buf);
    return buf;
}

/* make_npy: a hand-built file: magic, version major.0, the dict padded numpy's way, data. */
static void make_npy(const char *path, unsigned major, const char *dict, const void *data, size_t n)
{
    size_t len_bytes = major == 1 ? 2 : 4;
    size_t dict_len = strlen(dict);
    size_t pre = 8 + len_bytes;
    size_t hlen = dict_len + 1;
    hlen += (64 - (pre + hlen) % 64) % 64;
    unsigned char *buf = calloc(1, pre + hlen + n);
    cr_assert_not_null(buf);
    memcpy(buf, "\x93NUMPY", 6);
    buf[6] = (unsigned char)major;
    buf[7] = 0;
    for (size_t i = 0; i < len_bytes; i++)
        buf[8 + i] = (unsigned char)(hlen >> (8 * i));
    memcpy(buf + pre, dict, dict_len);
    memset(buf + pre + dict_len, ' ', hlen - dict_len - 1);
    buf[pre + hlen - 1] = '\n';
    if (n != 0)
        memcpy(buf + pre + hlen, data, n);
    test_write_bytes(path, buf, pre + hlen + n);
    free(buf);
}

/* write_u4: a valid 1-D '<u4' file of {10, 20, 30, 40}. */
static void write_u4(const char *path)
{
    const uint32_t v[4] = {10, 20, 30, 40};
    const size_t shape[1] = {4};
    cr_assert_eq(fp8kv_npy_write(path, FP8KV_NPY_U32, 1, shape, v), 0, "%s", fp8kv_last_error());
}

/* expect_reject: reading path fails, leaves no data, and the message names path and says
 * what (a key phrase) is wrong. */
static void expect_reject(const char *path, const char *phrase)
{
    struct fp8kv_npy a;
    memset(&a, 0xAB, sizeof a);
    cr_assert_eq(fp8kv_npy_read(path, &a), FP8KV_ERR, "%s was accepted", path);
    cr_assert_null(a.data);
    const char *msg = fp8kv_last_error();
    cr_assert_not_null(strstr(msg, path), "message does not name the file: %s", msg);
    cr_assert_not_null(strstr(msg, phrase), "message lacks '%s': %s", phrase, msg);
    /* The header-only read must reject the same file the same way. */
    struct fp8kv_npy h;
    cr_assert_eq(fp8kv_npy_read_header(path, &h), FP8KV_ERR);
    cr_assert_null(h.data);
    cr_assert_not_null(strstr(fp8kv_last_error(), phrase), "%s", fp8kv_last_error());
}

/* ---- round trips ------------------------------------------------------------------------ */

static void round_trip(enum fp8kv_npy_dtype dtype, int ndim, const size_t *shape)
{
    size_t count = shape[0] * (ndim == 2 ? shape[1] : 1);
    size_t bytes = count * fp8kv_npy_elem_size(dtype);
    unsigned char *data = malloc(bytes + 1);
    cr_assert_not_null(data);
    for (size_t i = 0; i < bytes; i++)
        data[i] = (unsigned char)(i * 37u + 11u + (unsigned)dtype);
    const char *path = in_tmp("rt.npy");
    cr_assert_eq(fp8kv_npy_write(path, dtype, ndim, shape, data), 0, "%s", fp8kv_last_error());

    struct fp8kv_npy a;
    cr_assert_eq(fp8kv_npy_read(path, &a), 0, "%s", fp8kv_last_error());
    cr_assert_eq(a.dtype, dtype);
    cr_assert_eq(a.ndim, ndim);
    cr_assert_eq(a.shape[0], shape[0]);
    cr_assert_eq(a.shape[1], ndim == 2 ? shape[1] : 1);
    cr_assert_eq(a.count, count);
    cr_assert_not_null(a.data);
    cr_assert_eq(memcmp(a.data, data, bytes), 0, "data differs for %s", fp8kv_npy_descr(dtype));
    fp8kv_npy_free(&a);
    cr_assert_null(a.data);

    struct fp8kv_npy h;
    cr_assert_eq(fp8kv_npy_read_header(path, &h), 0, "%s", fp8kv_last_error());
    cr_assert_null(h.data);
    cr_assert_eq(h.dtype, dtype);
    cr_assert_eq(h.count, count);

    /* No .tmp file is left beside the target. */
    struct stat st;
    cr_assert_neq(stat(in_tmp("rt.npy.tmp"), &st), 0);
    free(data);
}

Test(npy, round_trip_every_dtype_1d_and_2d)
{
    const size_t s1[1] = {7};
    const size_t s2[2] = {3, 5};
    for (int d = 0; d < FP8KV_NPY_DTYPE_COUNT; d++) {
        round_trip((enum fp8kv_npy_dtype)d, 1, s1);
        round_trip((enum fp8kv_npy_dtype)d, 2, s2);
    }
}

/* Signed integers (slot mappings with -1 padding, block tables) keep their sign and width,
 * and the header says '<i4' / '<i8' as numpy.save writes it. */
Test(npy, round_trip_signed_integers)
{
    const int32_t v32[5] = {-1, 0, 1, INT32_MIN, INT32_MAX};
    const int64_t v64[2][3] = {{-1, 7, INT64_MIN}, {INT64_MAX, -123456789012345, 0}};
    const size_t s1[1] = {5}, s2[2] = {2, 3};
    const char *path = in_tmp("i4.npy");
    cr_assert_eq(fp8kv_npy_write(path, FP8KV_NPY_I32, 1, s1, v32), 0, "%s", fp8kv_last_error());
    struct fp8kv_npy a;
    cr_assert_eq(fp8kv_npy_read_expect(path, FP8KV_NPY_I32, 1, 5, &a), 0, "%s", fp8kv_last_error());
    for (int i = 0; i < 5; i++)
        cr_assert_eq(((const int32_t *)a.data)[i], v32[i]);
    fp8kv_npy_free(&a);
    path = in_tmp("i8.npy");
    cr_assert_eq(fp8kv_npy_write(path, FP8KV_NPY_I64, 2, s2, v64), 0, "%s", fp8kv_last_error());
    cr_assert_eq(fp8kv_npy_read_expect(path, FP8KV_NPY_I64, 2, 2, &a), 0, "%s", fp8kv_last_error());
    cr_assert_eq(a.shape[1], 3);
    cr_assert_eq(memcmp(a.data, v64, sizeof v64), 0);
    fp8kv_npy_free(&a);
    /* an i4 file is not an i8 or a u4 one */
    cr_assert_eq(fp8kv_npy_read_expect(in_tmp("i4.npy"), FP8KV_NPY_I64, 1, 5, &a), FP8KV_ERR);
    cr_assert_not_null(strstr(fp8kv_last_error(), "dtype <i4, expected <i8"), "%s",
                       fp8kv_last_error());
    cr_assert_eq(fp8kv_npy_read_expect(in_tmp("i4.npy"), FP8KV_NPY_U32, 1, 5, &a), FP8KV_ERR);
}

Test(npy, header_bytes_match_numpy_signed)
{
    const int64_t v[2] = {-1, 2};
    const size_t shape[1] = {2};
    const char *path = in_tmp("i.npy");
    cr_assert_eq(fp8kv_npy_write(path, FP8KV_NPY_I64, 1, shape, v), 0);
    size_t n;
    unsigned char *b = test_read_bytes(path, &n);
    const char *dict = "{'descr': '<i8', 'fortran_order': False, 'shape': (2,), }";
    cr_assert_eq(n, 128 + 16);
    cr_assert_eq(memcmp(b + 10, dict, strlen(dict)), 0, "dict is '%.60s'", b + 10);
    const unsigned char data[16] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                                    2,    0,    0,    0,    0,    0,    0,    0};
    cr_assert_eq(memcmp(b + 128, data, 16), 0);
    free(b);
}

Test(npy, round_trip_empty_arrays)
{
    const size_t s1[1] = {0};
    const size_t s2[2] = {4, 0};
    round_trip(FP8KV_NPY_F64, 1, s1);
    round_trip(FP8KV_NPY_U8, 2, s2);
    /* A full read of an empty array still gives a non-NULL buffer. */
    struct fp8kv_npy a;
    cr_assert_eq(fp8kv_npy_read(in_tmp("rt.npy"), &a), 0);
    cr_assert_eq(a.count, 0);
    cr_assert_not_null(a.data);
    fp8kv_npy_free(&a);
}

Test(npy, descr_and_elem_size)
{
    cr_assert_str_eq(fp8kv_npy_descr(FP8KV_NPY_U8), "|u1");
    cr_assert_str_eq(fp8kv_npy_descr(FP8KV_NPY_U16), "<u2");
    cr_assert_str_eq(fp8kv_npy_descr(FP8KV_NPY_U32), "<u4");
    cr_assert_str_eq(fp8kv_npy_descr(FP8KV_NPY_F32), "<f4");
    cr_assert_str_eq(fp8kv_npy_descr(FP8KV_NPY_F64), "<f8");
    cr_assert_str_eq(fp8kv_npy_descr(FP8KV_NPY_I32), "<i4");
    cr_assert_str_eq(fp8kv_npy_descr(FP8KV_NPY_I64), "<i8");
    cr_assert_null(fp8kv_npy_descr(FP8KV_NPY_DTYPE_COUNT));
    const size_t sizes[FP8KV_NPY_DTYPE_COUNT] = {1, 2, 4, 4, 8, 4, 8, 1, 2, 2, 1, 2};
    for (int d = 0; d < FP8KV_NPY_DTYPE_COUNT; d++)
        cr_assert_eq(fp8kv_npy_elem_size((enum fp8kv_npy_dtype)d), sizes[d]);
    cr_assert_eq(fp8kv_npy_elem_size(FP8KV_NPY_DTYPE_COUNT), 0);
}

/* ---- numpy's exact bytes ---------------------------------------------------------------- */

/* check_header: the file starts with v1.0 magic, a header length making the data start at
 * want_total (a multiple of 64), the dict, spaces, and '\n'. Returns the file bytes. */
static unsigned char *check_header(const char *path, const char *dict, size_t want_total, size_t *n)
{
    unsigned char *b = test_read_bytes(path, n);
    cr_assert_geq(*n, want_total);
    cr_assert_eq(memcmp(b, "\x93NUMPY\x01\x00", 8), 0, "bad magic or version");
    size_t hlen = (size_t)b[8] | (size_t)b[9] << 8;
    cr_assert_eq(10 + hlen, want_total, "header length %zu", hlen);
    cr_assert_eq((10 + hlen) % 64, 0, "data not 64-byte aligned");
    size_t dict_len = strlen(dict);
    cr_assert_eq(memcmp(b + 10, dict, dict_len), 0, "dict is '%.*s'", (int)dict_len, b + 10);
    for (size_t i = 10 + dict_len; i < want_total - 1; i++)
        cr_assert_eq(b[i], ' ', "byte %zu is 0x%02x, not a space", i, b[i]);
    cr_assert_eq(b[want_total - 1], '\n');
    return b;
}

/* numpy 1.24's np.save(np.array([1, 2, 3], dtype='<u4')) is these 128 header bytes (the dict,
 * 60 spaces, '\n') followed by 01000000 02000000 03000000. */
Test(npy, header_bytes_match_numpy_1d)
{
    const uint32_t v[3] = {1, 2, 3};
    const size_t shape[1] = {3};
    const char *path = in_tmp("a.npy");
    cr_assert_eq(fp8kv_npy_write(path, FP8KV_NPY_U32, 1, shape, v), 0);
    size_t n;
    unsigned char *b =
        check_header(path, "{'descr': '<u4', 'fortran_order': False, 'shape': (3,), }", 128, &n);
    cr_assert_eq(b[8], 0x76);
    cr_assert_eq(b[9], 0x00);
    cr_assert_eq(n, 128 + 12);
    const unsigned char data[12] = {1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0};
    cr_assert_eq(memcmp(b + 128, data, 12), 0);
    free(b);
}

Test(npy, header_bytes_match_numpy_2d)
{
    const uint8_t v[6] = {1, 2, 3, 4, 5, 6};
    const size_t shape[2] = {2, 3};
    const char *path = in_tmp("b.npy");
    cr_assert_eq(fp8kv_npy_write(path, FP8KV_NPY_U8, 2, shape, v), 0);
    size_t n;
    unsigned char *b =
        check_header(path, "{'descr': '|u1', 'fortran_order': False, 'shape': (2, 3), }", 128, &n);
    cr_assert_eq(n, 128 + 6);
    cr_assert_eq(memcmp(b + 128, v, 6), 0);
    free(b);
}

/* The longest dict (two 20-digit sizes; the count is 0 so no data is needed) still pads to a
 * 64-byte boundary, and reads back. */
Test(npy, header_alignment_with_long_shapes)
{
    const size_t shape[2] = {18446744073709551615u, 0};
    const char *path = in_tmp("c.npy");
    cr_assert_eq(fp8kv_npy_write(path, FP8KV_NPY_F64, 2, shape, NULL), 0, "%s", fp8kv_last_error());
    size_t n;
    unsigned char *b = check_header(
        path, "{'descr': '<f8', 'fortran_order': False, 'shape': (18446744073709551615, 0), }", 128,
        &n);
    cr_assert_eq(n, 128);
    free(b);
    struct fp8kv_npy h;
    cr_assert_eq(fp8kv_npy_read_header(path, &h), 0, "%s", fp8kv_last_error());
    cr_assert_eq(h.shape[0], shape[0]);
    cr_assert_eq(h.count, 0);
}

Test(npy, write_is_deterministic)
{
    double v[8];
    for (int i = 0; i < 8; i++)
        v[i] = 1.0 / (i + 1);
    const size_t shape[2] = {2, 4};
    cr_assert_eq(fp8kv_npy_write(in_tmp("x.npy"), FP8KV_NPY_F64, 2, shape, v), 0);
    cr_assert_eq(fp8kv_npy_write(in_tmp("y.npy"), FP8KV_NPY_F64, 2, shape, v), 0);
    size_t nx, ny;
    unsigned char *x = test_read_bytes(in_tmp("x.npy"), &nx);
    unsigned char *y = test_read_bytes(in_tmp("y.npy"), &ny);
    cr_assert_eq(nx, 128 + 64);
    cr_assert_eq(nx, ny);
    cr_assert_eq(memcmp(x, y, nx), 0);
    /* Overwriting in place gives the same bytes again. */
    cr_assert_eq(fp8kv_npy_write(in_tmp("x.npy"), FP8KV_NPY_F64, 2, shape, v), 0);
    free(y);
    y = test_read_bytes(in_tmp("x.npy"), &ny);
    cr_assert_eq(nx, ny);
    cr_assert_eq(memcmp(x, y, nx), 0);
    free(x);
    free(y);
}

/* ---- what numpy may write that we still accept ------------------------------------------ */

Test(npy, accepts_other_spellings_orders_and_v2)
{
    const uint8_t v[4] = {9, 8, 7, 6};
    const char *path = in_tmp("s.npy");
    const char *dicts[] = {
        "{'descr': '<u1', 'fortran_order': False, 'shape': (4,), }",
        "{'descr': 'u1', 'fortran_order': False, 'shape': (4,)}",
        "{'shape': (2, 2,), 'fortran_order': False, 'descr': '|u1'}",
        "{\"descr\": \"|u1\", \"fortran_order\": False, \"shape\": ( 4 , ) }",
    };
    for (size_t i = 0; i < sizeof dicts / sizeof dicts[0]; i++) {
        make_npy(path, 1, dicts[i], v, 4);
        struct fp8kv_npy a;
        cr_assert_eq(fp8kv_npy_read(path, &a), 0, "%s: %s", dicts[i], fp8kv_last_error());
        cr_assert_eq(a.dtype, FP8KV_NPY_U8);
        cr_assert_eq(a.count, 4);
        cr_assert_eq(memcmp(a.data, v, 4), 0);
        fp8kv_npy_free(&a);
    }
    make_npy(path, 2, "{'descr': '|u1', 'fortran_order': False, 'shape': (4,), }", v, 4);
    struct fp8kv_npy a;
    cr_assert_eq(fp8kv_npy_read(path, &a), 0, "v2.0: %s", fp8kv_last_error());
    cr_assert_eq(memcmp(a.data, v, 4), 0);
    fp8kv_npy_free(&a);
}

/* ---- rejections ------------------------------------------------------------------------- */

Test(npy, rejects_bad_magic)
{
    const char *path = in_tmp("m.npy");
    write_u4(path);
    size_t n;
    unsigned char *b = test_read_bytes(path, &n);
    b[1] = 'X';
    test_write_bytes(path, b, n);
    free(b);
    expect_reject(path, "bad magic");
    test_write_bytes(path, "hello", 5);
    expect_reject(path, "bad magic");
}

Test(npy, rejects_truncated_header)
{
    const char *path = in_tmp("t.npy");
    write_u4(path);
    size_t n;
    unsigned char *b = test_read_bytes(path, &n);
    test_write_bytes(path, b, 40); /* inside the dict */
    expect_reject(path, "truncated header");
    test_write_bytes(path, b, 9); /* inside the length field */
    expect_reject(path, "truncated header");
    test_write_bytes(path, b, 3); /* inside the magic */
    expect_reject(path, "truncated header");
    test_write_bytes(path, b, 0);
    expect_reject(path, "truncated header");
    test_write_bytes(path, b, 110); /* the padding is cut short */
    expect_reject(path, "truncated header");
    free(b);
}

Test(npy, rejects_truncated_data)
{
    const char *path = in_tmp("d.npy");
    write_u4(path);
    size_t n;
    unsigned char *b = test_read_bytes(path, &n);
    cr_assert_eq(n, 128 + 16);
    test_write_bytes(path, b, n - 1);
    expect_reject(path, "truncated data");
    test_write_bytes(path, b, 128); /* header only */
    expect_reject(path, "truncated data");
    free(b);
}

Test(npy, rejects_trailing_bytes)
{
    const char *path = in_tmp("e.npy");
    write_u4(path);
    size_t n;
    unsigned char *b = test_read_bytes(path, &n);
    b = realloc(b, n + 1);
    cr_assert_not_null(b);
    b[n] = 0;
    test_write_bytes(path, b, n + 1);
    free(b);
    expect_reject(path, "trailing bytes");
}

Test(npy, rejects_fortran_order_true)
{
    const uint32_t v[4] = {0};
    const char *path = in_tmp("f.npy");
    make_npy(path, 1, "{'descr': '<u4', 'fortran_order': True, 'shape': (2, 2), }", v, 16);
    expect_reject(path, "fortran_order True");
}

Test(npy, rejects_unknown_descr)
{
    const uint32_t v[4] = {0};
    const char *path = in_tmp("g.npy");
    const char *descrs[] = {">i4", ">i2", ">u4", "<u8", "|b1", ">f2", "O", "<U1", "|V4"};
    for (size_t i = 0; i < sizeof descrs / sizeof descrs[0]; i++) {
        char dict[128];
        snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (1,), }",
                 descrs[i]);
        make_npy(path, 1, dict, v, 16);
        expect_reject(path, "unsupported descr");
        cr_assert_not_null(strstr(fp8kv_last_error(), descrs[i]), "%s", fp8kv_last_error());
    }
}

Test(npy, rejects_3d_and_0d_shapes)
{
    const uint8_t v[8] = {0};
    const char *path = in_tmp("h.npy");
    make_npy(path, 1, "{'descr': '|u1', 'fortran_order': False, 'shape': (2, 2, 2), }", v, 8);
    expect_reject(path, "more than 2 dimensions");
    make_npy(path, 1, "{'descr': '|u1', 'fortran_order': False, 'shape': (), }", v, 1);
    expect_reject(path, "0-d");
}

Test(npy, read_any_takes_up_to_8_dimensions_and_engine_dtypes)
{
    const uint8_t v[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
    const char *path = in_tmp("any.npy");
    make_npy(path, 1, "{'descr': '|u1', 'fortran_order': False, 'shape': (2, 2, 2, 2), }", v, 16);
    struct fp8kv_npy a;
    expect_reject(path, "more than 2 dimensions"); /* the strict reader still refuses */
    cr_assert_eq(fp8kv_npy_read_any(path, &a), 0, "%s", fp8kv_last_error());
    cr_assert_eq(a.ndim, 4);
    cr_assert_eq(a.shape[0], 2);
    cr_assert_eq(a.shape[1], 8);
    cr_assert_eq(a.count, 16);
    cr_assert_eq(a.dims[3], 2);
    cr_assert_eq(memcmp(a.data, v, 16), 0);
    fp8kv_npy_free(&a);
    const struct {
        const char *descr;
        enum fp8kv_npy_dtype dtype;
    } kinds[] = {{"<V2", FP8KV_NPY_RAW16},
                 {"|V1", FP8KV_NPY_RAW8},
                 {"<f2", FP8KV_NPY_F16},
                 {"|i1", FP8KV_NPY_I8},
                 {"<i2", FP8KV_NPY_I16}};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        char dict[128];
        const size_t n = 16 / fp8kv_npy_elem_size(kinds[i].dtype);
        snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (%zu,), }",
                 kinds[i].descr, n);
        make_npy(path, 1, dict, v, 16);
        cr_assert_eq(fp8kv_npy_read_any(path, &a), 0, "%s: %s", kinds[i].descr, fp8kv_last_error());
        cr_assert_eq(a.dtype, kinds[i].dtype, "%s", kinds[i].descr);
        cr_assert_eq(a.count, n);
        fp8kv_npy_free(&a);
    }
    make_npy(path, 1,
             "{'descr': '|u1', 'fortran_order': False, 'shape': (1, 1, 1, 1, 1, 1, 1, 1, 1), }", v,
             1);
    cr_assert_eq(fp8kv_npy_read_any(path, &a), FP8KV_ERR);
    cr_assert_not_null(strstr(fp8kv_last_error(), "more than 8 dimensions"), "%s",
                       fp8kv_last_error());
}

Test(npy, rejects_missing_file)
{
    const char *path = in_tmp("no-such-file.npy");
    expect_reject(path, "cannot open");
    expect_reject(tmp_dir, "not a regular file");
}

Test(npy, rejects_bad_version)
{
    const uint8_t v[1] = {0};
    const char *path = in_tmp("v.npy");
    make_npy(path, 3, "{'descr': '|u1', 'fortran_order': False, 'shape': (1,), }", v, 1);
    expect_reject(path, "version 3.0");
}

Test(npy, rejects_malformed_dicts)
{
    const uint8_t v[16] = {0};
    const char *path = in_tmp("k.npy");
    static const struct {
        const char *dict, *phrase;
    } cases[] = {
        {"['descr', '|u1']", "not a dict"},
        {"{'descr': '|u1', 'shape': (1,), }", "lacks key 'fortran_order'"},
        {"{'descr': '|u1', 'fortran_order': False, }", "lacks key 'shape'"},
        {"{'fortran_order': False, 'shape': (1,), }", "lacks key 'descr'"},
        {"{'descr': '|u1', 'fortran_order': False, 'shape': (1,), 'extra': 1, }", "'extra'"},
        {"{'descr': '|u1', 'descr': '|u1', 'fortran_order': False, 'shape': (1,)}", "repeats"},
        {"{'descr': '|u1', 'fortran_order': 0, 'shape': (1,), }", "not a bool"},
        {"{'descr': '|u1', 'fortran_order': Falsey, 'shape': (1,), }", "not a bool"},
        {"{'descr': '|u1', 'fortran_order': False, 'shape': (-1,), }", "negative"},
        {"{'descr': '|u1', 'fortran_order': False, 'shape': (1), }", "not a tuple"},
        {"{'descr': '|u1', 'fortran_order': False, 'shape': [1], }", "not a tuple"},
        {"{'descr': '|u1', 'fortran_order': False, 'shape': (1.5,), }", "not a tuple"},
        {"{'descr': '|u1', 'fortran_order': False, 'shape': (99999999999999999999999,), }",
         "too large"},
        {"{'descr': '|u1', 'fortran_order': False, 'shape': (1,), } x", "after the dict"},
        {"{'descr': '|u1', 'fortran_order': False, 'shape': (1,) 'a'}", "malformed"},
        {"{'descr': '|u1' 'fortran_order': False, 'shape': (1,)}", "malformed"},
        {"{'descr: '|u1', 'fortran_order': False, 'shape': (1,)}", "lacks ':'"},
        {"{'descr': '|u1', 'fortran_order': False, 'shape': (1,), ", "malformed"},
        {"", "not a dict"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        make_npy(path, 1, cases[i].dict, v, 1);
        expect_reject(path, cases[i].phrase);
    }
}

/* The byte count of a huge shape overflows size_t: caught, not wrapped to something small. */
Test(npy, rejects_overflowing_shape)
{
    const uint8_t v[1] = {0};
    const char *path = in_tmp("o.npy");
    make_npy(path, 1,
             "{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", v, 0);
    expect_reject(path, "overflows");
    make_npy(path, 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (2305843009213693952,), }",
             v, 0);
    expect_reject(path, "overflows");
    /* Large but not overflowing: reported as truncated, never allocated. */
    make_npy(path, 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (1000000000000,), }", v,
             1);
    expect_reject(path, "truncated data");
}

Test(npy, rejects_header_length_beyond_file)
{
    const char *path = in_tmp("l.npy");
    unsigned char b[10 + 20] = "\x93NUMPY\x01\x00\xff\xff{'descr': '|u1', }";
    test_write_bytes(path, b, sizeof b);
    expect_reject(path, "truncated header");
    /* A v2.0 length of 4 GiB - 1 is refused before any allocation. */
    unsigned char c[12] = "\x93NUMPY\x02\x00\xff\xff\xff\xff";
    test_write_bytes(path, c, sizeof c);
    expect_reject(path, "implausible");
}

Test(npy, rejects_non_ascii_header)
{
    const uint8_t v[1] = {0};
    const char *path = in_tmp("n.npy");
    make_npy(path, 1, "{'descr': '|u1', 'fortran_order': False, 'shape': (1,), '\xc3\xa9': 1}", v,
             1);
    expect_reject(path, "not ASCII");
}

/* ---- read_expect, write errors, free ---------------------------------------------------- */

Test(npy, read_expect_checks_dtype_ndim_and_length)
{
    const char *path = in_tmp("r.npy");
    write_u4(path);
    struct fp8kv_npy a;
    cr_assert_eq(fp8kv_npy_read_expect(path, FP8KV_NPY_U32, 1, 4, &a), 0, "%s", fp8kv_last_error());
    cr_assert_eq(((uint32_t *)a.data)[3], 40);
    fp8kv_npy_free(&a);
    cr_assert_eq(fp8kv_npy_read_expect(path, FP8KV_NPY_U32, 1, 0, &a), 0);
    fp8kv_npy_free(&a);

    cr_assert_eq(fp8kv_npy_read_expect(path, FP8KV_NPY_F32, 1, 4, &a), FP8KV_ERR);
    cr_assert_null(a.data);
    cr_assert_not_null(strstr(fp8kv_last_error(), "dtype <u4, expected <f4"), "%s",
                       fp8kv_last_error());
    cr_assert_eq(fp8kv_npy_read_expect(path, FP8KV_NPY_U32, 2, 4, &a), FP8KV_ERR);
    cr_assert_not_null(strstr(fp8kv_last_error(), "1 dimensions, expected 2"));
    cr_assert_eq(fp8kv_npy_read_expect(path, FP8KV_NPY_U32, 1, 5, &a), FP8KV_ERR);
    cr_assert_not_null(strstr(fp8kv_last_error(), "4 rows, expected 5"));
    cr_assert_not_null(strstr(fp8kv_last_error(), path));
}

Test(npy, write_errors_name_the_path)
{
    const uint8_t v[1] = {0};
    const size_t shape[3] = {1, 1, 1};
    const char *path = in_tmp("no-such-dir/w.npy");
    cr_assert_eq(fp8kv_npy_write(path, FP8KV_NPY_U8, 1, shape, v), FP8KV_ERR);
    cr_assert_not_null(strstr(fp8kv_last_error(), path), "%s", fp8kv_last_error());
    path = in_tmp("w.npy");
    cr_assert_eq(fp8kv_npy_write(path, FP8KV_NPY_U8, 3, shape, v), FP8KV_ERR);
    cr_assert_not_null(strstr(fp8kv_last_error(), "3 dimensions"));
    cr_assert_eq(fp8kv_npy_write(path, FP8KV_NPY_DTYPE_COUNT, 1, shape, v), FP8KV_ERR);
    cr_assert_eq(fp8kv_npy_write(path, FP8KV_NPY_U8, 1, shape, NULL), FP8KV_ERR);
    const size_t huge[2] = {SIZE_MAX / 2, 4};
    cr_assert_eq(fp8kv_npy_write(path, FP8KV_NPY_U8, 2, huge, v), FP8KV_ERR);
    cr_assert_not_null(strstr(fp8kv_last_error(), "overflows"));
    struct stat st;
    cr_assert_neq(stat(path, &st), 0, "a failed write left a file");
}

Test(npy, free_is_safe_twice_and_on_zeroed)
{
    struct fp8kv_npy z = {0};
    fp8kv_npy_free(&z);
    fp8kv_npy_free(NULL);
    write_u4(in_tmp("z.npy"));
    cr_assert_eq(fp8kv_npy_read(in_tmp("z.npy"), &z), 0);
    fp8kv_npy_free(&z);
    fp8kv_npy_free(&z);
    cr_assert_null(z.data);
}
