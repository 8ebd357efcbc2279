/* report/html.h — what the two halves of the HTML report share (internal to the judge
 * library): report/html.c writes the pages, report/svg.c their pictures. */
#ifndef FP8KV_REPORT_HTML_H
#define FP8KV_REPORT_HTML_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/model.h"

/* Distinct strings in order of first appearance (pointers into the report, not copies). */
struct distinct {
    const char **v;
    size_t n;
};

/* The index of the pair (a, b) in s (b may be NULL), added when new; s->v holds 2 per entry. */
static inline size_t distinct_add(struct distinct *s, const char *a, const char *b)
{
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->v[2 * i], a) == 0 && (!b || strcmp(s->v[2 * i + 1], b) == 0))
            return i;
    s->v[2 * s->n] = a;
    s->v[2 * s->n + 1] = b;
    return s->n++;
}

/* Room for capacity entries in s (s->v to be freed); 0, or -1 when out of memory. */
static inline int distinct_init(struct distinct *s, size_t capacity)
{
    s->n = 0;
    s->v = calloc(2 * capacity + 2, sizeof *s->v);
    return s->v ? 0 : -1;
}

/* fp8kv_html_pictures: the report page's "Pictures" section (inline SVG): the decode table of
 * every format, mismatches per input class per subject, NMSE against its thresholds, the
 * quantization error. */
void fp8kv_html_pictures(FILE *f, const struct fp8kv_report *r);

#endif
