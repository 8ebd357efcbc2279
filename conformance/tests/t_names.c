/* t_names.c — every choice stated once: the name tables and defaults of fp8kv/spec.h and
 * fp8kv/block.h are complete, the KV ABI's numbers are spec.h's, the registry of the choices
 * (fp8kv/choices.h) lists the tables and their defaults, and what the help texts and messages
 * list is what the tables hold (docs/DESIGN.md "Where each choice is decided").
 *
 * The tables are the first statement; this file is the second on purpose: it spells the
 * defaults out (e4m3fn_satfinite, f32_div, ...) so that a change of one is a visible decision. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "fp8kv/block.h"
#include "fp8kv/checks.h"
#include "fp8kv/choices.h"
#include "fp8kv/diag.h"
#include "fp8kv/intq.h"
#include "fp8kv/kv_cache.h"
#include "fp8kv/kv_judge.h"
#include "fp8kv/spec.h"
#include "fp8kv/sweep.h"
#include "testutil.h"

#define FP8KV FP8KV_EXE

/* ---- fp8kv_names_list ------------------------------------------------------------------------ */

Test(names, list_joins_with_a_last_separator)
{
    static const char *const abc[] = {"a", "b", "c"};
    char buf[64];
    cr_assert_str_eq(fp8kv_names_list(abc, 3, "|", NULL, buf, sizeof buf), "a|b|c");
    cr_assert_str_eq(fp8kv_names_list(abc, 3, ", ", " or ", buf, sizeof buf), "a, b or c");
    cr_assert_str_eq(fp8kv_names_list(abc, 2, ", ", " or ", buf, sizeof buf), "a or b");
    cr_assert_str_eq(fp8kv_names_list(abc, 1, ", ", " or ", buf, sizeof buf), "a");
    cr_assert_str_eq(fp8kv_names_list(abc, 0, ", ", " or ", buf, sizeof buf), "");
    cr_assert_str_eq(fp8kv_names_list(abc, 3, ", ", NULL, buf, 5), "a, b", "cut short, ended");
    cr_assert_eq(fp8kv_names_list(abc, 3, ", ", NULL, buf, 0), buf, "size 0 writes nothing");
}

/* ---- the tables ------------------------------------------------------------------------------ */

/* Every entry named, no two alike. */
static void assert_table(const char *const *names, int count, const char *what)
{
    for (int i = 0; i < count; i++) {
        cr_assert(names[i] && *names[i], "%s %d has no name", what, i);
        for (int k = 0; k < i; k++)
            cr_assert_str_neq(names[i], names[k], "%s %d and %d", what, k, i);
        cr_assert_eq(fp8kv_name_index(names, count, names[i]), i, "%s %s", what, names[i]);
    }
}

Test(names, every_table_complete)
{
    assert_table(fp8kv_overflow_names, FP8KV_OVERFLOW_COUNT, "overflow");
    assert_table(fp8kv_inf_names, FP8KV_INF_COUNT, "inf");
    assert_table(fp8kv_nan_check_names, FP8KV_NAN_CHECK_COUNT, "nan check");
    assert_table(fp8kv_model_names, FP8KV_MODEL_COUNT, "model");
    assert_table(fp8kv_dtype_names, FP8KV_DTYPE_COUNT, "dtype");
    assert_table(fp8kv_read_model_names, FP8KV_READ_MODEL_COUNT, "read model");
    assert_table(fp8kv_class_names, FP8KV_CLASS_COUNT, "class");
    assert_table(fp8kv_kv_layout_names, FP8KV_KV_LAYOUT_COUNT, "layout");
    assert_table(fp8kv_scale_granularity_names, FP8KV_SCALE_GRANULARITY_COUNT, "granularity");
    assert_table(fp8kv_block_rule_names, FP8KV_BLOCK_RULE_COUNT, "block rule");
    assert_table(fp8kv_block_model_names, FP8KV_BLOCK_MODEL_COUNT, "block model");
    assert_table(fp8kv_model_notes, FP8KV_MODEL_COUNT, "model note");
    assert_table(fp8kv_nan_check_notes, FP8KV_NAN_CHECK_COUNT, "nan check note");
    for (int i = 0; i < FP8KV_FORMAT_COUNT; i++)
        cr_assert_eq(fp8kv_format_by_name(fp8kv_formats[i].name), &fp8kv_formats[i]);
    for (int i = 0; i < fp8kv_profile_count; i++)
        cr_assert_eq(fp8kv_profile_by_name(fp8kv_profiles[i].name), &fp8kv_profiles[i]);
    for (int i = 0; i < FP8KV_BLOCK_FORMAT_COUNT; i++)
        cr_assert_eq(fp8kv_block_format_by_name(fp8kv_block_formats[i].name),
                     &fp8kv_block_formats[i]);
}

