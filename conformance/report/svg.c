/* report/svg.c — the pictures of report.html (inline SVG, nothing loaded from elsewhere): the
 * decode table, mismatches per input class, NMSE against thresholds, the quantization error. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report/svg.h"

/* The fill colour of each state in the pictures. */
static const char *const state_colour[FP8KV_STATE_COUNT] = {"#c62828", "#2e7d32", "#1565c0",
                                                            "#9e9e9e"};

static void put(FILE *f, const char *s)
{
    fp8kv_put_escaped(f, s);
}

/* ---- pictures ----------------------------------------------------------------------------------
 */

/* x of v on a log10 axis from 10^lo to 10^hi over [x0, x0 + w], clamped to it. */
static double log_x(double v, int lo, int hi, double x0, double w)
{
    double e = v > 0 ? log10(v) : lo;
    e = e < lo ? lo : e > hi ? hi : e;
    return x0 + w * (e - lo) / (hi - lo);
}

/* The ticks and labels of that axis at y, every `step` decades. */
static void put_log_axis(FILE *f, int lo, int hi, int step, double x0, double w, double y)
{
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#555\"/>", x0, y,
            x0 + w, y);
    for (int e = lo; e <= hi; e += step) {
        const double x = log_x(pow(10, e), lo, hi, x0, w);
        fprintf(f,
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#555\"/>"
                "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\" text-anchor=\"middle\">1e%d</text>",
                x, y, x, y + 4, x, y + 15, e);
    }
    fputc('\n', f);
}

static void svg_begin(FILE *f, int width, int height, const char *title)
{
    fprintf(f,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
            "viewBox=\"0 0 %d %d\" role=\"img\" font-family=\"sans-serif\"><title>",
            width, height, width, height);
    put(f, title);
    fprintf(f, "</title>\n");
}

/* What a code of a format is, for the decode table's colours (Inf last: only formats with Inf
 * show it in the legend). */
enum code_kind {
    CODE_ZERO,
    CODE_SUBNORMAL,
    CODE_NORMAL,
    CODE_MAX,
    CODE_NAN,
    CODE_INF,
    CODE_KIND_COUNT
};
static const char *const code_kind_names[CODE_KIND_COUNT] = {"zero",       "subnormal", "normal",
                                                             "max finite", "NaN",       "Inf"};
static const char *const code_kind_colour[CODE_KIND_COUNT] = {"#fff9c4", "#b3e5fc", "#c8e6c9",
                                                              "#ffe0b2", "#e1bee7", "#ffcdd2"};

static enum code_kind code_kind(const struct fp8kv_format *fmt, int q)
{
    const int magnitude = q & 0x7F, exponent = magnitude >> fmt->man_bits;
    if (fp8kv_is_nan_code(fmt, (uint8_t)q))
        return CODE_NAN;
    if (fp8kv_is_inf_code(fmt, (uint8_t)q))
        return CODE_INF;
    if (magnitude == 0)
        return CODE_ZERO;
    if (magnitude == fmt->max_code)
        return CODE_MAX;
    return exponent == 0 ? CODE_SUBNORMAL : CODE_NORMAL;
}

/* The value of a code of a format (NaN for a NaN code, ±Inf for an Inf code). */
static double code_value(const struct fp8kv_format *fmt, int q)
{
    const int magnitude = q & 0x7F, exponent = magnitude >> fmt->man_bits;
    const int mantissa = magnitude & ((1 << fmt->man_bits) - 1);
    if (fp8kv_is_nan_code(fmt, (uint8_t)q))
        return NAN;
    if (fp8kv_is_inf_code(fmt, (uint8_t)q))
        return q & 0x80 ? -INFINITY : INFINITY;
    const double v = exponent == 0 ? ldexp(mantissa, 1 - fmt->bias - fmt->man_bits)
                                   : ldexp(mantissa + (1 << fmt->man_bits),
                                           exponent - fmt->bias - fmt->man_bits);
    return q & 0x80 ? -v : v;
}

/* The decode checks of format fmt: the 256 codes as a 16 x 16 grid coloured by kind, a code any
 * of them decoded wrongly outlined in red. */
