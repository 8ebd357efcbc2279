/* report/svg.h — the pictures of the HTML report (internal to the judge library): report/svg.c
 * draws them, report/html.c places them in the page. */
#ifndef FP8KV_REPORT_SVG_H
#define FP8KV_REPORT_SVG_H

#include <stdio.h>

#include "report/model.h"

/* fp8kv_svg_pictures: the report page's "Pictures" section (inline SVG): the decode table of
 * every format, mismatches per input class per subject, NMSE against its thresholds, the
 * quantization error. */
void fp8kv_svg_pictures(FILE *f, const struct fp8kv_report *r);

#endif
