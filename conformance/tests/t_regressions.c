/* t_regressions.c — regression tests named bugYYYYMMDD_<what they catch> (the date of the
 * fixing commit, as in t_oracle.c) for bugs whose code has no suite of its own (core's diag)
 * or whose suite is another's to edit (the block CLI's t_block_cli.c, the plugin host's
 * t_plugin_cli.c). Each says above it which commit fixed what. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "fp8kv/diag.h"
#include "testutil.h"

#define FP8KV FP8KV_EXE
#define VECTORS " --vectors " FP8KV_SOURCE_DIR "/vectors"

/* Fixed in 04d94c5: a message quoting the last one (fp8kv_fail("...: %s", fp8kv_last_error()),
 * as the vector gate does) was formatted into the buffer it read, so the quoted text came out
 * garbled; it is formatted through a copy. */
Test(regressions, bug20261201_message_quoting_the_last_one_read_its_own_output)
{
    cr_assert_eq(fp8kv_fail("boundaries.npy: one ulp off"), FP8KV_ERR);
    cr_assert_eq(fp8kv_fail("the vectors are not the verified truth: %s", fp8kv_last_error()),
                 FP8KV_ERR);
    cr_assert_str_eq(fp8kv_last_error(),
                     "the vectors are not the verified truth: boundaries.npy: one ulp off");
}

/* Fixed in e7559b3: decode-block printed integers in %g's shortest form (480 as "4.8e+02");
 * integers below 2^24 print in full. mxfp8_e4m3 element 0x77 is 1.875 * 2^7 = 240, at scale
 * code 0x80 (2^1) 480; element 0 is 0. */
Test(regressions, bug20261201_decode_block_printed_480_as_4_8e02)
{
    char out[4096];
    cr_assert_eq(test_run("printf '80 77%s\\n' \"$(printf ' 00%.0s' $(seq 31))\" | " FP8KV
                          " decode-block --format mxfp8_e4m3 2>&1",
                          out, sizeof out),
                 0, "%s", out);
    cr_assert_str_eq(out, "480 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n");
}

/* Fixed in 89d4078: a check the plugin crashed in logged the counts of the pass that did not
 * finish ("mismatches=0") before the crash message; it logs no counts. The crash plugin dies
 * on meeting 1.0 in the f32 sweep. */
Test(regressions, bug20261201_crashed_check_logged_counts)
{
    static char out[1 << 16];
    cr_assert_eq(test_run(FP8KV " sweep --threads 2 --plugin " FP8KV_PLUGIN_DIR
                                "/fp8kv_plugin_crash.so" VECTORS " 2>&1",
                          out, sizeof out),
                 4, "%s", out);
    cr_assert(strstr(out, "crashed") || strstr(out, "exited with status"), "%s", out);
    cr_assert_null(strstr(out, "mismatches="), "%s", out);
}
