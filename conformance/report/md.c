/* report/md.c — report.md and index.md, for people reading the repository. */
#include <stdlib.h>
#include <string.h>

#include "fp8kv/run.h"
#include "report/model.h"

char *fp8kv_report_markdown(const struct fp8kv_report *r)
{
    char *text = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&text, &size);
    if (!f)
        return NULL;
    const struct fp8kv_target_info *t = &r->target;
    fprintf(f, "# fp8kv conformance report: %s\n\n", t->target);
    fprintf(f, "**Verdict: %s**", r->verdict);
    if (!t->executed)
        fprintf(f, " (%s)", t->not_run_reason);
    fprintf(f, "\n\n| | |\n|---|---|\n");
    fprintf(f, "| device | %s |\n| runtime | %s |\n| compiler | %s |\n", t->device, t->runtime,
            t->compiler);
    if (t->flags[0])
        fprintf(f, "| flags | `%s` |\n", t->flags);
    fprintf(f, "| profiles | %s |\n", r->profiles);
    if (t->compiled[0])
        fprintf(f, "| compiled | %s |\n", t->compiled);
    if (t->assembly[0])
        fprintf(f, "| assembly | %s |\n", t->assembly);
    fprintf(f, "| vectors | `%s`, MANIFEST.json sha256 `%s`, %s |\n", r->vectors_dir,
            r->manifest_sha256,
            r->vectors_verified ? "verified against MANIFEST.json and SHA256SUMS before the checks"
                                : "not verified in this run");
    fprintf(f, "| generator | %s |\n", r->generator);
    if (r->commit[0])
        fprintf(f, "| commit | %s |\n", r->commit);
    if (r->date[0])
        fprintf(f, "| date | %s |\n", r->date);
    fprintf(f, "| checks | %llu passed, %llu failed, %llu reported (not gated) |\n", r->passed,
            r->failed, r->reported);
    fprintf(f, "| wall time | %.1f s |\n\n", r->seconds);
    if (!t->executed) {
        fprintf(f, "Nothing was executed on this target: no check passed or failed.\n");
        fclose(f);
        return text;
    }
    fprintf(f, "## Checks\n\n| result | check | subject | profile | cases | mismatches | "
               "NMSE (threshold) | time |\n|---|---|---|---|---:|---:|---|---:|\n");
    for (size_t i = 0; i < r->checks.count; i++) {
        const struct fp8kv_check *c = &r->checks.items[i];
        static const char *const outcome[] = {"info", "pass", "**FAIL**"};
        char profile[128];
        fp8kv_check_profile_label(c, profile, sizeof profile);
        fprintf(f, "| %s | %s | %s | %s | %llu | %llu | ", outcome[fp8kv_check_outcome(c)], c->name,
                c->subject, profile, (unsigned long long)c->cases,
                (unsigned long long)c->mismatches);
        if (c->has_nmse && c->gated)
            fprintf(f, "%.3g (≤ %.3g)", c->nmse, c->threshold);
        else if (c->has_nmse)
            fprintf(f, "%.3g (reported)", c->nmse);
        fprintf(f, " | %.2f s |\n", c->seconds);
    }
    /* the failures of gated checks, then the differences reported without gating (e.g. a
     * vendor conversion's NaN sign under NaN check strict, when it claims NaN check class) */
    for (int gated = 1; gated >= 0; gated--) {
        int any = 0;
        for (size_t i = 0; i < r->checks.count; i++) {
            const struct fp8kv_check *c = &r->checks.items[i];
            if (c->passed || c->gated != gated)
                continue;
            if (!any++)
                fprintf(f, gated ? "\n## Failures\n" : "\n## Differences reported, not gated\n");
            char profile[128];
            fp8kv_check_profile_label(c, profile, sizeof profile);
            fprintf(f, "\n### %s %s %s\n\n%s\n\n", c->name, c->subject, profile, c->detail);
            if (c->has_classes) {
                for (int k = 0; k < FP8KV_CLASS_COUNT; k++)
                    if (c->class_mismatches[k])
                        fprintf(f, "- %s: %llu mismatches\n", fp8kv_class_names[k],
                                (unsigned long long)c->class_mismatches[k]);
                fputc('\n', f);
            }
            fprintf(f, "```\n");
            for (int k = 0; k < c->failure_lines; k++)
                fprintf(f, "%s\n", c->failures[k]);
            fprintf(f, "```\n");
        }
    }
    fclose(f);
    return text;
}

char *fp8kv_index_markdown(const struct fp8kv_index_entry *e, size_t n)
{
    char *text = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&text, &size);
    if (!f)
        return NULL;
    fprintf(f, "# fp8kv reports\n\n| target | verdict | checks | device |\n|---|---|---:|---|\n");
    for (size_t i = 0; i < n; i++)
        if (e[i].is_target)
            fprintf(f, "| [%s](%s/report.md) | %s | %zu | %s |\n", e[i].name, e[i].name,
                    e[i].report.verdict, e[i].report.checks.count, e[i].report.target.device);
    int others = 0; /* folders with a report of another kind (scripts/peers) */
    for (size_t i = 0; i < n; i++)
        if (!e[i].is_target)
            fprintf(f, "%s- [%s](%s/report.md)\n", others++ ? "" : "\nOther reports:\n\n",
                    e[i].name, e[i].name);
    fclose(f);
    return text;
}
