/* engine_gate.c — an engine's release gate on fp8kv's judge library (fp8kv::conformance).
 *
 * The engine links its codec in (here ../engine_codec/engine_codec.c, through the same
 * fp8kv_codec_v1 descriptor its plugin exports) and judges it in-process, no CLI involved:
 *   - exhaustive sweeps against the certified boundaries: every f16 and every bf16 input, and
 *     with --f32 all 2^32 f32 inputs;
 *   - the golden encoder sets (edges, all f16/bf16, the store-with-scale pairs of the
 *     f32_div model: x / scale in f32, what this codec computes);
 *   - the golden decode and read sets, when the codec has a decoder.
 * NaNs are judged strictly (the byte, sign included).
 *
 * usage: engine_gate VECTORS_DIR [--f32]      exit 0 conformant, 1 not, 2 error
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <fp8kv/checks.h>
#include <fp8kv/diag.h>
#include <fp8kv/plugin.h>
#include <fp8kv/spec.h>
#include <fp8kv/subject.h>
#include <fp8kv/sweep.h>
#include <fp8kv/verify.h>

/* The engine's codec as a subject (fp8kv/subject.h): it has one configuration, its own, so the
 * configuration the judge passes is not looked at. */
static int encode_codec(void *ctx, struct fp8kv_codec_cfg cfg, const float *x, size_t n, float s,
                        uint8_t *q)
{
    const fp8kv_codec_v1_t *codec = ctx;
    (void)cfg;
    codec->encode_f32(x, n, s, q);
    return 0;
}

static int decode_codec(void *ctx, struct fp8kv_codec_cfg cfg, const uint8_t *q, size_t n, float s,
                        float *y)
{
    const fp8kv_codec_v1_t *codec = ctx;
    (void)cfg;
    codec->decode_f32(q, n, s, y);
    return 0;
}

/* The store-with-scale pairs are judged under every kernel scale model; this codec divides in
 * f32, so only the f32_div check gates (the others are printed for information). */
static int gates(const struct fp8kv_check *c)
{
    return strncmp(c->name, "scale-", 6) != 0 || strcmp(c->name, "scale-f32_div") == 0;
}

int main(int argc, char **argv)
{
    if (argc < 2 || (argc == 3 && strcmp(argv[2], "--f32") != 0) || argc > 3) {
        fprintf(stderr, "usage: engine_gate VECTORS_DIR [--f32]\n");
        return 2;
    }
    const char *dir = argv[1];
    int with_f32 = argc == 3;
    const fp8kv_codec_v1_t *codec = fp8kv_codec_v1();
    char profile_name[64];
    snprintf(profile_name, sizeof profile_name, "%s_%s", codec->format, codec->overflow);
    const struct fp8kv_profile *p = fp8kv_profile_by_name(profile_name);
    /* the vectors are verified (MANIFEST.json, SHA256SUMS) before anything is judged */
    if (fp8kv_vectors_trust(dir) != 0) {
        fprintf(stderr, "engine_gate: %s\n", fp8kv_last_error());
        return 2;
    }
    uint32_t *bounds = p ? fp8kv_load_boundaries(dir, p) : NULL;
    if (!bounds) {
        fprintf(stderr, "engine_gate: no profile or boundaries for %s in %s\n", profile_name, dir);
        return 2;
    }

    struct fp8kv_results results = {0};
    int rc = 0;
    const struct fp8kv_subject subject = {
        .name = codec->name,
        .caps = FP8KV_CAP_ENCODE | (codec->decode_f32 ? FP8KV_CAP_DECODE : 0u),
        .claim = FP8KV_CLAIM_ALL,
        .ctx = (void *)codec,
        .encode = encode_codec,
        .decode = decode_codec,
    };
    struct fp8kv_sweep_options opt = {.threads = 0};
    for (int d = with_f32 ? FP8KV_DOMAIN_F32 : FP8KV_DOMAIN_F16; d < FP8KV_DOMAIN_COUNT && !rc;
         d++) {
        struct fp8kv_check c;
        rc = fp8kv_sweep(p, FP8KV_NAN_CHECK_STRICT, (enum fp8kv_domain)d, bounds, &subject,
                         fp8kv_profile_cfg(p), &opt, &c);
        if (!rc)
            rc = fp8kv_results_add(&results, &c);
    }
    if (!rc)
        rc = fp8kv_check_encoder_vectors(dir, p, FP8KV_NAN_CHECK_STRICT, &subject, &results);
    if (!rc && fp8kv_subject_can(&subject, FP8KV_CAP_DECODE))
        rc = fp8kv_check_decoder_vectors(dir, p, FP8KV_NAN_CHECK_CLASS, &subject, &results);
    free(bounds);
    if (rc) {
        fp8kv_results_free(&results);
        fprintf(stderr, "engine_gate: a check could not run (message above)\n");
        return 2;
    }

    uint64_t inputs = 0, mismatches = 0;
    int passed = results.count > 0;
    for (size_t i = 0; i < results.count; i++) {
        const struct fp8kv_check *c = &results.items[i];
        int gate = gates(c);
        printf("%-14s %-44.44s cases=%llu mismatches=%llu %s\n", c->name, c->detail,
               (unsigned long long)c->cases, (unsigned long long)c->mismatches,
               !gate       ? "(not gated)"
               : c->passed ? "ok"
                           : "FAILED");
        for (int k = 0; k < c->failure_lines && gate; k++)
            printf("  %s\n", c->failures[k]);
        if (gate) {
            inputs += c->cases;
            mismatches += c->mismatches;
            passed = passed && c->passed;
        }
    }
    printf("%s %s: inputs=%llu mismatches=%llu verdict=%s\n", codec->name, p->name,
           (unsigned long long)inputs, (unsigned long long)mismatches,
           passed ? "conformant" : "nonconformant");
    fp8kv_results_free(&results);
    return passed ? 0 : 1;
}