static void put_decode_grid(FILE *f, const struct fp8kv_report *r, const struct fp8kv_format *fmt)
{
    uint8_t wrong[32] = {0};
    size_t checks = 0, failed = 0;
    for (size_t i = 0; i < r->checks.count; i++) {
        const struct fp8kv_check *c = &r->checks.items[i];
        const struct fp8kv_profile *p = fp8kv_profile_by_name(c->profile);
        if (strcmp(c->name, "decode") != 0 || !p || p->format != fmt)
            continue;
        checks++;
        failed += !c->passed;
        for (int k = 0; k < 32; k++)
            wrong[k] |= c->code_mismatched[k];
    }
    if (!checks)
        return;
    const int cell = 26, x0 = 34, y0 = 30, legend = x0 + 16 * cell + 20;
    char title[160];
    snprintf(title, sizeof title, "the 256 codes of %s, coloured by kind", fmt->name);
    fprintf(f, "<figure>\n");
    svg_begin(f, legend + 130, y0 + 16 * cell + 10, title);
    for (int d = 0; d < 16; d++)
        fprintf(f,
                "<text x=\"%d\" y=\"%d\" font-size=\"11\" text-anchor=\"middle\">x%x</text>"
                "<text x=\"%d\" y=\"%d\" font-size=\"11\" text-anchor=\"end\">%xx</text>\n",
                x0 + d * cell + cell / 2, y0 - 8, d, x0 - 6, y0 + d * cell + cell / 2 + 4, d);
    for (int q = 0; q < 256; q++) {
        const enum code_kind kind = code_kind(fmt, q);
        const int x = x0 + (q % 16) * cell, y = y0 + (q / 16) * cell;
        const int bad = wrong[q / 8] >> (q % 8) & 1;
        fprintf(f,
                "<g class=\"code%s\"><title>%02x: %s, %.9g%s</title><rect x=\"%d\" y=\"%d\" "
                "width=\"%d\" height=\"%d\" fill=\"%s\" stroke=\"%s\" stroke-width=\"%d\"/>"
                "<text x=\"%d\" y=\"%d\" font-size=\"9\" text-anchor=\"middle\">%02x</text></g>\n",
                bad ? " mismatch" : "", q, code_kind_names[kind], code_value(fmt, q),
                bad ? ", decoded wrongly" : "", x, y, cell, cell, code_kind_colour[kind],
                bad ? "#c62828" : "#fff", bad ? 3 : 1, x + cell / 2, y + cell / 2 + 3, q);
    }
    const int kinds = fmt->has_inf ? CODE_KIND_COUNT : CODE_INF;
    for (int k = 0; k < kinds; k++)
        fprintf(f,
                "<rect x=\"%d\" y=\"%d\" width=\"14\" height=\"14\" fill=\"%s\"/>"
                "<text x=\"%d\" y=\"%d\" font-size=\"12\">%s</text>\n",
                legend, y0 + k * 20, code_kind_colour[k], legend + 20, y0 + k * 20 + 12,
                code_kind_names[k]);
    fprintf(f,
            "<rect x=\"%d\" y=\"%d\" width=\"14\" height=\"14\" fill=\"#fff\" "
            "stroke=\"#c62828\" stroke-width=\"3\"/><text x=\"%d\" y=\"%d\" "
            "font-size=\"12\">decoded wrongly</text>\n</svg>\n",
            legend, y0 + kinds * 20, legend + 20, y0 + kinds * 20 + 12);
    fprintf(f,
            "<figcaption>The decode table of %s: %zu decode checks, %zu failed.</figcaption>\n"
            "</figure>\n",
            fmt->name, checks, failed);
}

/* Mismatches per input class of one subject's checks with classes: the cases judged (grey) and
 * the mismatches, gated (red) and reported (amber), on a log scale. */