Test(names, layouts_granularities_dtypes_are_the_abis)
{
    /* the numbers a plugin (fp8kv/kv_plugin.h) and caseN_meta.npy carry */
    cr_assert_eq(FP8KV_KV_ABI_NHD, FP8KV_LAYOUT_NHD);
    cr_assert_eq(FP8KV_KV_ABI_SPLIT_X, FP8KV_LAYOUT_SPLIT_X);
    cr_assert_eq(FP8KV_KV_ABI_HND, FP8KV_LAYOUT_HND);
    cr_assert_eq(FP8KV_KV_SCALE_TENSOR, FP8KV_SCALE_TENSOR);
    cr_assert_eq(FP8KV_KV_SCALE_HEAD, FP8KV_SCALE_HEAD);
    cr_assert_eq(FP8KV_KV_SCALE_TOKEN_HEAD, FP8KV_SCALE_TOKEN_HEAD);
    cr_assert_eq(FP8KV_KV_ABI_F32, FP8KV_DTYPE_F32);
    cr_assert_eq(FP8KV_KV_ABI_F16, FP8KV_DTYPE_F16);
    cr_assert_eq(FP8KV_KV_ABI_BF16, FP8KV_DTYPE_BF16);
    cr_assert_eq(FP8KV_DOMAIN_COUNT, FP8KV_DTYPE_COUNT);
    /* the names the judge prints and the Python package reads */
    cr_assert_str_eq(fp8kv_kv_layout_name(FP8KV_LAYOUT_NHD), "nhd");
    cr_assert_str_eq(fp8kv_kv_layout_name(FP8KV_LAYOUT_SPLIT_X), "split_x");
    cr_assert_str_eq(fp8kv_kv_layout_name(FP8KV_LAYOUT_HND), "hnd");
    cr_assert_str_eq(fp8kv_kv_layout_name((enum fp8kv_kv_layout)7), "?");
    cr_assert_str_eq(fp8kv_kv_scale_granularity_name(FP8KV_SCALE_TOKEN_HEAD), "token_head");
    cr_assert_str_eq(fp8kv_kv_scale_granularity_name(3), "?");
    cr_assert_str_eq(fp8kv_kv_dtype_name(FP8KV_KV_BF16), "bf16");
    cr_assert_str_eq(fp8kv_sweep_domain_names[FP8KV_DOMAIN_F16], "f16");
}

Test(names, defaults)
{
    const struct fp8kv_profile *p = fp8kv_default_profile();
    cr_assert_str_eq(p->name, "e4m3fn_satfinite");
    cr_assert_eq(p->format->id, FP8KV_DEFAULT_FORMAT);
    cr_assert_eq(p->overflow, FP8KV_DEFAULT_OVERFLOW);
    cr_assert_eq(p->inf, FP8KV_DEFAULT_INF);
    cr_assert_str_eq(fp8kv_model_names[FP8KV_DEFAULT_MODEL], "f32_div");
    cr_assert(fp8kv_is_kernel_model(FP8KV_DEFAULT_MODEL), "the default model is a kernel's");
    cr_assert_str_eq(fp8kv_dtype_names[FP8KV_DEFAULT_DTYPE], "f32");
    cr_assert_str_eq(fp8kv_read_model_names[FP8KV_DEFAULT_READ_MODEL], "rounded");
    cr_assert_str_eq(fp8kv_nan_check_names[FP8KV_DEFAULT_NAN_CHECK], "strict");
    cr_assert_str_eq(fp8kv_block_model_names[FP8KV_BLOCK_DEFAULT_MODEL], "exact");
    for (int i = 0; i < FP8KV_BLOCK_FORMAT_COUNT; i++)
        cr_assert(
            fp8kv_block_takes_rule(&fp8kv_block_formats[i], fp8kv_block_formats[i].default_rule),
            "%s takes its default rule", fp8kv_block_formats[i].name);
}

