/* boundaries.c — certified decision boundaries: the smallest positive f32 of every code. */
#include "fp8kv/diag.h"
#include "fp8kv/oracle.h"

/* The rank of a positive f32 under format f: its code magnitude, or max_code + 1 when it
 * overflows (judged under the overflow = nan rule, where overflow is visible as NaN). */
static int rank_of(const struct fp8kv_profile *nan_rule, uint32_t bits)
{
    uint8_t code = fp8kv_oracle_encode_f32(nan_rule, bits);
    if (fp8kv_is_nan_code(nan_rule->format, code))
        return nan_rule->format->max_code + 1;
    return code & 0x7F;
}

int fp8kv_oracle_boundaries(const struct fp8kv_format *f, uint32_t *b)
{
    /* the rule itself, whether or not the profile table has it for f (e5m2 has none) */
    const struct fp8kv_profile rule = {
        .name = "overflow=nan", .format = f, .overflow = FP8KV_OVERFLOW_NAN, .inf = FP8KV_INF_NAN};
    const struct fp8kv_profile *nan_rule = &rule;
    const uint32_t max_finite_f32 = 0x7F7FFFFFu;
    int count = fp8kv_boundary_count(f);

    b[0] = 0;
    for (int k = 1; k < count; k++) {
        /* positive f32 bit patterns are ordered like their values, and RNE is monotone:
         * bisect for the first pattern of rank >= k */
        uint32_t lo = 1, hi = max_finite_f32;
        if (rank_of(nan_rule, hi) < k)
            return fp8kv_fail("boundary of %s code 0x%02x: no f32 reaches it", f->name, k);
        while (lo < hi) {
            uint32_t mid = lo + (hi - lo) / 2;
            if (rank_of(nan_rule, mid) >= k)
                hi = mid;
            else
                lo = mid + 1;
        }
        b[k] = lo;
        /* certify: the boundary has rank k exactly and its predecessor rank k - 1 */
        if (rank_of(nan_rule, b[k]) != k || rank_of(nan_rule, b[k] - 1) != k - 1)
            return fp8kv_fail("boundary of %s code 0x%02x at f32 0x%08x fails certification",
                              f->name, k, b[k]);
    }
    return FP8KV_OK;
}

const char *fp8kv_oracle_mpfr_version(void)
{
    return mpfr_get_version();
}

const char *fp8kv_oracle_gmp_version(void)
{
    return gmp_version;
}
