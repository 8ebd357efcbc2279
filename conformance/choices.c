/* choices.c — the registry of the named choices (fp8kv/choices.h): for each choice the name
 * table its names come from, which of the table's entries it keeps, its default and its notes.
 * The tables and the defaults are core's (fp8kv/spec.h, fp8kv/block.h); this file says only
 * which named lists exist, once, for cli/help.c and py_api.c alike. */
#include <string.h>

#include "fp8kv/block.h"
#include "fp8kv/checks.h"
#include "fp8kv/choices.h"
#include "fp8kv/intq.h"
#include "fp8kv/kv_attention.h"

/* ---- the tables of descriptors: entry i, NULL past the last ---------------------------------- */

static const char *format_entry(int i)
{
    return i < FP8KV_FORMAT_COUNT ? fp8kv_formats[i].name : NULL;
}
static const char *profile_entry(int i)
{
    return i < fp8kv_profile_count ? fp8kv_profiles[i].name : NULL;
}
static const char *block_format_entry(int i)
{
    return i < FP8KV_BLOCK_FORMAT_COUNT ? fp8kv_block_formats[i].name : NULL;
}

static const char *intq_format_entry(int i)
{
    return i < FP8KV_INTQ_FORMAT_COUNT ? fp8kv_intq_formats[i].name : NULL;
}

/* ---- the choices that keep some of their table's entries ------------------------------------- */

static int kernel_model(int m)
{
    return fp8kv_is_kernel_model((enum fp8kv_scale_model)m);
}

/* The Inf policies a choice of --inf means: those of the satfinite profiles (under the other
 * overflow rules the policy follows the rule). */
static int satfinite_inf(int inf)
{
    for (int k = 0; k < fp8kv_profile_count; k++)
        if (fp8kv_profiles[k].overflow == FP8KV_OVERFLOW_SATFINITE &&
            (int)fp8kv_profiles[k].inf == inf)
            return 1;
    return 0;
}

/* The formats a choice of --overflow inf takes: those with a profile of that rule. */
static int inf_format(int format)
{
    for (int k = 0; k < fp8kv_profile_count; k++)
        if (fp8kv_profiles[k].overflow == FP8KV_OVERFLOW_INF &&
            (int)fp8kv_profiles[k].format->id == format)
            return 1;
    return 0;
}

/* The first block format of a scale kind: every MX format (E8M0 scales) takes the same rules, as
 * does nvfp4 (UE4M3). */
static const struct fp8kv_block_format *of_kind(enum fp8kv_block_scale_kind kind)
{
    for (int i = 0; i < FP8KV_BLOCK_FORMAT_COUNT; i++)
        if (fp8kv_block_formats[i].scale_kind == kind)
            return &fp8kv_block_formats[i];
    return &fp8kv_block_formats[0];
}

static int mx_rule(int r)
{
    return fp8kv_block_takes_rule(of_kind(FP8KV_SCALE_E8M0), (enum fp8kv_block_rule)r);
}
static int nvfp4_rule(int r)
{
    return fp8kv_block_takes_rule(of_kind(FP8KV_SCALE_UE4M3), (enum fp8kv_block_rule)r);
}

/* ---- the defaults ---------------------------------------------------------------------------- */

static const char *default_format(void)
{
    return fp8kv_formats[FP8KV_DEFAULT_FORMAT].name;
}
static const char *default_profile(void)
{
    return fp8kv_default_profile()->name;
}
static const char *default_overflow(void)
{
    return fp8kv_overflow_names[FP8KV_DEFAULT_OVERFLOW];
}
static const char *default_inf(void)
{
    return fp8kv_inf_names[FP8KV_DEFAULT_INF];
}
static const char *default_model(void)
{
    return fp8kv_model_names[FP8KV_DEFAULT_MODEL];
}
static const char *default_dtype(void)
{
    return fp8kv_dtype_names[FP8KV_DEFAULT_DTYPE];
}
static const char *default_read_model(void)
{
    return fp8kv_read_model_names[FP8KV_DEFAULT_READ_MODEL];
}
static const char *default_nan_check(void)
{
    return fp8kv_nan_check_names[FP8KV_DEFAULT_NAN_CHECK];
}
static const char *default_mx_rule(void)
{
    return fp8kv_block_rule_names[of_kind(FP8KV_SCALE_E8M0)->default_rule];
}
static const char *default_nvfp4_rule(void)
{
    return fp8kv_block_rule_names[of_kind(FP8KV_SCALE_UE4M3)->default_rule];
}
static const char *default_arithmetic(void)
{
    return fp8kv_attention_presets[0];
}
static const char *default_block_model(void)
{
    return fp8kv_block_model_names[FP8KV_BLOCK_DEFAULT_MODEL];
}

/* ---- the registry ---------------------------------------------------------------------------- */

/* A choice: the entries of a name table (names, count entries; or entry(i) of a table of
 * descriptors) that keep accepts (NULL: all), the default (NULL: none) and each table entry's
 * note (NULL: none). */
struct fp8kv_choice {
    const char *name;
    const char *const *names;
    int count;
    const char *(*entry)(int i);
    int (*keep)(int i);
    const char *(*default_name)(void);
    const char *const *notes;
};

