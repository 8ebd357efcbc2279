/* fuzz_npy.c — the .npy reader (core/npy.c) on arbitrary files.
 *
 * Properties: the strict, header-only and any-dimension reads agree on what they accept; an
 * accepted array's element count is the product of its dimensions and its data that many
 * elements; an accepted 1-D or 2-D array written back by fp8kv_npy_write reads back the same.
 */
#include <stdlib.h>
#include <string.h>

#include "fp8kv/npy.h"
#include "fuzz_util.h"

static void check_count(const struct fp8kv_npy *a)
{
    size_t product = 1;
    for (int d = 0; d < a->ndim; d++)
        if (__builtin_mul_overflow(product, a->dims[d], &product))
            fuzz_fail("accepted a shape whose element count overflows");
    if (a->count != product || a->shape[0] != a->dims[0] || a->data == NULL)
        fuzz_fail("count %zu, product of dims %zu", a->count, product);
}

static int same(const struct fp8kv_npy *a, const struct fp8kv_npy *b)
{
    return a->dtype == b->dtype && a->ndim == b->ndim && a->count == b->count &&
           a->shape[0] == b->shape[0] && a->shape[1] == b->shape[1] &&
           memcmp(a->data, b->data, a->count * fp8kv_npy_elem_size(a->dtype)) == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_write("x.npy", data, size);
    char path[512];
    strcpy(path, fuzz_path("x.npy"));
    struct fp8kv_npy strict, any, header;
    const int rs = fp8kv_npy_read(path, &strict);
    const int ra = fp8kv_npy_read_any(path, &any);
    const int rh = fp8kv_npy_read_header(path, &header);
    if (rs != rh)
        fuzz_fail("read says %d, read_header says %d", rs, rh);
    if (rs == 0 && ra != 0)
        fuzz_fail("the strict read accepts what read_any refuses");
    if (ra == 0)
        check_count(&any);
    if (rs == 0) {
        check_count(&strict);
        if (!same(&strict, &any))
            fuzz_fail("the strict read and read_any disagree on an array");
        if (header.data != NULL || header.count != strict.count || header.dtype != strict.dtype)
            fuzz_fail("read_header disagrees with read");
        char out[512];
        strcpy(out, fuzz_path("y.npy"));
        if (fp8kv_npy_write(out, strict.dtype, strict.ndim, strict.shape, strict.data) != 0)
            fuzz_fail("cannot write back an accepted array");
        struct fp8kv_npy back;
        if (fp8kv_npy_read(out, &back) != 0 || !same(&strict, &back))
            fuzz_fail("an accepted array does not survive write + read");
        fp8kv_npy_free(&back);
    }
    fp8kv_npy_free(&strict);
    fp8kv_npy_free(&any);
    fp8kv_npy_free(&header);
    return 0;
}
