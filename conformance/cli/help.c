/* help.c — help texts with their name lists filled from the tables: a help text says {formats},
 * {kernel_models:or}, {default_profile} ... where it lists names or a default, and
 * fp8kv_cli_print_help prints it with each of them taken from fp8kv/spec.h, fp8kv/block.h and
 * fp8kv/checks.h at run time, so no help text restates a table. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "fp8kv/block.h"

#define MAX_NAMES 64

/* ---- the lists ------------------------------------------------------------------------------ */

static int formats(const char **names)
{
    for (int i = 0; i < FP8KV_FORMAT_COUNT; i++)
        names[i] = fp8kv_formats[i].name;
    return FP8KV_FORMAT_COUNT;
}

static int table(const char *const *table, int count, const char **names)
{
    for (int i = 0; i < count; i++)
        names[i] = table[i];
    return count;
}

static int overflows(const char **names)
{
    return table(fp8kv_overflow_names, FP8KV_OVERFLOW_COUNT, names);
}

/* The Inf policies a choice of --inf means: those of the satfinite profiles (under the other
 * overflow rules the policy follows the rule). */
static int satfinite_infs(const char **names)
{
    int n = 0;
    for (int i = 0; i < FP8KV_INF_COUNT; i++)
        for (int k = 0; k < fp8kv_profile_count; k++)
            if (fp8kv_profiles[k].overflow == FP8KV_OVERFLOW_SATFINITE &&
                (int)fp8kv_profiles[k].inf == i) {
                names[n++] = fp8kv_inf_names[i];
                break;
            }
    return n;
}

static int models(const char **names)
{
    return table(fp8kv_model_names, FP8KV_MODEL_COUNT, names);
}

static int kernel_models(const char **names)
{
    return fp8kv_kernel_models(names);
}

static int dtypes(const char **names)
{
    return table(fp8kv_dtype_names, FP8KV_DTYPE_COUNT, names);
}

static int read_models(const char **names)
{
    return table(fp8kv_read_model_names, FP8KV_READ_MODEL_COUNT, names);
}

static int nan_checks(const char **names)
{
    return table(fp8kv_nan_check_names, FP8KV_NAN_CHECK_COUNT, names);
}

static int profiles(const char **names)
{
    int n = 0;
    for (int i = 0; i < fp8kv_profile_count && n < MAX_NAMES; i++)
        names[n++] = fp8kv_profiles[i].name;
    return n;
}