static void put_class_bars(FILE *f, const struct fp8kv_report *r, const char *subject)
{
    uint64_t cases[FP8KV_CLASS_COUNT] = {0}, gated[FP8KV_CLASS_COUNT] = {0},
             reported[FP8KV_CLASS_COUNT] = {0};
    for (size_t i = 0; i < r->checks.count; i++) {
        const struct fp8kv_check *c = &r->checks.items[i];
        if (!c->has_classes || strcmp(c->subject, subject) != 0)
            continue;
        for (int k = 0; k < FP8KV_CLASS_COUNT; k++) {
            cases[k] += c->class_cases[k];
            (c->gated ? gated : reported)[k] += c->class_mismatches[k];
        }
    }
    uint64_t most = 1;
    for (int k = 0; k < FP8KV_CLASS_COUNT; k++) {
        most = cases[k] > most ? cases[k] : most;
        most = gated[k] + reported[k] > most ? gated[k] + reported[k] : most;
    }
    /* at least one decade: counts of 0 or 1 alone would give an axis from 10^0 to 10^0 */
    const int hi = most > 10 ? (int)ceil(log10((double)most)) : 1, x0 = 110, w = 420, row = 30;
    char title[160];
    snprintf(title, sizeof title, "%s: mismatches per input class", subject);
    svg_begin(f, x0 + w + 260, FP8KV_CLASS_COUNT * row + 40, title);
    fprintf(f, "<text x=\"0\" y=\"12\" font-size=\"12\" font-weight=\"bold\">");
    put(f, subject);
    fprintf(f, "</text>\n");
    for (int k = 0; k < FP8KV_CLASS_COUNT; k++) {
        const int y = 20 + k * row;
        const uint64_t wrong = gated[k] + reported[k];
        fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"12\" text-anchor=\"end\">%s</text>", x0 - 6,
                y + 14, fp8kv_class_names[k]);
        if (cases[k])
            fprintf(f,
                    "<rect class=\"cases\" x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"9\" "
                    "fill=\"#bdbdbd\"><title>%llu cases</title></rect>",
                    x0, y + 2, log_x((double)cases[k], 0, hi, x0, w) - x0 + 1,
                    (unsigned long long)cases[k]);
        if (wrong)
            fprintf(f,
                    "<rect class=\"mismatches\" x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"9\" "
                    "fill=\"%s\"><title>%llu mismatches</title></rect>",
                    x0, y + 12, log_x((double)wrong, 0, hi, x0, w) - x0 + 1,
                    gated[k] ? "#c62828" : "#ef6c00", (unsigned long long)wrong);
        fprintf(f,
                "<text x=\"%d\" y=\"%d\" font-size=\"11\">%llu mismatches%s, %llu cases</text>\n",
                x0 + w + 8, y + 14, (unsigned long long)wrong,
                reported[k] && !gated[k] ? " (reported)" : "", (unsigned long long)cases[k]);
    }
    put_log_axis(f, 0, hi, hi > 6 ? 2 : 1, x0, w, 20 + FP8KV_CLASS_COUNT * row);
    fprintf(f, "</svg>\n");
}

/* The NMSE of every gated check with one against its threshold, a row per check name, on a log
 * scale from 1e-20 to 1 (an NMSE of exactly 0 in its own column at the left). */
static void put_nmse_plot(FILE *f, const struct fp8kv_report *r)
{
    struct distinct names;
    if (distinct_init(&names, r->checks.count) != 0)
        return;
    for (size_t i = 0; i < r->checks.count; i++)
        if (r->checks.items[i].has_nmse && r->checks.items[i].gated &&
            !r->checks.items[i].nmse_reported)
            distinct_add(&names, r->checks.items[i].name, NULL);
    const int lo = -20, hi = 0, x0 = 190, w = 460, row = 28, zero_x = x0 - 40;
    if (names.n) {
        fprintf(f, "<h3>NMSE of the read and attention checks against their thresholds</h3>\n");
        svg_begin(f, x0 + w + 40, (int)names.n * row + 50, "NMSE against threshold, log scale");
        fprintf(f, "<text x=\"%d\" y=\"12\" font-size=\"11\" text-anchor=\"middle\">0</text>\n",
                zero_x);
    }
    for (size_t n = 0; n < names.n; n++) {
        const double y = 26 + (double)n * row;
        fprintf(f, "<text x=\"%d\" y=\"%.1f\" font-size=\"12\" text-anchor=\"end\">", zero_x - 14,
                y + 4);
        put(f, names.v[2 * n]);
        fprintf(f, "</text><line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#eee\"/>\n",
                zero_x, y, x0 + w, y);
        for (size_t i = 0; i < r->checks.count; i++) {
            const struct fp8kv_check *c = &r->checks.items[i];
            if (!c->has_nmse || !c->gated || c->nmse_reported ||
                strcmp(c->name, names.v[2 * n]) != 0)
                continue;
            const double tx = c->threshold > 0 ? log_x(c->threshold, lo, hi, x0, w) : zero_x;
            const double x = isnan(c->nmse) || c->nmse >= 1 ? x0 + w
                             : c->nmse > 0                  ? log_x(c->nmse, lo, hi, x0, w)
                                                            : zero_x;
            fprintf(f,
                    "<line class=\"threshold\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                    "stroke=\"#c62828\" stroke-width=\"2\"/>"
                    "<circle class=\"nmse\" cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"%s\" "
                    "fill-opacity=\"0.5\"><title>",
                    tx, y - 9, tx, y + 9, x, y, state_colour[fp8kv_check_state(c)]);
            put(f, c->subject);
            fputc(' ', f);
            put(f, c->profile);
            fprintf(f, ": NMSE %.3g, threshold %.3g</title></circle>\n", c->nmse, c->threshold);
        }
    }
    if (names.n) {
        put_log_axis(f, lo, hi, 5, x0, w, 26 + (double)names.n * row - 10);
        fprintf(f, "</svg>\n<p>A dot per check (green: passed, red: failed), the red bar its "
                   "threshold; an NMSE of exactly 0 (bit identity) sits in the column marked "
                   "0.</p>\n");
    }
    free(names.v);
}

