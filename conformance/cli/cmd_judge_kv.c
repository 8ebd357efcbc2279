/* cmd_judge_kv.c — `fp8kv judge-kv`: an engine's KV caches and outputs, saved as .npy files,
 * judged against one golden case (fp8kv/kv_verdict.h). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "fp8kv/diag.h"
#include "fp8kv/fileio.h"
#include "fp8kv/kv_verdict.h"
#include "fp8kv/kv_judge.h"
#include "fp8kv/npy.h"

static const char judge_kv_help[] =
    "usage: fp8kv judge-kv --profile P --case N [--key-cache K.npy --value-cache V.npy\n"
    "                      [--key-scale-cache KS.npy --value-scale-cache VS.npy]]\n"
    "                      [--gather G.npy [--gather-dtype {dtypes}]] [--attention A.npy]\n"
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
    "  --attention the decode step's output [num_seqs, q heads, head_size] as f32 (<f4):\n"
    "        judged by NMSE against the oracle's result (threshold 1e-10)\n"
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

/* load_cache: a cache file: one-byte elements, any shape. */
static int load_cache(const char *cmd, const char *path, struct fp8kv_npy *a)
{
    if (fp8kv_npy_read_any(path, a) != 0)
        return fp8kv_cli_input_error(cmd);
    if (fp8kv_npy_elem_size(a->dtype) != 1) {
        fprintf(stderr,
                "fp8kv %s: %s: dtype %s, expected one-byte codes (|u1; view an fp8 "
                "tensor as uint8)\n",
                cmd, path, fp8kv_npy_descr(a->dtype));
        fp8kv_npy_free(a);
        return FP8KV_EXIT_USAGE;
    }
    return 0;
}

/* load_elements: a gather or attention file of element dtype *dt (-1: infer it from the file). */
static int load_elements(const char *cmd, const char *path, const char *what, int *dt,
                         struct fp8kv_npy *a)
{
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

/* load_scale_cache: a scale-cache file: f32 elements (or their bits), any shape. */
static int load_scale_cache(const char *cmd, const char *path, struct fp8kv_npy *a)
{
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

int fp8kv_cmd_judge_kv(int argc, char **argv)
{
    static const char cmd[] = "judge-kv";
    struct fp8kv_cli_args a;
    int rc, index = 0, gather_dt = -1;
    if (fp8kv_cli_begin(cmd, judge_kv_help, argc, argv, options, OPT_COUNT, &a, &rc))
        return rc;
    if ((rc = fp8kv_cli_json_begin(cmd, a.value[OPT_JSON])) != 0)
        return rc;
    if (!a.value[OPT_PROFILE])
        return fp8kv_cli_usage_error(cmd, "--profile is required");
    if ((rc = parse_case(cmd, a.value[OPT_CASE], &index)) != 0)
        return rc;
    if (!a.value[OPT_KEY] != !a.value[OPT_VALUE])
        return fp8kv_cli_usage_error(cmd, "--key-cache and --value-cache go together");
    if (!a.value[OPT_KEY_SCALES] != !a.value[OPT_VALUE_SCALES])
        return fp8kv_cli_usage_error(cmd, "--key-scale-cache and --value-scale-cache go together");
    if (a.value[OPT_KEY_SCALES] && !a.value[OPT_KEY])
        return fp8kv_cli_usage_error(cmd, "the scale caches are judged with the caches: give "
                                          "--key-cache and --value-cache too");
    if (!a.value[OPT_KEY] && !a.value[OPT_GATHER] && !a.value[OPT_ATTENTION])
        return fp8kv_cli_usage_error(cmd, "nothing to judge: give --key-cache and --value-cache, "
                                          "--gather or --attention");
    if (a.value[OPT_GATHER_DTYPE] && !a.value[OPT_GATHER])
        return fp8kv_cli_usage_error(cmd, "--gather-dtype without --gather");
    if (a.value[OPT_GATHER_DTYPE] &&
        (gather_dt = fp8kv_cli_parse_choice(cmd, "gather-dtype", a.value[OPT_GATHER_DTYPE],
                                            fp8kv_dtype_names, FP8KV_DTYPE_COUNT)) < 0)
        return FP8KV_EXIT_USAGE;

    struct fp8kv_npy key = {0}, value = {0}, key_scales = {0}, value_scales = {0}, gather = {0},
                     attention = {0};
    struct fp8kv_judge_kv_input in = {.subject = a.value[OPT_NAME]};
    if (a.value[OPT_KEY]) {
        if ((rc = load_cache(cmd, a.value[OPT_KEY], &key)) == 0)
            rc = load_cache(cmd, a.value[OPT_VALUE], &value);
        in.key_cache = key.data;
        in.value_cache = value.data;
        in.key_bytes = key.count;
        in.value_bytes = value.count;
        in.key_name = a.value[OPT_KEY];
        in.value_name = a.value[OPT_VALUE];
    }
    if (rc == 0 && a.value[OPT_KEY_SCALES]) {
        if ((rc = load_scale_cache(cmd, a.value[OPT_KEY_SCALES], &key_scales)) == 0)
            rc = load_scale_cache(cmd, a.value[OPT_VALUE_SCALES], &value_scales);
        in.key_scale_cache = key_scales.data;
        in.value_scale_cache = value_scales.data;
        in.key_scale_count = key_scales.count;
        in.value_scale_count = value_scales.count;
        in.key_scale_name = a.value[OPT_KEY_SCALES];
        in.value_scale_name = a.value[OPT_VALUE_SCALES];
    }
    if (rc == 0 && a.value[OPT_GATHER] &&
        (rc = load_elements(cmd, a.value[OPT_GATHER], "gather", &gather_dt, &gather)) == 0) {
        in.gather = gather.data;
        in.gather_count = gather.count;
        in.gather_dtype = (enum fp8kv_kv_dtype)gather_dt;
        in.gather_name = a.value[OPT_GATHER];
    }
    int attention_dt = FP8KV_KV_F32;
    if (rc == 0 && a.value[OPT_ATTENTION] &&
        (rc = load_elements(cmd, a.value[OPT_ATTENTION], "attention", &attention_dt, &attention)) ==
            0) {
        if (attention.dtype != FP8KV_NPY_F32) {
            rc = fp8kv_cli_usage_error(cmd,
                                       "%s: dtype %s: the attention output is judged as f32 "
                                       "(<f4): the threshold 1e-10 is below f16 rounding",
                                       a.value[OPT_ATTENTION], fp8kv_npy_descr(attention.dtype));
        }
        in.attention = attention.data;
        in.attention_count = attention.count;
        in.attention_name = a.value[OPT_ATTENTION];
    }
    struct fp8kv_judge_kv_result out;
    if (rc == 0) {
        const char *dir = fp8kv_cli_vectors_dir(a.value[OPT_VECTORS]);
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
    fp8kv_npy_free(&key);
    fp8kv_npy_free(&value);
    fp8kv_npy_free(&key_scales);
    fp8kv_npy_free(&value_scales);
    fp8kv_npy_free(&gather);
    fp8kv_npy_free(&attention);
    return rc;
}