Test(names, kernel_models_and_their_message)
{
    const char *names[FP8KV_MODEL_COUNT];
    const int n = fp8kv_kernel_models(names);
    cr_assert_eq(n, 3);
    cr_assert_str_eq(names[0], "f32_div");
    cr_assert_str_eq(names[1], "f32_mul_recip");
    cr_assert_str_eq(names[2], "f16_div");
    cr_assert_neq(fp8kv_kernel_model_check(FP8KV_MODEL_EXACT), 0);
    cr_assert(strstr(fp8kv_last_error(), "scale model exact rounds the real quotient") &&
                  strstr(fp8kv_last_error(), "(kernels compute f32_div, f32_mul_recip or f16_div)"),
              "%s", fp8kv_last_error());
}

Test(names, block_rules_of_each_format)
{
    const char *names[FP8KV_BLOCK_RULE_COUNT];
    char buf[128];
    const int mx = fp8kv_block_rules_of(&fp8kv_block_formats[FP8KV_MXFP4], names);
    cr_assert_str_eq(fp8kv_names_list(names, mx, ", ", NULL, buf, sizeof buf),
                     "floor, rceil, even");
    const int nv = fp8kv_block_rules_of(&fp8kv_block_formats[FP8KV_NVFP4], names);
    cr_assert_str_eq(fp8kv_names_list(names, nv, ", ", NULL, buf, sizeof buf), "rne, ceil, 4over6");
}

/* ---- the registry of the choices (fp8kv/choices.h) ------------------------------------------ */

/* The names of choice what, asserted to be names[0..n) in order. */
static void assert_choice(const char *what, const char *const *names, int n)
{
    const struct fp8kv_choice *c = fp8kv_choice_named(what);
    cr_assert_not_null(c, "no choice %s", what);
    cr_assert_eq(fp8kv_choice_name_count(c), n, "%s", what);
    for (int i = 0; i < n; i++)
        cr_assert_str_eq(fp8kv_choice_name_at(c, i), names[i], "%s %d", what, i);
}

Test(names, every_choice_resolves)
{
    int count = 0;
    for (const struct fp8kv_choice *c; (c = fp8kv_choice_at(count)); count++) {
        const char *what = fp8kv_choice_name(c);
        cr_assert(what && *what, "choice %d has no name", count);
        cr_assert_eq(fp8kv_choice_named(what), c, "%s", what);
        const int n = fp8kv_choice_name_count(c);
        cr_assert(n > 0 && n <= 64, "%s has %d names", what, n); /* help.c's room */
        const char *names[64];
        for (int i = 0; i < n; i++)
            names[i] = fp8kv_choice_name_at(c, i);
        assert_table(names, n, what);
        cr_assert_null(fp8kv_choice_name_at(c, n), "%s: a name past the last", what);
        cr_assert_null(fp8kv_choice_name_at(c, -1), "%s: a name before the first", what);
        const char *def = fp8kv_choice_default(c);
        cr_assert(!def || fp8kv_name_index(names, n, def) >= 0, "%s: default %s is none of its",
                  what, def);
        for (int i = 0; i < n; i++)
            cr_assert_eq(fp8kv_choice_note(c, names[i]) != NULL, fp8kv_choice_has_notes(c),
                         "%s %s: a note, or none, as the others", what, names[i]);
        cr_assert_null(fp8kv_choice_note(c, "nope"), "%s", what);
        for (int k = 0; k < count; k++)
            cr_assert_str_neq(fp8kv_choice_name(fp8kv_choice_at(k)), what);
    }
    cr_assert_eq(count, 22, "a choice added or gone: say so in DESIGN §1.5 and here");
    cr_assert_null(fp8kv_choice_at(-1));
    cr_assert_null(fp8kv_choice_named("nope"));
    cr_assert_null(fp8kv_choice_named("formats"), "choices are named in the singular");
    cr_assert_null(fp8kv_choice_named(NULL));
    cr_assert_null(fp8kv_choice_name(NULL));
    cr_assert_eq(fp8kv_choice_name_count(NULL), 0);
    cr_assert_null(fp8kv_choice_name_at(NULL, 0));
    cr_assert_null(fp8kv_choice_default(NULL));
    cr_assert_eq(fp8kv_choice_has_notes(NULL), 0);
    cr_assert_null(fp8kv_choice_note(NULL, "f32_div"));
}