/* The quantization NMSE (reported) of every distribution, subject and profile as a bar on a log
 * scale, with the signal-to-noise ratio it means. */
static void put_quantization_bars(FILE *f, const struct fp8kv_report *r)
{
    size_t n = 0;
    for (size_t i = 0; i < r->checks.count; i++)
        n += strcmp(fp8kv_check_family(&r->checks.items[i]), "quant-nmse") == 0;
    if (!n)
        return;
    const int lo = -8, hi = 0, x0 = 360, w = 300, row = 20;
    fprintf(f, "<h3>Quantization error (reported, never gating)</h3>\n");
    svg_begin(f, x0 + w + 150, (int)n * row + 40, "quantization NMSE per distribution");
    size_t k = 0;
    for (size_t i = 0; i < r->checks.count; i++) {
        const struct fp8kv_check *c = &r->checks.items[i];
        if (strcmp(fp8kv_check_family(c), "quant-nmse") != 0)
            continue;
        const double y = 8 + (double)k++ * row;
        fprintf(f, "<text x=\"%d\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\">", x0 - 6,
                y + 11);
        put(f, c->subject);
        fprintf(f, " · ");
        put(f, c->name + strlen("quant-nmse-"));
        fprintf(f, " · ");
        put(f, c->profile);
        fprintf(f,
                "</text><rect class=\"quant\" x=\"%d\" y=\"%.1f\" width=\"%.1f\" height=\"12\" "
                "fill=\"#1565c0\"/><text x=\"%.1f\" y=\"%.1f\" font-size=\"11\">%.3g (%.1f "
                "dB)</text>\n",
                x0, y + 2, log_x(c->nmse, lo, hi, x0, w) - x0, x0 + w + 6.0, y + 11, c->nmse,
                c->nmse > 0 ? -10.0 * log10(c->nmse) : INFINITY);
    }
    put_log_axis(f, lo, hi, 2, x0, w, 10 + (double)n * row);
    fprintf(f, "</svg>\n");
}

void fp8kv_svg_pictures(FILE *f, const struct fp8kv_report *r)
{
    fprintf(f, "<h2 id=\"pictures\">Pictures</h2>\n");
    int decode = 0;
    for (size_t i = 0; i < r->checks.count; i++)
        decode |= strcmp(r->checks.items[i].name, "decode") == 0;
    if (decode)
        fprintf(f, "<h3>The decode table</h3>\n");
    for (int k = 0; k < FP8KV_FORMAT_COUNT; k++)
        put_decode_grid(f, r, &fp8kv_formats[k]);
    struct distinct subjects;
    if (distinct_init(&subjects, r->checks.count) == 0) {
        for (size_t i = 0; i < r->checks.count; i++)
            if (r->checks.items[i].has_classes)
                distinct_add(&subjects, r->checks.items[i].subject, NULL);
        if (subjects.n)
            fprintf(f, "<h3>Mismatches per input class</h3>\n<p>Per subject, over its checks "
                       "with input classes: the cases judged (grey) and the mismatches (red: "
                       "gated, amber: reported), on a log scale. The exhaustive sweeps count "
                       "their mismatches per class, not their cases.</p>\n");
        for (size_t s = 0; s < subjects.n; s++)
            put_class_bars(f, r, subjects.v[2 * s]);
        free(subjects.v);
    }
    put_nmse_plot(f, r);
    put_quantization_bars(f, r);
}
