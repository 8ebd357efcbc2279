/* cmd_judge_kv.c — `fp8kv judge-kv`: an engine's KV caches and outputs, saved as .npy files,
 * judged against one golden case (fp8kv/kv_verdict.h). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "fp8kv/diag.h"
#include "fp8kv/fileio.h"
#include "fp8kv/kv_attention.h"
#include "fp8kv/kv_verdict.h"
#include "fp8kv/kv_judge.h"
#include "fp8kv/kv_suite.h"
#include "fp8kv/verify.h"
#include "fp8kv/npy.h"

static const char judge_kv_help[] =
    "usage: fp8kv judge-kv --profile P --case N [--key-cache K.npy --value-cache V.npy\n"
    "                      [--key-scale-cache KS.npy --value-scale-cache VS.npy]]\n"
    "                      [--gather G.npy [--gather-dtype {dtypes}]]\n"
    "                      [--attention A.npy [--arithmetic A]] [--suite golden|engine]\n"
    "                      [--name NAME] [--json FILE] [--vectors DIR]\n"
    "\n"
    "Judges what an engine's KV-cache kernels produced for golden case N of profile P\n"
    "(vectors/<P>/kv/caseN_*.npy; vectors/README.md says what each case holds):\n"
    "  --key-cache, --value-cache  the whole caches after the store, as one-byte arrays (u1,\n"
    "        i1 or ml_dtypes float8 saved by numpy) of any shape with the case's byte count,\n"
    "        in the case's layout, filled with 0xA5 before the store: judged byte for byte\n"
    "  --key-scale-cache, --value-scale-cache  for a case with a scale per token and head\n"
    "        (and only then): the scale caches the store wrote, f32 (<f4 or <u4 bits) of any\n"
    "        shape with num_blocks x block_size x num_heads entries (entry slot * num_heads +\n"
    "        head), filled with 0xA5 bytes before the store: judged bit for bit\n"
    "  --gather    the gather + dequant rows: the key rows, then the value rows of every\n"
    "        sequence (2 x sum(seq_lens) x heads x head_size elements), bit for bit\n"
    "  --gather-dtype  f32 (<f4, <u4, <i4), f16 (<f2, <u2, <i2) or bf16 (<u2, <i2, |V2);\n"
    "        inferred from <f4, <f2 or |V2\n"
    "  --attention the decode step's output [num_seqs, q heads, head_size], in the output\n"
    "        dtype of the arithmetic (f32: <f4; f16: <f2 or <u2; bf16: <u2, <i2 or |V2):\n"
    "        every output within the bound of that arithmetic around the exact result of\n"
    "        its elementwise roundings (docs/DESIGN.md §5.3.1); under f32 also an NMSE\n"
    "        against the oracle's 128-bit result of at most 1e-10\n"
    "  --arithmetic  what the attention computes in: {arithmetics:or_default}, or one of\n"
    "        them followed by ,key=value changes: q=f32|bf16|f16 (the dtype q is given in),\n"
    "        kv=scaled|folded, kv_type=f32|bf16|f16 (K*s and V*s rounded to it), dot=f32|tf32\n"
    "        (the products' operands), p=f32|tf32|bf16|f16|e4m3 (the softmax weights),\n"
    "        out=f32|bf16|f16, exp_ulps=N (the exp's error), tile=N (the fewest keys between\n"
    "        updates of the running maximum); e.g. bf16,exp_ulps=8\n"
    "  --suite     golden (default): case N of the golden KV cases; engine: case N of the\n"
    "        engine suite (`fp8kv suite` lists them), generated and checked against its\n"
    "        committed digests; only --attention is judged there\n"
    "  --name      what was judged, for the report (default engine)\n"
    "  --json FILE also write the verdict as JSON (schema fp8kv-judge-kv, docs/json.md); '-':\n"
    "        the JSON to stdout, the text to stderr\n"
    "  --vectors   the vector directory (default: $FP8KV_VECTORS, ./vectors, or the installed\n"
    "        set); it is verified against MANIFEST.json and SHA256SUMS first\n"
    "Prints per-class counts, the first differing bytes named by token, head, dim, block and\n"
    "offset, and the last line\n"
    "  judge-kv <profile> case<N>: bytes=<B> mismatches=<M> verdict=conformant|nonconformant\n"
    "(M: differing cache bytes, key and value together, plus differing scale-cache entries\n"
    "and gather elements).\n"
    "The case is found first, so a file longer than a .npy of the size the case needs is\n"
    "refused before any of it is read.\n"
    "exit: 0 conformant, 1 nonconformant, 2 bad input (a missing file, a wrong dtype or size,\n"
    "      an unknown profile or case, vectors that do not verify)\n";

enum {
    OPT_PROFILE,
    OPT_CASE,
    OPT_KEY,
    OPT_VALUE,
    OPT_KEY_SCALES,
    OPT_VALUE_SCALES,
    OPT_GATHER,
    OPT_GATHER_DTYPE,
    OPT_ATTENTION,
    OPT_ARITHMETIC,
    OPT_SUITE,
    OPT_NAME,
    OPT_JSON,
    OPT_VECTORS,
    OPT_COUNT
};
static const struct fp8kv_cli_option options[OPT_COUNT] = {{"profile", 1},
                                                           {"case", 1},
                                                           {"key-cache", 1},
                                                           {"value-cache", 1},
                                                           {"key-scale-cache", 1},
                                                           {"value-scale-cache", 1},
                                                           {"gather", 1},
                                                           {"gather-dtype", 1},
                                                           {"attention", 1},
                                                           {"arithmetic", 1},
                                                           {"suite", 1},
                                                           {"name", 1},
                                                           {"json", 1},
                                                           {"vectors", 1}};

/* The .npy dtypes an array of element dtype dt may come as (bits are bits). */
static int npy_fits(enum fp8kv_npy_dtype n, int dt)
{
    switch (n) {
    case FP8KV_NPY_F32:
    case FP8KV_NPY_U32:
    case FP8KV_NPY_I32: return dt == FP8KV_KV_F32;
    case FP8KV_NPY_F16: return dt == FP8KV_KV_F16;
    case FP8KV_NPY_RAW16: return dt == FP8KV_KV_BF16;
    case FP8KV_NPY_U16:
    case FP8KV_NPY_I16: return dt == FP8KV_KV_F16 || dt == FP8KV_KV_BF16;
    default: return 0;
    }
}