static int block_formats(const char **names)
{
    for (int i = 0; i < FP8KV_BLOCK_FORMAT_COUNT; i++)
        names[i] = fp8kv_block_formats[i].name;
    return FP8KV_BLOCK_FORMAT_COUNT;
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

static int mx_rules(const char **names)
{
    return fp8kv_block_rules_of(of_kind(FP8KV_SCALE_E8M0), names);
}

static int nvfp4_rules(const char **names)
{
    return fp8kv_block_rules_of(of_kind(FP8KV_SCALE_UE4M3), names);
}

static int block_models(const char **names)
{
    return table(fp8kv_block_model_names, FP8KV_BLOCK_MODEL_COUNT, names);
}

/* ---- the defaults ---------------------------------------------------------------------------- */

static const char *default_format(void)
{
    return fp8kv_formats[FP8KV_DEFAULT_FORMAT].name;
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
static const char *default_profile(void)
{
    return fp8kv_default_profile()->name;
}
static const char *default_block_model(void)
{
    return fp8kv_block_model_names[FP8KV_BLOCK_DEFAULT_MODEL];
}
static const char *default_mx_rule(void)
{
    return fp8kv_block_rule_names[of_kind(FP8KV_SCALE_E8M0)->default_rule];
}
static const char *default_nvfp4_rule(void)
{
    return fp8kv_block_rule_names[of_kind(FP8KV_SCALE_UE4M3)->default_rule];
}

/* A list a help text may name: its names, the default among them (NULL: none), and the short
 * note of each name that the style notes prints (NULL: none). */
struct help_list {
    const char *name;
    int (*names)(const char **names);
    const char *(*default_name)(void);
    const char *(*note)(const char *name);
};

static const char *model_note(const char *name)
{
    const int m = fp8kv_name_index(fp8kv_model_names, FP8KV_MODEL_COUNT, name);
    return m < 0 ? NULL : fp8kv_model_notes[m];
}

static const char *nan_check_note(const char *name)
{
    const int c = fp8kv_name_index(fp8kv_nan_check_names, FP8KV_NAN_CHECK_COUNT, name);
    return c < 0 ? NULL : fp8kv_nan_check_notes[c];
}

static const struct help_list lists[] = {
    {"formats", formats, default_format, NULL},
    {"overflows", overflows, default_overflow, NULL},
    {"satfinite_infs", satfinite_infs, default_inf, NULL},
    {"models", models, default_model, model_note},
    {"kernel_models", kernel_models, default_model, model_note},
    {"dtypes", dtypes, default_dtype, NULL},
    {"read_models", read_models, default_read_model, NULL},
    {"nan_checks", nan_checks, default_nan_check, nan_check_note},
    {"profiles", profiles, default_profile, NULL},
    {"block_formats", block_formats, NULL, NULL},
    {"mx_rules", mx_rules, default_mx_rule, NULL},
    {"nvfp4_rules", nvfp4_rules, default_nvfp4_rule, NULL},
    {"block_models", block_models, default_block_model, NULL},
};
#define LIST_COUNT ((int)(sizeof lists / sizeof lists[0]))

/* The placeholders {default_<what>}: the default of the list named in the second column. */
static const struct {
    const char *placeholder, *list;
} defaults[] = {
    {"default_format", "formats"},
    {"default_overflow", "overflows"},
    {"default_inf", "satfinite_infs"},
    {"default_model", "models"},
    {"default_dtype", "dtypes"},
    {"default_read_model", "read_models"},
    {"default_nan_check", "nan_checks"},
    {"default_profile", "profiles"},
    {"default_block_model", "block_models"},
    {"default_mx_rule", "mx_rules"},
    {"default_nvfp4_rule", "nvfp4_rules"},
};

static const struct help_list *list_named(const char *name, size_t len)
{
    for (int i = 0; i < LIST_COUNT; i++)
        if (strlen(lists[i].name) == len && strncmp(lists[i].name, name, len) == 0)
            return &lists[i];
    return NULL;
}

/* ---- expansion ------------------------------------------------------------------------------- */

/* The styles of {list:style}: how the names are joined, whether the default is marked
 * (" (default)" after it, "; default" inside its note's parentheses) and whether each name's
 * note follows it in parentheses. */
static const struct {
    const char *style, *sep, *last_sep;
    int mark_default, notes;
} styles[] = {
    {"", "|", NULL, 0, 0},
    {"bar", " | ", NULL, 0, 0},
    {"comma", ", ", NULL, 0, 0},
    {"or", ", ", " or ", 0, 0},
    {"or_default", ", ", " or ", 1, 0},
    {"comma_default", ", ", NULL, 1, 0},
    {"notes", ", ", " or ", 0, 1},
    {"notes_default", ", ", " or ", 1, 1},
};

/* expand: the text of placeholder p (len bytes, the braces excluded) into buf; 0, or -1 when it
 * is none (then it is printed as it stands, which t_names catches). */
static int expand(const char *p, size_t len, char *buf, size_t size)
{
    for (size_t i = 0; i < sizeof defaults / sizeof defaults[0]; i++)
        if (strlen(defaults[i].placeholder) == len &&
            strncmp(defaults[i].placeholder, p, len) == 0) {
            const struct help_list *l = list_named(defaults[i].list, strlen(defaults[i].list));
            snprintf(buf, size, "%s", l && l->default_name ? l->default_name() : "?");
            return 0;
        }
    const char *colon = memchr(p, ':', len);
    const size_t name_len = colon ? (size_t)(colon - p) : len;
    const char *style = colon ? colon + 1 : p + len;
    const size_t style_len = colon ? len - name_len - 1 : 0;
    const struct help_list *l = list_named(p, name_len);
    int s = -1;
    for (int i = 0; i < (int)(sizeof styles / sizeof styles[0]); i++)
        if (strlen(styles[i].style) == style_len && strncmp(styles[i].style, style, style_len) == 0)
            s = i;
    if (!l || s < 0 || (styles[s].notes && !l->note))
        return -1;
    const char *names[MAX_NAMES];
    const int n = l->names(names);
    const char *def = l->default_name ? l->default_name() : NULL;
    char items[MAX_NAMES][96];
    const char *shown[MAX_NAMES];
    for (int i = 0; i < n; i++) {
        const char *note = styles[s].notes ? l->note(names[i]) : NULL;
        const int is_default = styles[s].mark_default && def && strcmp(def, names[i]) == 0;
        snprintf(items[i], sizeof items[i], "%s%s%s%s%s%s", names[i],
                 note || is_default ? " (" : "", note ? note : "", note && is_default ? "; " : "",
                 is_default ? "default" : "", note || is_default ? ")" : "");
        shown[i] = items[i];
    }
    fp8kv_names_list(shown, n, styles[s].sep, styles[s].last_sep, buf, size);
    return 0;
}

void fp8kv_cli_print_help(const char *text, FILE *out)
{
    for (const char *t = text; *t;) {
        const char *open = strchr(t, '{');
        const char *close = open ? strchr(open, '}') : NULL;
        if (!close) {
            fputs(t, out);
            return;
        }
        fwrite(t, 1, (size_t)(open - t), out);
        char buf[1024];
        if (expand(open + 1, (size_t)(close - open - 1), buf, sizeof buf) == 0)
            fputs(buf, out);
        else
            fwrite(open, 1, (size_t)(close + 1 - open), out);
        t = close + 1;
    }
}
