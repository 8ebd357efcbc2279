/* fuzz_kv_case.c — the golden KV-case loader (conformance/kv/judge.c) on altered case files.
 *
 * Input: a selector byte (which of the case's 16 files to replace), a byte choosing the real
 * case the others come from (e4m3fn_satfinite, cases 0..14), then the replacement file (a
 * file the base case does not have is written empty). The
 * loader promises that a case it accepts keeps every kernel in bounds: so an accepted case is
 * run through the CPU reference store, gather and attention (ASan sees any read or write out
 * of bounds), and its golden outputs, judged against themselves, must have no mismatch.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fp8kv/diag.h"
#include "fp8kv/kv_judge.h"
#include "fuzz_util.h"

#ifndef FP8KV_SOURCE_DIR
#define FP8KV_SOURCE_DIR "."
#endif

#define PROFILE "e4m3fn_satfinite"
#define BASE_CASES 15
#define FILES FP8KV_KV_CASE_FILE_COUNT

static struct {
    char *bytes;
    size_t n;
} originals[BASE_CASES][FILES];

/* load_originals: the base cases' files, and the profile's decode.npy and boundaries.npy
 * written once into the fuzz directory (the loader loads them with a case: the folded
 * attention reads one, the failure lines the other). */
static void load_originals(void)
{
    static int done;
    if (done++)
        return;
    char from[1024];
    size_t n = 0;
    static const char *const tables[] = {"decode.npy", "boundaries.npy"};
    for (int i = 0; i < 2; i++) {
        snprintf(from, sizeof from, "%s/vectors/%s/%s", FP8KV_SOURCE_DIR, PROFILE, tables[i]);
        char *table = fuzz_read(from, &n), to[64];
        snprintf(to, sizeof to, "%s/%s", PROFILE, tables[i]);
        fuzz_write(to, table, n);
        free(table);
    }
    for (int c = 0; c < BASE_CASES; c++)
        for (size_t f = 0; f < FILES; f++) {
            snprintf(from, sizeof from, "%s/vectors/%s/kv/case%d_%s.npy", FP8KV_SOURCE_DIR, PROFILE,
                     c, fp8kv_kv_case_files[f]);
            if (f < FP8KV_KV_CASE_FILES_ALWAYS || access(from, R_OK) == 0)
                originals[c][f].bytes = fuzz_read(from, &originals[c][f].n);
        }
}

/* run_kernels: the CPU reference paths on an accepted case, into buffers of the sizes the
 * case states, and the golden outputs judged against themselves. */
static void run_kernels(const struct fp8kv_kv_case *c, const struct fp8kv_profile *p)
{
    const struct fp8kv_codec_cfg cfg = fp8kv_profile_cfg(p);
    uint8_t *kc = malloc(c->cache_bytes + 1), *vc = malloc(c->cache_bytes + 1);
    float *rows = malloc(2 * c->rows * c->width * sizeof *rows + 1);
    const size_t qn = (size_t)c->num_seqs * c->num_q_heads * c->shape.head_size;
    float *out = malloc(qn * sizeof *out + 1);
    float *ksc = malloc(c->scale_entries * sizeof *ksc + 1);
    float *vsc = malloc(c->scale_entries * sizeof *vsc + 1);
    struct fp8kv_kv_scales ks = c->k_scales, vs = c->v_scales;
    ks.cache_out = ksc;
    vs.cache_out = vsc;
    if (fp8kv_cpu_reshape_and_cache(cfg, &c->shape, c->in, c->key.data, c->value.data,
                                    c->num_tokens, c->slots.data, &ks, &vs, kc, vc) == 0)
        (void)0; /* the bytes may differ from the golden caches: the inputs were altered */
    (void)fp8kv_cpu_gather_dequant(cfg, &c->shape, 1, c->key_cache.data, c->block_table.data,
                                   c->max_blocks, c->seq_lens.data, c->num_seqs, &c->k_scales,
                                   FP8KV_KV_F32, rows);
    (void)fp8kv_cpu_paged_attention(cfg, &c->shape, c->query.data, c->num_q_heads,
                                    c->key_cache.data, c->value_cache.data, c->block_table.data,
                                    c->max_blocks, c->seq_lens.data, c->num_seqs, &c->k_scales,
                                    &c->v_scales, c->softmax_scale, out);
    struct fp8kv_check chk;
    const float *golden_scales = c->scale_cache.data;
    const struct fp8kv_kv_stored golden = {c->key_cache.data, c->value_cache.data, golden_scales,
                                           golden_scales ? golden_scales + c->scale_entries : NULL};
    fp8kv_kv_judge_store(c, p, "golden", &golden, &chk, NULL);
    if (chk.mismatches != 0)
        fuzz_fail("the golden caches judged against themselves: %llu mismatches",
                  (unsigned long long)chk.mismatches);
    for (int dt = FP8KV_KV_F32; dt <= FP8KV_KV_BF16; dt++)
        if (fp8kv_kv_judge_gather(c, p, "golden", (enum fp8kv_kv_dtype)dt, c->gather[dt].data,
                                  &chk) == 0 &&
            chk.mismatches != 0)
            fuzz_fail("the golden gather rows judged against themselves: %llu mismatches",
                      (unsigned long long)chk.mismatches);
    free(kc);
    free(vc);
    free(rows);
    free(out);
    free(ksc);
    free(vsc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    load_originals();
    if (size < 2)
        return 0;
    const size_t which = data[0] % FILES;
    const int base = data[1] % BASE_CASES;
    for (size_t f = 0; f < FILES; f++) {
        char name[128];
        snprintf(name, sizeof name, "%s/kv/case0_%s.npy", PROFILE, fp8kv_kv_case_files[f]);
        if (f == which)
            fuzz_write(name, data + 2, size - 2);
        else
            fuzz_write(name, originals[base][f].bytes, originals[base][f].n);
    }
    const struct fp8kv_profile *p = fp8kv_profile_by_name(PROFILE);
    struct fp8kv_kv_case c;
    if (fp8kv_kv_case_load(fuzz_dir(), p, 0, &c) == 0)
        run_kernels(&c, p);
    fp8kv_kv_case_free(&c);
    return 0;
}