/* check_header: refuses the file at path before reading its data when its header's shape
 * (the file's length checked against it) is not of the want elements the case needs, or, with
 * codes, its dtype is not of one byte. (The file may still change before it is read; the
 * reader then checks its header again.) 0, or FP8KV_EXIT_USAGE after a message. */
static int check_header(const char *cmd, const char *path, size_t want, int codes, const char *unit)
{
    struct fp8kv_npy head;
    if (fp8kv_npy_read_header_any(path, &head) != 0)
        return fp8kv_cli_input_error(cmd);
    if (codes && fp8kv_npy_elem_size(head.dtype) != 1)
        fprintf(stderr,
                "fp8kv %s: %s: dtype %s, expected one-byte codes (|u1; view an fp8 tensor as "
                "uint8)\n",
                cmd, path, fp8kv_npy_descr(head.dtype));
    else if (head.count != want)
        fprintf(stderr,
                "fp8kv %s: %s: %zu elements (its header's shape), but the case needs %zu %s: "
                "refused before reading its data\n",
                cmd, path, head.count, want, unit);
    else
        return 0;
    return FP8KV_EXIT_USAGE;
}

/* load_cache: a cache file of want bytes: one-byte elements, any shape. */
static int load_cache(const char *cmd, const char *path, size_t want, struct fp8kv_npy *a)
{
    const int rc = check_header(cmd, path, want, 1, "bytes");
    if (rc != 0)
        return rc;
    if (fp8kv_npy_read_any(path, a) != 0)
        return fp8kv_cli_input_error(cmd);
    if (fp8kv_npy_elem_size(a->dtype) == 1 && a->count == want)
        return 0;
    fprintf(stderr, "fp8kv %s: %s: changed while it was read\n", cmd, path);
    fp8kv_npy_free(a);
    return FP8KV_EXIT_USAGE;
}

/* load_elements: a gather or attention file of want elements of element dtype *dt (-1: infer it
 * from the file). */