Test(names, choices_are_the_tables)
{
    const char *formats[FP8KV_FORMAT_COUNT], *blocks[FP8KV_BLOCK_FORMAT_COUNT];
    const char *profiles[64];
    for (int i = 0; i < FP8KV_FORMAT_COUNT; i++)
        formats[i] = fp8kv_formats[i].name;
    for (int i = 0; i < FP8KV_BLOCK_FORMAT_COUNT; i++)
        blocks[i] = fp8kv_block_formats[i].name;
    cr_assert_leq(fp8kv_profile_count, 64);
    for (int i = 0; i < fp8kv_profile_count; i++)
        profiles[i] = fp8kv_profiles[i].name;
    assert_choice("format", formats, FP8KV_FORMAT_COUNT);
    assert_choice("profile", profiles, fp8kv_profile_count);
    assert_choice("block_format", blocks, FP8KV_BLOCK_FORMAT_COUNT);
    const char *intq[FP8KV_INTQ_FORMAT_COUNT];
    for (int i = 0; i < FP8KV_INTQ_FORMAT_COUNT; i++)
        intq[i] = fp8kv_intq_formats[i].name;
    assert_choice("intq_format", intq, FP8KV_INTQ_FORMAT_COUNT);
    assert_choice("overflow", fp8kv_overflow_names, FP8KV_OVERFLOW_COUNT);
    assert_choice("inf", fp8kv_inf_names, FP8KV_INF_COUNT);
    assert_choice("model", fp8kv_model_names, FP8KV_MODEL_COUNT);
    assert_choice("dtype", fp8kv_dtype_names, FP8KV_DTYPE_COUNT);
    assert_choice("read_model", fp8kv_read_model_names, FP8KV_READ_MODEL_COUNT);
    assert_choice("nan_check", fp8kv_nan_check_names, FP8KV_NAN_CHECK_COUNT);
    assert_choice("layout", fp8kv_kv_layout_names, FP8KV_KV_LAYOUT_COUNT);
    assert_choice("scale_granularity", fp8kv_scale_granularity_names,
                  FP8KV_SCALE_GRANULARITY_COUNT);
    assert_choice("class", fp8kv_class_names, FP8KV_CLASS_COUNT);
    assert_choice("block_rule", fp8kv_block_rule_names, FP8KV_BLOCK_RULE_COUNT);
    assert_choice("block_model", fp8kv_block_model_names, FP8KV_BLOCK_MODEL_COUNT);
    /* the choices that keep some of a table's entries */
    const char *kernel[FP8KV_MODEL_COUNT], *rules[FP8KV_BLOCK_RULE_COUNT];
    assert_choice("kernel_model", kernel, fp8kv_kernel_models(kernel));
    static const char *const satfinite_infs[] = {"clamp", "nan"};
    assert_choice("satfinite_inf", satfinite_infs, 2);
    static const char *const inf_formats[] = {"e5m2"};
    assert_choice("inf_format", inf_formats, 1);
    assert_choice("mx_rule", rules, fp8kv_block_rules_of(&fp8kv_block_formats[FP8KV_MXFP4], rules));
    assert_choice("nvfp4_rule", rules,
                  fp8kv_block_rules_of(&fp8kv_block_formats[FP8KV_NVFP4], rules));
    /* the notes are core's */
    const struct fp8kv_choice *models = fp8kv_choice_named("kernel_model");
    cr_assert_str_eq(fp8kv_choice_note(models, "f32_div"), fp8kv_model_notes[FP8KV_MODEL_F32_DIV]);
    cr_assert_null(fp8kv_choice_note(models, "exact"), "exact is no kernel model");
    cr_assert_str_eq(fp8kv_choice_note(fp8kv_choice_named("nan_check"), "strict"),
                     fp8kv_nan_check_notes[FP8KV_NAN_CHECK_STRICT]);
    cr_assert_eq(fp8kv_choice_has_notes(fp8kv_choice_named("format")), 0);
}

