/* codec_plugin.c — the CPU subjects `bits` and `decode-bits` (fp8kv/subject.h) as a
 * codec plugin (fp8kv/plugin.h): the same code, to measure what the plugin path costs; and, built
 * with PLUGIN_FAULT set, the faulty plugins the tests feed to `fp8kv sweep --plugin`: crash
 * dereferences NULL on meeting the input 1.0 hang        sleeps forever on meeting the input 1.0
 *   exit        calls exit(7) while loading
 *   abi2        says ABI version 2
 *   no_symbol   exports no fp8kv_codec_v1
 *   bad_format  says format "e3m4" (no such format)
 *   null_encode has no encode_f32
 *   wrong_tie   rounds the tie at 464 up to NaN instead of down to 448
 *   fork_crash  on meeting the input 1.0, starts a child that sleeps (and writes its pid to
 *               the file $FP8KV_TEST_CHILD_PIDFILE), then crashes
 *   overrun     writes one byte past its n outputs
 *   underrun    writes one byte before its outputs
 *   input_write writes into its inputs (x[0] = 0)
 *   overflow_nan gives NaN instead of +-448 for |x| in (464, 480] at scale 1: a defect of a
 *               range of 524,288 inputs per sign, in the overflow class
 *   many_classes fails at scale 1 in every input class (many_classes_fault below), over ranges
 *               that straddle where 2, 3 and 7 shards cut the f32 domain: what the tests of
 *               --shard and `fp8kv merge` merge
 *   decode_via_f16 rounds each decoded value times its scale to f16 before handing it back as
 *               f32: wrong in the f32 read (and, by double rounding, some bf16 reads), right
 *               in f16
 * One source for all of them, so a fault is the only difference from the clean plugin.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "fp8kv/plugin.h"
#include "fp8kv/subject.h"

#define FAULT_NONE 0
#define FAULT_CRASH 1
#define FAULT_HANG 2
#define FAULT_EXIT 3
#define FAULT_ABI2 4
#define FAULT_NO_SYMBOL 5
#define FAULT_BAD_FORMAT 6
#define FAULT_NULL_ENCODE 7
#define FAULT_WRONG_TIE 8
#define FAULT_FORK_CRASH 9
#define FAULT_OVERRUN 10
#define FAULT_OVERFLOW_NAN 11
#define FAULT_MANY_CLASSES 12
#define FAULT_DECODE_VIA_F16 13
#define FAULT_UNDERRUN 14
#define FAULT_INPUT_WRITE 15
#ifndef PLUGIN_FAULT
#define PLUGIN_FAULT FAULT_NONE
#endif

/* e4m3fn, satfinite, Inf clamps, f32 division: the profile e4m3fn_satfinite */
static const struct fp8kv_codec_cfg cfg = {FP8KV_CODEC_E4M3FN, 1, 0, FP8KV_CODEC_F32_DIV};

/* fork_crash: a child that writes its pid to $FP8KV_TEST_CHILD_PIDFILE and then sleeps forever,
 * holding the worker's socket open as a plugin's helper process would; returns once the pid
 * is written, so the crash that follows cannot outrun it. */
static void start_sleeping_child(void)
{
    int ready[2];
    if (pipe(ready) != 0)
        return;
    if (fork() == 0) {
        const char *pidfile = getenv("FP8KV_TEST_CHILD_PIDFILE");
        FILE *f = pidfile ? fopen(pidfile, "w") : NULL;
        if (f) {
            fprintf(f, "%d\n", (int)getpid());
            fclose(f);
        }
        (void)write(ready[1], "", 1);
        for (;;)
            sleep(1);
    }
    char c;
    (void)read(ready[0], &c, 1);
}

/* The CPU subject called name, with the capability asked for (present: this is our own table). */
static const struct fp8kv_subject *cpu_subject(const char *name, unsigned caps)
{
    return fp8kv_subject_find(fp8kv_cpu_subjects, fp8kv_cpu_subject_count, name, caps);
}

/* Where 2, 3 and 7 shards cut the f32 domain (fp8kv/shard.h: at multiples of 2^20). */
static const uint32_t shard_borders[] = {0x80000000u, 0x55500000u, 0xAAA00000u,
                                         0x24900000u, 0x49200000u, 0x6DB00000u,
                                         0x92400000u, 0xB6D00000u, 0xDB600000u};

/* many_classes: the wrong code for f32 bits b (scale 1), or -1 where the code is right: the f32
 * denormals 0x1 .. 0xf (f32-denormal), 1.0625 rounded up (tie), every 2^18-th input of [1, 2)
 * and (-2, -1] (normal), +Inf as NaN (inf), the NaNs 0x7fc00000 .. 0x7fc000ff (nan), and the six
 * inputs around each shard border (underflow, overflow, nan, zero, f32-denormal). */
static int many_classes_fault(uint32_t b)
{
    const uint32_t mag = b & 0x7FFFFFFFu;
    for (size_t k = 0;
         ((b + 3) & 0xFFFFFu) < 6 && k < sizeof shard_borders / sizeof shard_borders[0];
         k++) /* the borders are multiples of 2^20 */
        if (b - (shard_borders[k] - 3) < 6)
            return 0x55;
    if (b >= 1 && b <= 0xF)
        return 0x01;
    if (mag == 0x3F880000u)
        return b >> 31 ? 0xB9 : 0x39;
    if (mag >= 0x3F800000u && mag < 0x40000000u && (b & 0x3FFFFu) == 0x1234u)
        return -2; /* the code with its low bit flipped */
    if (b == 0x7F800000u)
        return 0x7F;
    if (b >= 0x7FC00000u && b < 0x7FC00100u)
        return 0x7E;
    return -1;
}

