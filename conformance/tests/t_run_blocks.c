/* t_run_blocks.c — `fp8kv run`'s block rows (fp8kv_run_blocks): the CPU block codec passes
 * every row it runs, and the rows it cannot run are "not run" with the reason, never a pass
 * (no oracle: only block-vectors judged); a planted faulty codec (the example block plugin
 * with ties away from zero, examples/engine_block) as the target's one block subject makes
 * the block-vectors and block-sweep rows fail, in report.json and junit.xml, with the input
 * the fault was planted on. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fp8kv/block_judge.h"
#include "fp8kv/block_plugin_host.h"
#include "fp8kv/diag.h"
#include "fp8kv/fileio.h"
#include "fp8kv/run.h"
#include "testutil.h"

static const struct fp8kv_run_options options = {.vectors_dir = FP8KV_SOURCE_DIR "/vectors",
                                                 .profile = "mxfp4",
                                                 .threads = 2,
                                                 .block_oracle = &fp8kv_block_oracle_judges};

/* The CPU target with its block codec alone in its table (the block rows alone). */
static struct fp8kv_target cpu_target(void)
{
    struct fp8kv_target t;
    cr_assert_eq(fp8kv_target_open(FP8KV_TARGET_CPU, 0, &t), 0);
    const struct fp8kv_subject *block =
        fp8kv_subject_first(t.subjects, t.subject_count, FP8KV_CAP_BLOCK);
    cr_assert_not_null(block, "the CPU target has a block codec");
    t.subjects = block;
    t.subject_count = 1;
    return t;
}

static const struct fp8kv_check *find_row(const struct fp8kv_results *r, const char *name,
                                          const char *detail_start)
{
    for (size_t i = 0; i < r->count; i++)
        if (strcmp(r->items[i].name, name) == 0 &&
            strncmp(r->items[i].detail, detail_start, strlen(detail_start)) == 0)
            return &r->items[i];
    return NULL;
}

Test(run_blocks, the_cpu_codec_passes_and_what_is_not_run_says_why, .timeout = 120)
{
    const struct fp8kv_target t = cpu_target();
    struct fp8kv_results r = {0};
    cr_assert_eq(fp8kv_run(&options, &t, &r), 0, "%s", fp8kv_last_error());
    cr_assert_eq(r.count, 3 * 2 * 4, "mxfp4: 3 rules x 2 models x 4 checks");
    size_t not_run = 0;
    for (size_t i = 0; i < r.count; i++) {
        const struct fp8kv_check *c = &r.items[i];
        cr_expect_str_eq(c->subject, "block-codec");
        cr_expect_str_eq(c->profile, "mxfp4");
        if (!c->gated) {
            not_run++;
            cr_expect(strstr(c->detail, "not run: ") && !c->passed, "%s", c->detail);
            continue;
        }
        cr_expect(c->passed && c->cases > 0, "%s %s: %llu wrong", c->name, c->detail,
                  (unsigned long long)c->mismatches);
    }
    cr_expect_eq(not_run, 5, "the sweep runs under floor exact only on the CPU");
    const struct fp8kv_check *sweep = find_row(&r, "block-sweep", "mxfp4 rule floor model exact");
    cr_assert_not_null(sweep);
    cr_expect(sweep->gated && sweep->cases > 0x01000000u, "%s", sweep->detail);
    /* the printed profile column names format, rule and model: each combination's own four rows */
    char label[128];
    fp8kv_check_profile_label(sweep, label, sizeof label);
    cr_expect_str_eq(label, "mxfp4 floor exact");
    for (int rule = 0; rule < FP8KV_BLOCK_RULE_COUNT; rule++)
        for (int model = 0; model < FP8KV_BLOCK_MODEL_COUNT; model++) {
            if (!fp8kv_block_takes_rule(fp8kv_block_format_by_name("mxfp4"),
                                        (enum fp8kv_block_rule)rule))
                continue;
            char want[128];
            snprintf(want, sizeof want, "mxfp4 %s %s", fp8kv_block_rule_names[rule],
                     fp8kv_block_model_names[model]);
            int rows = 0;
            for (size_t i = 0; i < r.count; i++) {
                fp8kv_check_profile_label(&r.items[i], label, sizeof label);
                rows += strcmp(label, want) == 0;
            }
            cr_expect_eq(rows, 4, "%s", want);
        }
    fp8kv_results_free(&r);

    /* a build without the oracle: block-vectors judged, the others not run, none passed */
    struct fp8kv_run_options o = options;
    o.block_oracle = NULL;
    cr_assert_eq(fp8kv_run(&o, &t, &r), 0, "%s", fp8kv_last_error());
    for (size_t i = 0; i < r.count; i++) {
        const struct fp8kv_check *c = &r.items[i];
        if (strcmp(c->name, "block-vectors") == 0)
            cr_expect(c->gated && c->passed, "%s", c->detail);
        else
            cr_expect(!c->gated && !c->passed && strstr(c->detail, "without the oracle"), "%s: %s",
                      c->name, c->detail);
    }
    fp8kv_results_free(&r);
}

/* ---- a planted fault: the example plugin, ties away, as the target's block codec ---- */