/* The default of choice what: want, spelled out (NULL: none). */
static void assert_default(const char *what, const char *want)
{
    const char *def = fp8kv_choice_default(fp8kv_choice_named(what));
    if (want)
        cr_assert(def && strcmp(def, want) == 0, "default %s: %s, not %s", what, def, want);
    else
        cr_assert_null(def, "%s has no default, not %s", what, def);
}

Test(names, choices_defaults)
{
    assert_default("format", "e4m3fn");
    assert_default("profile", "e4m3fn_satfinite");
    assert_default("overflow", "satfinite");
    assert_default("inf", "clamp");
    assert_default("satfinite_inf", "clamp");
    assert_default("model", "f32_div");
    assert_default("kernel_model", "f32_div");
    assert_default("dtype", "f32");
    assert_default("read_model", "rounded");
    assert_default("nan_check", "strict");
    assert_default("block_model", "exact");
    assert_default("mx_rule", "floor");
    assert_default("nvfp4_rule", "rne");
    assert_default("layout", NULL);
    assert_default("scale_granularity", NULL);
    assert_default("class", NULL);
    assert_default("block_format", NULL);
    assert_default("block_rule", NULL);
    cr_assert_str_eq(fp8kv_choice_default(fp8kv_choice_named("profile")),
                     fp8kv_default_profile()->name);
    cr_assert_str_eq(fp8kv_choice_default(fp8kv_choice_named("mx_rule")),
                     fp8kv_block_rule_names[fp8kv_block_formats[FP8KV_MXFP4].default_rule]);
    cr_assert_str_eq(fp8kv_choice_default(fp8kv_choice_named("nvfp4_rule")),
                     fp8kv_block_rule_names[fp8kv_block_formats[FP8KV_NVFP4].default_rule]);
}

/* ---- what the command line lists ------------------------------------------------------------- */

static char out[1 << 16];

/* The help of cmd, asserted to hold no unfilled placeholder. */
static const char *help_of(const char *cmd)
{
    char line[256];
    snprintf(line, sizeof line, FP8KV " %s --help", cmd);
    cr_assert_eq(test_run(line, out, sizeof out), 0, "%s", line);
    cr_assert_null(strchr(out, '{'), "%s: a placeholder left: %s", cmd, out);
    cr_assert_null(strchr(out, '}'), "%s: a placeholder left: %s", cmd, out);
    return out;
}

/* Whether the help holds "<before><the names joined by sep><after>". */
static void assert_lists(const char *help, const char *before, const char *const *names, int n,
                         const char *sep, const char *last_sep, const char *after)
{
    char list[512], want[640];
    fp8kv_names_list(names, n, sep, last_sep, list, sizeof list);
    snprintf(want, sizeof want, "%s%s%s", before, list, after);
    cr_assert(strstr(help, want), "want '%s' in: %s", want, help);
}

Test(names, every_help_filled)
{
    static const char *const commands[] = {
        "encode",       "decode",       "ver",         "gen",           "verify",
        "sweep",        "run",          "bench",       "verify-stream", "audit",
        "merge",        "judge-kv",     "check-kv",    "report",        "version",
        "encode-block", "decode-block", "check-block", "audit --block"};
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        help_of(commands[i]);
}