/* Whether any of x[0 .. n) may be one of many_classes' faulty inputs: a superset of them, tested
 * without branches so that the loop vectorizes (a sweep's 2^32 inputs pass through it). */
FP8KV_HOST_ARRAY_LOOP
static int many_classes_candidates(const float *x, size_t n)
{
    unsigned any = 0;
    for (size_t i = 0; i < n; i++) {
        const uint32_t b = fp8kv_f32_bits(x[i]), mag = b & 0x7FFFFFFFu;
        any |= (((b + 3u) & 0xFFFFFu) < 6u) | (b - 1u < 0xFu) | (mag == 0x3F880000u) |
               ((b & 0x3FFFFu) == 0x1234u) | (b == 0x7F800000u) | (b - 0x7FC00000u < 0x100u);
    }
    return any != 0;
}

/* many_classes_fault applied to q[0 .. n), blocks without a candidate skipped. */
static void many_classes_apply(const float *x, size_t n, uint8_t *q)
{
    enum { BLOCK = 256 };
    for (size_t lo = 0; lo < n; lo += BLOCK) {
        const size_t hi = n - lo < BLOCK ? n : lo + BLOCK;
        for (size_t i = lo; many_classes_candidates(x + lo, hi - lo) && i < hi; i++) {
            const int wrong = many_classes_fault(fp8kv_f32_bits(x[i]));
            if (wrong >= 0)
                q[i] = (uint8_t)wrong;
            else if (wrong == -2)
                q[i] ^= 1;
        }
    }
}

static void encode_f32(const float *x, size_t n, float scale, uint8_t *q)
{
    const struct fp8kv_subject *bits = cpu_subject("bits", FP8KV_CAP_ENCODE);
    bits->encode(bits->ctx, cfg, x, n, scale, q);
    for (size_t i = 0; PLUGIN_FAULT != FAULT_NONE && PLUGIN_FAULT != FAULT_MANY_CLASSES && i < n;
         i++) {
        if (PLUGIN_FAULT == FAULT_FORK_CRASH && x[i] == 1.0f)
            start_sleeping_child();
        if ((PLUGIN_FAULT == FAULT_CRASH || PLUGIN_FAULT == FAULT_FORK_CRASH) && x[i] == 1.0f)
            *(volatile int *)(uintptr_t)(n - n) = 1;
        while (PLUGIN_FAULT == FAULT_HANG && x[i] == 1.0f)
            sleep(1);
        if (PLUGIN_FAULT == FAULT_WRONG_TIE && scale == 1.0f &&
            (fp8kv_f32_bits(x[i]) & 0x7FFFFFFFu) == 0x43E80000u)
            q[i] |= 0x7F; /* +-464: NaN */
        if (PLUGIN_FAULT == FAULT_OVERFLOW_NAN && scale == 1.0f &&
            (fp8kv_f32_bits(x[i]) & 0x7FFFFFFFu) > 0x43E80000u &&
            (fp8kv_f32_bits(x[i]) & 0x7FFFFFFFu) <= 0x43F00000u)
            q[i] |= 0x7F; /* (464, 480]: NaN */
    }
    if (PLUGIN_FAULT == FAULT_MANY_CLASSES && scale == 1.0f)
        many_classes_apply(x, n, q);
    if (PLUGIN_FAULT == FAULT_OVERRUN)
        q[n] = 0x00; /* one byte too many */
    if (PLUGIN_FAULT == FAULT_UNDERRUN)
        q[-1] = 0x00; /* one byte before */
    if (PLUGIN_FAULT == FAULT_INPUT_WRITE && n)
        ((float *)(uintptr_t)x)[0] = 0.0f; /* the inputs are not the plugin's to change */
}

static void decode_f32(const uint8_t *q, size_t n, float scale, float *y)
{
    const struct fp8kv_subject *decode_bits = cpu_subject("decode-bits", FP8KV_CAP_DECODE);
    decode_bits->decode(decode_bits->ctx, cfg, q, n, scale, y);
    for (size_t i = 0; PLUGIN_FAULT == FAULT_DECODE_VIA_F16 && i < n; i++)
        y[i] = fp8kv_f16_to_f32(fp8kv_f32_to_f16_rne(y[i])); /* the product rounded to f16 */
}

static const struct fp8kv_codec_v1 codec = {
    PLUGIN_FAULT == FAULT_ABI2 ? 2 : FP8KV_CODEC_ABI_VERSION, "bits-plugin",
    PLUGIN_FAULT == FAULT_BAD_FORMAT ? "e3m4" : "e4m3fn",     "satfinite",
    PLUGIN_FAULT == FAULT_NULL_ENCODE ? NULL : encode_f32,    decode_f32,
};

#if PLUGIN_FAULT == FAULT_EXIT
__attribute__((constructor)) static void exit_while_loading(void)
{
    exit(7);
}
#endif

#if PLUGIN_FAULT != FAULT_NO_SYMBOL
__attribute__((visibility("default"))) const struct fp8kv_codec_v1 *fp8kv_codec_v1(void)
{
    return &codec;
}
#else
const struct fp8kv_codec_v1 *fp8kv_codec_v2(void); /* the wrong name */
__attribute__((visibility("default"))) const struct fp8kv_codec_v1 *fp8kv_codec_v2(void)
{
    return &codec;
}
#endif