static const struct fp8kv_choice choices[] = {
    {"format", NULL, 0, format_entry, NULL, default_format, NULL},
    {"profile", NULL, 0, profile_entry, NULL, default_profile, NULL},
    {"overflow", fp8kv_overflow_names, FP8KV_OVERFLOW_COUNT, NULL, NULL, default_overflow, NULL},
    {"inf", fp8kv_inf_names, FP8KV_INF_COUNT, NULL, NULL, default_inf, NULL},
    {"satfinite_inf", fp8kv_inf_names, FP8KV_INF_COUNT, NULL, satfinite_inf, default_inf, NULL},
    {"inf_format", NULL, 0, format_entry, inf_format, NULL, NULL},
    {"model", fp8kv_model_names, FP8KV_MODEL_COUNT, NULL, NULL, default_model, fp8kv_model_notes},
    {"kernel_model", fp8kv_model_names, FP8KV_MODEL_COUNT, NULL, kernel_model, default_model,
     fp8kv_model_notes},
    {"dtype", fp8kv_dtype_names, FP8KV_DTYPE_COUNT, NULL, NULL, default_dtype, NULL},
    {"read_model", fp8kv_read_model_names, FP8KV_READ_MODEL_COUNT, NULL, NULL, default_read_model,
     NULL},
    {"nan_check", fp8kv_nan_check_names, FP8KV_NAN_CHECK_COUNT, NULL, NULL, default_nan_check,
     fp8kv_nan_check_notes},
    {"layout", fp8kv_kv_layout_names, FP8KV_KV_LAYOUT_COUNT, NULL, NULL, NULL, NULL},
    {"packing", fp8kv_kv_packing_names, FP8KV_KV_PACKING_COUNT, NULL, NULL, NULL, NULL},
    {"scale_granularity", fp8kv_scale_granularity_names, FP8KV_SCALE_GRANULARITY_COUNT, NULL, NULL,
     NULL, NULL},
    {"class", fp8kv_class_names, FP8KV_CLASS_COUNT, NULL, NULL, NULL, NULL},
    {"block_format", NULL, 0, block_format_entry, NULL, NULL, NULL},
    {"intq_format", NULL, 0, intq_format_entry, NULL, NULL, NULL},
    {"block_rule", fp8kv_block_rule_names, FP8KV_BLOCK_RULE_COUNT, NULL, NULL, NULL, NULL},
    {"mx_rule", fp8kv_block_rule_names, FP8KV_BLOCK_RULE_COUNT, NULL, mx_rule, default_mx_rule,
     NULL},
    {"nvfp4_rule", fp8kv_block_rule_names, FP8KV_BLOCK_RULE_COUNT, NULL, nvfp4_rule,
     default_nvfp4_rule, NULL},
    {"block_model", fp8kv_block_model_names, FP8KV_BLOCK_MODEL_COUNT, NULL, NULL,
     default_block_model, NULL},
    {"arithmetic", fp8kv_attention_presets, FP8KV_ATTN_PRESET_COUNT, NULL, NULL, default_arithmetic,
     NULL},
};
#define CHOICE_COUNT ((int)(sizeof choices / sizeof choices[0]))

/* Entry k of c's table (kept or not), NULL past its last. */
static const char *table_entry(const struct fp8kv_choice *c, int k)
{
    if (k < 0)
        return NULL;
    if (c->entry)
        return c->entry(k);
    return k < c->count ? c->names[k] : NULL;
}

/* Whether c keeps entry k of its table as one of its names. */
static int kept(const struct fp8kv_choice *c, int k)
{
    return !c->keep || c->keep(k);
}

/* The table entry of c's name i, -1 for none. */
static int entry_of(const struct fp8kv_choice *c, int i)
{
    int n = 0;
    for (int k = 0; c && i >= 0 && table_entry(c, k); k++)
        if (kept(c, k) && n++ == i)
            return k;
    return -1;
}

const struct fp8kv_choice *fp8kv_choice_at(int i)
{
    return i >= 0 && i < CHOICE_COUNT ? &choices[i] : NULL;
}

const struct fp8kv_choice *fp8kv_choice_named(const char *name)
{
    for (int i = 0; name && i < CHOICE_COUNT; i++)
        if (strcmp(choices[i].name, name) == 0)
            return &choices[i];
    return NULL;
}

const char *fp8kv_choice_name(const struct fp8kv_choice *c)
{
    return c ? c->name : NULL;
}

int fp8kv_choice_name_count(const struct fp8kv_choice *c)
{
    int n = 0;
    for (int k = 0; c && table_entry(c, k); k++)
        n += kept(c, k);
    return n;
}

const char *fp8kv_choice_name_at(const struct fp8kv_choice *c, int i)
{
    const int k = entry_of(c, i);
    return k < 0 ? NULL : table_entry(c, k);
}

const char *fp8kv_choice_default(const struct fp8kv_choice *c)
{
    return c && c->default_name ? c->default_name() : NULL;
}

int fp8kv_choice_has_notes(const struct fp8kv_choice *c)
{
    return c && c->notes;
}

const char *fp8kv_choice_note(const struct fp8kv_choice *c, const char *name)
{
    const char *e;
    for (int k = 0; fp8kv_choice_has_notes(c) && name && (e = table_entry(c, k)); k++)
        if (kept(c, k) && strcmp(e, name) == 0)
            return c->notes[k];
    return NULL;
}