static int load_elements(const char *cmd, const char *path, const char *what, size_t want, int *dt,
                         struct fp8kv_npy *a)
{
    const int rc = check_header(cmd, path, want, 0, "elements");
    if (rc != 0)
        return rc;
    if (fp8kv_npy_read_any(path, a) != 0)
        return fp8kv_cli_input_error(cmd);
    if (*dt < 0)
        *dt = a->dtype == FP8KV_NPY_F32     ? FP8KV_KV_F32
              : a->dtype == FP8KV_NPY_F16   ? FP8KV_KV_F16
              : a->dtype == FP8KV_NPY_RAW16 ? FP8KV_KV_BF16
                                            : -1;
    if (*dt < 0) {
        char list[64];
        fprintf(
            stderr, "fp8kv %s: %s: dtype %s does not say %s: give --%s-dtype\n", cmd, path,
            fp8kv_npy_descr(a->dtype),
            fp8kv_names_list(fp8kv_dtype_names, FP8KV_DTYPE_COUNT, ", ", " or ", list, sizeof list),
            what);
    } else if (!npy_fits(a->dtype, *dt)) {
        fprintf(stderr, "fp8kv %s: %s: dtype %s cannot hold %s elements\n", cmd, path,
                fp8kv_npy_descr(a->dtype), fp8kv_dtype_names[*dt]);
    } else {
        return 0;
    }
    fp8kv_npy_free(a);
    return FP8KV_EXIT_USAGE;
}

/* load_scale_cache: a scale-cache file of want entries: f32 elements (or their bits), any
 * shape. */
static int load_scale_cache(const char *cmd, const char *path, size_t want, struct fp8kv_npy *a)
{
    const int rc = check_header(cmd, path, want, 0, "entries");
    if (rc != 0)
        return rc;
    if (fp8kv_npy_read_any(path, a) != 0)
        return fp8kv_cli_input_error(cmd);
    if (a->dtype != FP8KV_NPY_F32 && a->dtype != FP8KV_NPY_U32) {
        fprintf(stderr, "fp8kv %s: %s: dtype %s, expected f32 scales (<f4, or their bits as <u4)\n",
                cmd, path, fp8kv_npy_descr(a->dtype));
        fp8kv_npy_free(a);
        return FP8KV_EXIT_USAGE;
    }
    return 0;
}

static int parse_case(const char *cmd, const char *text, int *index)
{
    char *end;
    const long v = text ? strtol(text, &end, 10) : -1;
    if (!text || !*text || *end || v < 0 || v > INT_MAX || text[0] == '+' || text[0] == ' ')
        return fp8kv_cli_usage_error(cmd, "--case needs a case number (0, 1, ...), not '%s'",
                                     text ? text : "");
    *index = (int)v;
    return 0;
}

static int write_json(const char *cmd, const char *path, const char *json)
{
    json_t *doc = json_loads(json, 0, NULL); /* the judge's document, through the one writer */
    return fp8kv_cli_json_write(cmd, path, doc ? doc : json_null());
}

/* The arrays read from the files given. */
struct loaded {
    struct fp8kv_npy key, value, key_scales, value_scales, gather, attention;
};

/* load_files: the files a names, each checked against want before it is read, into l and in. 0,
 * or an exit code after a message. */