Test(names, help_lists_are_the_tables)
{
    const char *formats[FP8KV_FORMAT_COUNT], *blocks[FP8KV_BLOCK_FORMAT_COUNT],
        *intq[FP8KV_INTQ_FORMAT_COUNT];
    for (int i = 0; i < FP8KV_FORMAT_COUNT; i++)
        formats[i] = fp8kv_formats[i].name;
    for (int i = 0; i < FP8KV_BLOCK_FORMAT_COUNT; i++)
        blocks[i] = fp8kv_block_formats[i].name;
    for (int i = 0; i < FP8KV_INTQ_FORMAT_COUNT; i++)
        intq[i] = fp8kv_intq_formats[i].name;
    const char *kernel[FP8KV_MODEL_COUNT];
    const int nk = fp8kv_kernel_models(kernel);

    const char *h = help_of("encode");
    assert_lists(h, "--format ", formats, FP8KV_FORMAT_COUNT, "|", NULL, "\n");
    assert_lists(h, "--overflow ", fp8kv_overflow_names, FP8KV_OVERFLOW_COUNT, "|", NULL, " ");
    assert_lists(h, "--model ", fp8kv_model_names, FP8KV_MODEL_COUNT, "|", NULL, "\n");
    assert_lists(h, "--input-dtype ", fp8kv_dtype_names, FP8KV_DTYPE_COUNT, "|", NULL, " ");
    cr_assert(strstr(h, "--inf clamp|nan "), "the Inf policies of satfinite: %s", h);
    cr_assert(strstr(h, "(default satfinite; inf: e5m2)\n"), "the formats of inf: %s", h);
    cr_assert(strstr(h, "(default f32_div)") && strstr(h, "(default e4m3fn;"), "%s", h);

    h = help_of("decode");
    assert_lists(h, "--read-model ", fp8kv_read_model_names, FP8KV_READ_MODEL_COUNT, "|", NULL,
                 " ");

    h = help_of("sweep");
    assert_lists(h, "[--domain ", fp8kv_dtype_names, FP8KV_DTYPE_COUNT, "|", NULL, "]");
    cr_assert(strstr(h, "(--plugin) f32_div (default), f32_mul_recip or f16_div\n"), "%s", h);
    cr_assert(strstr(h, "(default e4m3fn_satfinite)"), "%s", h);
    cr_assert(strstr(h, "class (any NaN code for a NaN) or strict (the byte; default)"), "%s", h);

    h = help_of("audit");
    cr_assert(strstr(h, "--model M       f32_div (default), f32_mul_recip or f16_div\n"), "%s", h);
    cr_assert(strstr(h, "(default e4m3fn_satfinite)"), "%s", h);

    h = help_of("verify-stream");
    cr_assert(
        strstr(h, "f32_div (x / s), f32_mul_recip (x * RN32(1 / s)) or f16_div (RN16(x / s))"),
        "%s", h);
    const char *noted[FP8KV_MODEL_COUNT];
    char items[FP8KV_MODEL_COUNT][64];
    for (int i = 0; i < nk; i++) {
        const int m = fp8kv_name_index(fp8kv_model_names, FP8KV_MODEL_COUNT, kernel[i]);
        snprintf(items[i], sizeof items[i], "%s (%s)", kernel[i], fp8kv_model_notes[m]);
        noted[i] = items[i];
    }
    assert_lists(h, "                   ", noted, nk, ", ", " or ", "\n");
    cr_assert(strstr(h, "--format F       e4m3fn (default), e4m3fnuz, e5m2 or e5m2fnuz "), "%s", h);
    cr_assert(strstr(h, "--overflow O     satfinite (default), nan or inf (inf: e5m2)\n"), "%s", h);

    for (int decode = 0; decode <= 1; decode++) {
        h = help_of(decode ? "decode-block" : "encode-block");
        assert_lists(h, "--format F         ", blocks, FP8KV_BLOCK_FORMAT_COUNT, "|", NULL, "|");
        assert_lists(h, "|", intq, FP8KV_INTQ_FORMAT_COUNT, "|", NULL, "\n");
    }
    h = help_of("encode-block");
    cr_assert(strstr(h, "MX: floor (default), rceil, even") &&
                  strstr(h, "nvfp4: rne (default), ceil, 4over6\n"),
              "%s", h);

    h = help_of("check-block");
    assert_lists(h, "--format F        ", blocks, FP8KV_BLOCK_FORMAT_COUNT, " | ", NULL, "\n");
    cr_assert(strstr(h, "floor | rceil | even (MX), rne | ceil | 4over6 (nvfp4)") &&
                  strstr(h, "format's (floor, rne)") && strstr(h, "exact | f32 (default exact)"),
              "%s", h);
}

Test(names, messages_list_the_tables)
{
    cr_assert_eq(
        test_run(FP8KV " sweep --plugin /nonexistent.so --model exact 2>&1", out, sizeof out), 2);
    cr_assert(strstr(out, "(kernels compute f32_div, f32_mul_recip or f16_div)"), "%s", out);
    cr_assert_eq(test_run(FP8KV " verify-stream 2>&1", out, sizeof out), 2);
    cr_assert(strstr(out, "--sweep is required (f32 | f16 | bf16)"), "%s", out);
    cr_assert_eq(test_run(FP8KV " check-block --format mxfp4 --rule rne 2>&1", out, sizeof out), 2);
    cr_assert(strstr(out, "(its rules: floor, rceil, even)"), "%s", out);
}
