/* fp8kv/choices.h — the registry of the named choices: which named lists exist, and for each its
 * names, its default and the note of each name, the one place that says so.
 *
 * A choice is named in the singular ("format", "profile", "kernel_model", "mx_rule", ...). Its
 * names are the entries of one of core's name tables (fp8kv/spec.h, fp8kv/block.h), in table
 * order, all of them or the ones a rule keeps: "kernel_model" is the models
 * fp8kv_is_kernel_model accepts, "satfinite_inf" the Inf policies of the satfinite profiles,
 * "inf_format" the formats that have a profile of overflow rule inf, "mx_rule" and
 * "nvfp4_rule" the block rules of the MX formats and of nvfp4. Its default is
 * core's (FP8KV_DEFAULT_*, fp8kv_default_profile, FP8KV_BLOCK_DEFAULT_MODEL, a block format's
 * default_rule). The help texts (cli/help.c: {formats}, {default_format} ...) and the Python
 * package (fp8kv_py_name, fp8kv_py_default) read their lists and defaults from here.
 *
 * Every function takes NULL for a choice and then answers as for a choice with no names.
 */
#ifndef FP8KV_CHOICES_H
#define FP8KV_CHOICES_H

#ifdef __cplusplus
extern "C" {
#endif

struct fp8kv_choice; /* one named choice (choices.c) */

/* fp8kv_choice_at: choice i of the registry, in its order; NULL for i past the last or below 0.
 * Walking i from 0 until NULL visits every choice once. */
const struct fp8kv_choice *fp8kv_choice_at(int i);

/* fp8kv_choice_named: the choice called name ("format", "kernel_model", ...); NULL for a name
 * that is none (and for NULL). */
const struct fp8kv_choice *fp8kv_choice_named(const char *name);

/* fp8kv_choice_name: what c is called, as fp8kv_choice_named takes it. */
const char *fp8kv_choice_name(const struct fp8kv_choice *c);

/* fp8kv_choice_name_count: how many names c has (at least 1 for a choice of the registry). */
int fp8kv_choice_name_count(const struct fp8kv_choice *c);

/* fp8kv_choice_name_at: name i of c, in table order (the enum's numbers; a choice that keeps
 * some of its table's entries keeps their order); NULL for i out of [0, name count). */
const char *fp8kv_choice_name_at(const struct fp8kv_choice *c, int i);

/* fp8kv_choice_default: the name of c's default, one of its names; NULL when c has none
 * (layout, scale_granularity, inf_format, block_format, block_rule, class: each block format has
 * its own default rule, see mx_rule and nvfp4_rule). */
const char *fp8kv_choice_default(const struct fp8kv_choice *c);

/* fp8kv_choice_has_notes: whether c's names have notes (model, kernel_model, nan_check). */
int fp8kv_choice_has_notes(const struct fp8kv_choice *c);

/* fp8kv_choice_note: the short note of name, one of c's names ("x / s" for f32_div); NULL when
 * c has no notes or name is none of its names. */
const char *fp8kv_choice_note(const struct fp8kv_choice *c, const char *name);

#ifdef __cplusplus
}
#endif
#endif