static int load_files(const char *cmd, const struct fp8kv_cli_args *a,
                      const struct fp8kv_judge_kv_sizes *want, int gather_dt, struct loaded *l,
                      struct fp8kv_judge_kv_input *in)
{
    int rc = 0;
    if (a->value[OPT_KEY]) {
        if ((rc = load_cache(cmd, a->value[OPT_KEY], want->cache_bytes, &l->key)) == 0)
            rc = load_cache(cmd, a->value[OPT_VALUE], want->cache_bytes, &l->value);
        in->key_cache = l->key.data;
        in->value_cache = l->value.data;
        in->key_bytes = l->key.count;
        in->value_bytes = l->value.count;
        in->key_name = a->value[OPT_KEY];
        in->value_name = a->value[OPT_VALUE];
    }
    if (rc == 0 && a->value[OPT_KEY_SCALES]) {
        const size_t n = want->scale_entries;
        if ((rc = load_scale_cache(cmd, a->value[OPT_KEY_SCALES], n, &l->key_scales)) == 0)
            rc = load_scale_cache(cmd, a->value[OPT_VALUE_SCALES], n, &l->value_scales);
        in->key_scale_cache = l->key_scales.data;
        in->value_scale_cache = l->value_scales.data;
        in->key_scale_count = l->key_scales.count;
        in->value_scale_count = l->value_scales.count;
        in->key_scale_name = a->value[OPT_KEY_SCALES];
        in->value_scale_name = a->value[OPT_VALUE_SCALES];
    }
    if (rc == 0 && a->value[OPT_GATHER] &&
        (rc = load_elements(cmd, a->value[OPT_GATHER], "gather", want->gather_count, &gather_dt,
                            &l->gather)) == 0) {
        in->gather = l->gather.data;
        in->gather_count = l->gather.count;
        in->gather_dtype = (enum fp8kv_kv_dtype)gather_dt;
        in->gather_name = a->value[OPT_GATHER];
    }
    struct fp8kv_attention_arith arith = {.out = FP8KV_ATTN_F32};
    if (rc == 0 && a->value[OPT_ATTENTION] &&
        fp8kv_attention_arith_parse(a->value[OPT_ARITHMETIC], &arith) != 0)
        rc = fp8kv_cli_usage_error(cmd, "--arithmetic: %s", fp8kv_last_error());
    int attention_dt = fp8kv_attention_kv_dtype(arith.out);
    if (rc == 0 && a->value[OPT_ATTENTION] &&
        (rc = load_elements(cmd, a->value[OPT_ATTENTION], "attention", want->attention_count,
                            &attention_dt, &l->attention)) == 0) {
        in->attention = l->attention.data;
        in->attention_count = l->attention.count;
        in->attention_name = a->value[OPT_ATTENTION];
        in->arithmetic = a->value[OPT_ARITHMETIC];
    }
    return rc;
}

/* check_args: the options' values that need no file read. 0, or an exit code after a message. */
static int check_args(const char *cmd, const struct fp8kv_cli_args *a, int *index, int *gather_dt)
{
    int rc;
    if (!a->value[OPT_PROFILE])
        return fp8kv_cli_usage_error(cmd, "--profile is required");
    if ((rc = parse_case(cmd, a->value[OPT_CASE], index)) != 0)
        return rc;
    if (!a->value[OPT_KEY] != !a->value[OPT_VALUE])
        return fp8kv_cli_usage_error(cmd, "--key-cache and --value-cache go together");
    if (!a->value[OPT_KEY_SCALES] != !a->value[OPT_VALUE_SCALES])
        return fp8kv_cli_usage_error(cmd, "--key-scale-cache and --value-scale-cache go together");
    if (a->value[OPT_KEY_SCALES] && !a->value[OPT_KEY])
        return fp8kv_cli_usage_error(cmd, "the scale caches are judged with the caches: give "
                                          "--key-cache and --value-cache too");
    if (!a->value[OPT_KEY] && !a->value[OPT_GATHER] && !a->value[OPT_ATTENTION])
        return fp8kv_cli_usage_error(cmd, "nothing to judge: give --key-cache and --value-cache, "
                                          "--gather or --attention");
    if (a->value[OPT_SUITE] && strcmp(a->value[OPT_SUITE], "golden") != 0 &&
        strcmp(a->value[OPT_SUITE], "engine") != 0)
        return fp8kv_cli_usage_error(cmd, "--suite %s: give golden or engine", a->value[OPT_SUITE]);
    if (a->value[OPT_SUITE] && strcmp(a->value[OPT_SUITE], "engine") == 0 &&
        (a->value[OPT_KEY] || a->value[OPT_GATHER] || !a->value[OPT_ATTENTION]))
        return fp8kv_cli_usage_error(cmd, "--suite engine judges attention outputs only: give "
                                          "--attention alone");
    if (a->value[OPT_ARITHMETIC] && !a->value[OPT_ATTENTION])
        return fp8kv_cli_usage_error(cmd, "--arithmetic without --attention");
    if (a->value[OPT_GATHER_DTYPE] && !a->value[OPT_GATHER])
        return fp8kv_cli_usage_error(cmd, "--gather-dtype without --gather");
    if (a->value[OPT_GATHER_DTYPE] &&
        (*gather_dt = fp8kv_cli_parse_choice(cmd, "gather-dtype", a->value[OPT_GATHER_DTYPE],
                                             fp8kv_dtype_names, FP8KV_DTYPE_COUNT)) < 0)
        return FP8KV_EXIT_USAGE;
    return 0;
}