static char *read_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s", path);
    static char text[1 << 20];
    const size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = '\0';
    fclose(f);
    return text;
}

Test(run_blocks, a_planted_fault_fails_the_block_rows_in_every_report, .timeout = 120)
{
    struct fp8kv_target t = cpu_target();
    struct fp8kv_block_plugin *plugin;
    cr_assert_eq(fp8kv_block_plugin_open(FP8KV_PLUGIN_DIR "/fp8kv_block_plugin_mxfp4_ties_away.so",
                                         2, 30.0, &plugin),
                 0, "%s", fp8kv_last_error());
    struct fp8kv_subject planted = *fp8kv_block_plugin_subject(plugin);
    planted.name = "planted"; /* the target's table: the plugin alone */
    t.subjects = &planted;
    t.subject_count = 1;
    struct fp8kv_results r = {0};
    cr_assert_eq(fp8kv_run(&options, &t, &r), 0, "%s", fp8kv_last_error());
    fp8kv_block_plugin_close(plugin);
    cr_assert_eq(r.count, 4, "the plugin claims mxfp4 floor exact only");
    cr_expect_eq(fp8kv_results_passed(&r), 0);
    const struct fp8kv_check *vec = find_row(&r, "block-vectors", "mxfp4 rule floor model exact");
    const struct fp8kv_check *sweep = find_row(&r, "block-sweep", "mxfp4 rule floor model exact");
    cr_assert(vec && sweep);
    cr_expect(vec->gated && !vec->passed && vec->mismatches > 0);
    cr_expect(sweep->gated && !sweep->passed && sweep->mismatches > 0);
    /* 0.25 at scale 1 ties 0 and 0.5 (even: 0); 0x00a00000 at X = -126 is the tie 1 | 1.5 */
    int vec_line = 0, sweep_line = 0;
    for (int i = 0; i < vec->failure_lines; i++)
        vec_line |=
            strstr(vec->failures[i], "input 0x3e800000 (scale 7f): expected 00 got 01") != NULL;
    for (int i = 0; i < sweep->failure_lines; i++)
        sweep_line |=
            strstr(sweep->failures[i], "input 0x00a00000: element expected 02 got 03") != NULL;
    cr_expect(vec_line, "%s", vec->failure_lines ? vec->failures[0] : "no lines");
    cr_expect(sweep_line, "%s", sweep->failure_lines ? sweep->failures[0] : "no lines");

    /* the report carries them: report.json nonconformant, junit.xml failures per family */
    char dir[512];
    snprintf(dir, sizeof dir, "%s/run_blocks_XXXXXX", FP8KV_TEST_TMP);
    cr_assert_not_null(mkdtemp(dir));
    struct fp8kv_report_meta m = {
        .target = &t.info, .vectors_dir = options.vectors_dir, .profiles = "mxfp4", .seconds = 1.0};
    cr_assert_eq(fp8kv_report_write(dir, &m, &r), 0, "%s", fp8kv_last_error());
    char path[700];
    snprintf(path, sizeof path, "%s/%s/report.json", dir, t.info.target);
    json_error_t err;
    json_t *root = json_load_file(path, 0, &err);
    cr_assert_not_null(root, "%s", err.text);
    cr_expect_str_eq(json_string_value(json_object_get(root, "verdict")), "nonconformant");
    json_decref(root);
    snprintf(path, sizeof path, "%s/%s/junit.xml", dir, t.info.target);
    const char *xml = read_text(path);
    char want[160];
    snprintf(want, sizeof want,
             "classname=\"fp8kv.%s.block-sweep\" name=\"block-sweep planted mxfp4", t.info.target);
    cr_expect(strstr(xml, want), "%s", xml);
    cr_expect(strstr(xml, "<failure message=\"inputs under a fixed block"), "%s", xml);
    snprintf(path, sizeof path, "%s/%s/report.html", dir, t.info.target);
    cr_expect(strstr(read_text(path), "block-vectors"));
    cr_assert_eq(fp8kv_remove_tree(dir), 0, "%s", fp8kv_last_error());
    fp8kv_results_free(&r);
}

/* A row without a block combination (no rule and model) keeps its profile as the printed
 * column, whatever its detail says. */
Test(run_blocks, other_rows_print_their_profile)
{
    struct fp8kv_check c;
    char label[128];
    fp8kv_check_init(&c, "subject-failed", "block-codec", "mxfp4",
                     "the block codec's call failed (a device call, a crash): no verdict");
    fp8kv_check_profile_label(&c, label, sizeof label);
    cr_expect_str_eq(label, "mxfp4");
    fp8kv_check_init(&c, "sweep-f32", "bits", "e4m3fn_satfinite",
                     "e4m3fn_satfinite rule floor model exact: not a block row");
    fp8kv_check_profile_label(&c, label, sizeof label);
    cr_expect_str_eq(label, "e4m3fn_satfinite");
    snprintf(c.rule, sizeof c.rule, "rceil");
    snprintf(c.model, sizeof c.model, "f32");
    fp8kv_check_profile_label(&c, label, sizeof label);
    cr_expect_str_eq(label, "e4m3fn_satfinite rceil f32");
}