/* judge_suite: --attention against engine-suite case index. */
static int judge_suite(const char *cmd, const struct fp8kv_cli_args *a, const char *dir, int index)
{
    const struct fp8kv_profile *p = fp8kv_cli_profile(cmd, a->value[OPT_PROFILE]);
    if (!p)
        return FP8KV_EXIT_USAGE;
    struct fp8kv_suite_case c;
    if (fp8kv_vectors_trust(dir) != 0 || fp8kv_suite_case_make(dir, p, index, &c) != 0)
        return fp8kv_cli_input_error(cmd);
    const struct fp8kv_judge_kv_sizes want = {.attention_count = (size_t)c.num_seqs *
                                                                 c.num_q_heads * c.shape.head_size};
    struct loaded l = {0};
    struct fp8kv_judge_kv_input in = {.subject = a->value[OPT_NAME]};
    int rc = load_files(cmd, a, &want, -1, &l, &in);
    struct fp8kv_judge_kv_result out;
    if (rc == 0 && fp8kv_judge_kv_suite(&c, p, &in, &out) != 0) {
        rc = fp8kv_cli_input_error(cmd);
    } else if (rc == 0) {
        fputs(out.text, stdout);
        rc = out.conformant ? FP8KV_EXIT_CONFORMANT : FP8KV_EXIT_NONCONFORMANT;
        if (a->value[OPT_JSON] && write_json(cmd, a->value[OPT_JSON], out.json) != 0)
            rc = FP8KV_EXIT_USAGE;
        fp8kv_judge_kv_result_free(&out);
    }
    fp8kv_npy_free(&l.attention);
    fp8kv_suite_case_free(&c);
    return rc;
}

int fp8kv_cmd_judge_kv(int argc, char **argv)
{
    static const char cmd[] = "judge-kv";
    struct fp8kv_cli_args a;
    int rc, index = 0, gather_dt = -1;
    if (fp8kv_cli_begin(cmd, judge_kv_help, argc, argv, options, OPT_COUNT, &a, &rc))
        return rc;
    if ((rc = fp8kv_cli_json_begin(cmd, a.value[OPT_JSON])) != 0)
        return rc;
    if ((rc = check_args(cmd, &a, &index, &gather_dt)) != 0)
        return rc;
    /* the case first: what each file must hold is known before any of them is read */
    const char *dir = fp8kv_cli_vectors_dir(a.value[OPT_VECTORS]);
    if (a.value[OPT_SUITE] && strcmp(a.value[OPT_SUITE], "engine") == 0)
        return judge_suite(cmd, &a, dir, index);
    const unsigned parts = (a.value[OPT_KEY] ? FP8KV_JUDGE_KV_CACHES : 0u) |
                           (a.value[OPT_KEY_SCALES] ? FP8KV_JUDGE_KV_SCALE_CACHES : 0u) |
                           (a.value[OPT_GATHER] ? FP8KV_JUDGE_KV_GATHER : 0u) |
                           (a.value[OPT_ATTENTION] ? FP8KV_JUDGE_KV_ATTENTION : 0u);
    struct fp8kv_judge_kv_sizes want;
    if (fp8kv_judge_kv_sizes(dir, a.value[OPT_PROFILE], index, parts, &want) != 0)
        return fp8kv_cli_input_error(cmd);
    struct loaded l = {0};
    struct fp8kv_judge_kv_input in = {.subject = a.value[OPT_NAME]};
    rc = load_files(cmd, &a, &want, gather_dt, &l, &in);
    struct fp8kv_judge_kv_result out;
    if (rc == 0) {
        if (fp8kv_judge_kv(dir, a.value[OPT_PROFILE], index, &in, &out) != 0) {
            rc = fp8kv_cli_input_error(cmd);
        } else {
            fputs(out.text, stdout);
            rc = out.conformant ? FP8KV_EXIT_CONFORMANT : FP8KV_EXIT_NONCONFORMANT;
            if (a.value[OPT_JSON] && write_json(cmd, a.value[OPT_JSON], out.json) != 0)
                rc = FP8KV_EXIT_USAGE;
            fp8kv_judge_kv_result_free(&out);
        }
    }
    fp8kv_npy_free(&l.key);
    fp8kv_npy_free(&l.value);
    fp8kv_npy_free(&l.key_scales);
    fp8kv_npy_free(&l.value_scales);
    fp8kv_npy_free(&l.gather);
    fp8kv_npy_free(&l.attention);
    return rc;
}
