/* codec/judge.c — the codec family's judge: the exhaustive sweep engine of fp8kv/sweep.h. */
#define _GNU_SOURCE
#include "fp8kv/sweep.h"

#include <errno.h>
#include <fcntl.h>

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <omp.h>

#include "fp8kv/diag.h"
#include "fp8kv/npy.h"
#include "fp8kv/verify.h"

/* A sweep's judging table (fp8kv_sweep_runs): n runs, starts increasing from 0. */
struct runs {
    struct fp8kv_sweep_run *v;
    size_t n;
};

struct shared_state {
    const struct fp8kv_profile *p;
    enum fp8kv_domain domain;
    const struct runs *runs;
    uint64_t total;
    uint64_t class_mismatches[FP8KV_CLASS_COUNT];
    struct fp8kv_chunk_examples examples;
    uint64_t crash_lo, crash_n; /* the chunk the subject crashed on (crash_n 0: none) */
    uint32_t scale;             /* the store scale judged at (f32 bits), 0: scale 1 */
};

/* The dtype of a domain's inputs. */
static enum fp8kv_dtype domain_dtype(enum fp8kv_domain d)
{
    return d == FP8KV_DOMAIN_F32   ? FP8KV_DTYPE_F32
           : d == FP8KV_DOMAIN_F16 ? FP8KV_DTYPE_F16
                                   : FP8KV_DTYPE_BF16;
}

static uint32_t input_bits(enum fp8kv_domain d, uint64_t i)
{
    return fp8kv_widen_to_f32(domain_dtype(d), (uint32_t)i);
}

/* x[i] = the f32 of input lo + i of the domain (a plain count for f32: it vectorizes). */
FP8KV_HOST_ARRAY_LOOP
static void fill_inputs(enum fp8kv_domain d, uint64_t lo, size_t n, float *x)
{
    if (d == FP8KV_DOMAIN_F32) { /* (32-bit sums: the vectorizer's widest lanes) */
        const uint32_t first = (uint32_t)lo;
        for (uint32_t i = 0; i < (uint32_t)n; i++) {
            uint32_t b = first + i;
            memcpy(&x[i], &b, sizeof b);
        }
        return;
    }
    for (size_t i = 0; i < n; i++) {
        uint32_t b = input_bits(d, lo + i);
        memcpy(&x[i], &b, sizeof b);
    }
}

/* What one chunk found: its counts per class and its examples, in input order. */
struct chunk_tally {
    uint64_t class_mismatches[FP8KV_CLASS_COUNT];
    struct fp8kv_examples examples;
};

/* Judges q[0 .. n) for the inputs [lo, lo + n) of chunk `index`: the fast path ORs the
 * differences of a whole run, the slow path (only when something differs) counts each failure
 * and folds equal neighbours before they become examples. */
FP8KV_HOST_ARRAY_LOOP
static int judge_chunk(struct shared_state *s, uint64_t index, uint64_t lo, size_t n,
                       const uint8_t *q)
{
    const struct runs *r = s->runs;
    const enum fp8kv_dtype dtype = domain_dtype(s->domain);
    struct chunk_tally t;
    memset(&t, 0, sizeof t);
    int failed = 0;
    size_t k = fp8kv_sweep_run_of(r->v, r->n, lo);
    size_t i = 0; /* offsets into the chunk */
    for (; i < n; k++) {
        uint64_t run_end = k + 1 < r->n ? r->v[k + 1].start : UINT64_MAX;
        size_t stop = run_end - lo < n ? (size_t)(run_end - lo) : n;
        const uint8_t m = r->v[k].mask, v = r->v[k].value, cls = r->v[k].cls, sp = r->v[k].span;
        uint8_t acc = 0;
        if (sp == 0)
            for (size_t j = i; j < stop; j++)
                acc |= (uint8_t)((q[j] & m) ^ v);
        else
            for (size_t j = i; j < stop; j++)
                acc |= (uint8_t)((uint8_t)(v - (q[j] & m)) > sp);
        for (size_t j = i; acc && j < stop; j++) {
            if (fp8kv_sweep_run_accepts(&r->v[k], q[j]))
                continue;
            size_t e = j + 1; /* the same wrong code on the next inputs: one piece */
            while (e < stop && q[e] == q[j])
                e++;
            struct fp8kv_failure f = fp8kv_failure_one(dtype, (uint32_t)(lo + j), cls, q[j], v);
            f.last = (uint32_t)(lo + e - 1);
            f.count = e - j;
            f.has_scale = s->scale != 0;
            f.scale = s->scale;
            t.class_mismatches[cls] += f.count;
            fp8kv_examples_add(&t.examples, &f);
            j = e - 1;
        }
        failed |= acc != 0;
        i = stop;
    }
    if (!failed)
        return fp8kv_chunk_examples_put(&s->examples, index, NULL);
#pragma omp critical(fp8kv_sweep_failures)
    for (int c = 0; c < FP8KV_CLASS_COUNT; c++)
        s->class_mismatches[c] += t.class_mismatches[c];
    return fp8kv_chunk_examples_put(&s->examples, index, &t.examples);
}

/* ---- examples merged in chunk order -------------------------------------------------------- */

int fp8kv_chunk_examples_init(struct fp8kv_chunk_examples *m, uint64_t chunks)
{
    memset(m, 0, sizeof *m);
    m->chunks = chunks;
    m->pending = calloc(chunks ? chunks : 1, sizeof *m->pending);
    m->done = calloc(chunks ? chunks : 1, 1);
    if (!m->pending || !m->done) {
        fp8kv_chunk_examples_finish(m);
        return fp8kv_fail("out of memory");
    }
    return FP8KV_OK;
}

int fp8kv_chunk_examples_put(struct fp8kv_chunk_examples *m, uint64_t index,
                             const struct fp8kv_examples *e)
{
    struct fp8kv_examples *copy = NULL;
    if (e && e->n) { /* it may wait for the chunks before it */
        if (!(copy = malloc(sizeof *copy)))
            return fp8kv_fail("out of memory");
        *copy = *e;
    }
#pragma omp critical(fp8kv_chunk_examples)
    {
        if (index == m->next) {
            fp8kv_examples_merge_shard(&m->merged, e);
            m->next++;
        } else if (index < m->chunks) {
            m->done[index] = 1;
            m->pending[index] = copy;
            copy = NULL;
        }
        while (m->next < m->chunks && m->done[m->next]) {
            fp8kv_examples_merge_shard(&m->merged, m->pending[m->next]);
            free(m->pending[m->next]);
            m->pending[m->next++] = NULL;
        }
    }
    free(copy);
    return FP8KV_OK;
}

void fp8kv_chunk_examples_finish(struct fp8kv_chunk_examples *m)
{
    for (uint64_t i = m->next; m->pending && i < m->chunks; i++) {
        fp8kv_examples_merge_shard(&m->merged, m->pending[i]);
        free(m->pending[i]);
    }
    free(m->pending);
    free(m->done);
    m->pending = NULL;
    m->done = NULL;
}

/* The sweep's bar on a terminal, rewritten in place: what, how far, the inputs judged (for a
 * byte stream: the bytes read) and the rate. */
static void draw_progress(FILE *out, const char *what, uint64_t done, uint64_t total,
                          double seconds)
{
    const double fraction = total ? (double)done / (double)total : 1.0;
    int width = 30, filled = (int)(fraction * width);
    char count[32], all[32];
    fprintf(out, "\r%-40.40s [", what);
    for (int i = 0; i < width; i++)
        fputc(i < filled ? '#' : '.', out);
    fprintf(out, "] %3d%% %s/%s inputs, %.0f M/s\033[K", (int)(fraction * 100.0),
            fp8kv_format_count(done, count, sizeof count),
            fp8kv_format_count(total, all, sizeof all),
            seconds > 0 ? (double)done / seconds / 1e6 : 0.0);
    fflush(out);
}

int fp8kv_sweep_chunks(enum fp8kv_domain domain, const struct fp8kv_sweep_options *opt,
                       const char *what, unsigned flags, size_t chunk, fp8kv_chunk_visit visit,
                       void *ctx)
{
    const int in_order = (flags & FP8KV_CHUNKS_IN_ORDER) != 0;
    const int no_inputs = in_order || (flags & FP8KV_CHUNKS_NO_INPUTS);
    if (chunk == 0)
        chunk = FP8KV_SWEEP_CHUNK;
    uint64_t first, end;
    fp8kv_sweep_range(domain, opt, &first, &end);
    const uint64_t chunks = (end - first + chunk - 1) / chunk, total = end - first;
    FILE *progress = opt && opt->progress && isatty(fileno(opt->progress)) ? opt->progress : NULL;
    int threads = in_order ? 1 : opt && opt->threads > 0 ? opt->threads : omp_get_max_threads();
    _Atomic uint64_t chunks_done;
    _Atomic int status;
    char message[1024] = ""; /* the first failure's message, from whichever thread had it */
    atomic_init(&chunks_done, 0);
    atomic_init(&status, 0);
    const double started = fp8kv_now();

#pragma omp parallel num_threads(threads)
    {
        struct fp8kv_sweep_chunk c = {.thread = omp_get_thread_num()};
        c.x = no_inputs ? NULL : malloc(chunk * sizeof *c.x);
        c.q = malloc(chunk);
        c.q2 = malloc(chunk);
        if ((!no_inputs && !c.x) || !c.q || !c.q2) {
            int expected = 0;
            if (atomic_compare_exchange_strong(&status, &expected, FP8KV_ERR))
                snprintf(message, sizeof message, "out of memory");
        }
        double last_draw = 0.0;
        /* one thread takes the chunks in increasing order; several, dynamically */
#pragma omp for schedule(dynamic, 4)
        for (uint64_t ci = 0; ci < chunks; ci++) {
            if (atomic_load(&status) != 0)
                continue;
            c.index = ci;
            c.lo = first + ci * chunk;
            c.n = (size_t)(end - c.lo < chunk ? end - c.lo : chunk);
            if (c.x && !(flags & FP8KV_CHUNKS_UNFILLED))
                fill_inputs(domain, c.lo, c.n, c.x);
            int rc = visit(ctx, &c);
            if (rc != 0) {
                int expected = 0; /* the first failure is the one reported */
                if (atomic_compare_exchange_strong(&status, &expected, rc))
                    snprintf(message, sizeof message, "%s", fp8kv_last_error());
                continue;
            }
            uint64_t done = atomic_fetch_add(&chunks_done, 1) + 1;
            if (progress && c.thread == 0 && fp8kv_now() - last_draw > 0.2) {
                last_draw = fp8kv_now();
                draw_progress(progress, what, done * chunk < total ? done * chunk : total, total,
                              last_draw - started);
            }
        }
        free(c.x);
        free(c.q);
        free(c.q2);
    }
    if (progress) {
        const uint64_t done = atomic_load(&chunks_done) * chunk;
        draw_progress(progress, what, done < total ? done : total, total, fp8kv_now() - started);
        fputc('\n', progress);
    }
    if (atomic_load(&status) != 0)
        fp8kv_fail("%s", message); /* the caller's thread reports it */
    return atomic_load(&status);
}

uint64_t fp8kv_sweep_chunk_count(enum fp8kv_domain domain, const struct fp8kv_sweep_options *opt,
                                 size_t chunk)
{
    if (chunk == 0)
        chunk = FP8KV_SWEEP_CHUNK;
    uint64_t first, end;
    fp8kv_sweep_range(domain, opt, &first, &end);
    return (end - first + chunk - 1) / chunk;
}

/* The inputs a pass judges before sharding: the domain, or its first opt->limit. */
static uint64_t unsharded_size(enum fp8kv_domain domain, const struct fp8kv_sweep_options *opt)
{
    const uint64_t size = fp8kv_sweep_domain_size(domain);
    return opt && opt->limit && opt->limit < size ? opt->limit : size;
}

void fp8kv_sweep_range(enum fp8kv_domain domain, const struct fp8kv_sweep_options *opt,
                       uint64_t *lo, uint64_t *hi)
{
    const struct fp8kv_shard whole = {0, 0};
    fp8kv_shard_domain_slice(opt ? opt->shard : whole, domain, unsharded_size(domain, opt), lo, hi);
}

int fp8kv_sweep_default_threads(void)
{
    return omp_get_max_threads();
}

uint64_t fp8kv_sweep_domain_size(enum fp8kv_domain domain)
{
    return domain == FP8KV_DOMAIN_F32 ? 1ull << 32 : 1ull << 16;
}

size_t fp8kv_sweep_run_of(const struct fp8kv_sweep_run *runs, size_t n, uint64_t input)
{
    size_t k = 0, hi = n; /* the last run starting at or before input */
    while (k + 1 < hi) {
        size_t mid = (k + hi) / 2;
        if (runs[mid].start <= input)
            k = mid;
        else
            hi = mid;
    }
    return k;
}

struct sweep_job {
    struct shared_state *s;
    const struct fp8kv_subject *subject;
    struct fp8kv_codec_cfg cfg;
    enum fp8kv_domain domain;
    float scale; /* what the subject is handed */
};

/* Notes the first part [lo, lo + n) on which the subject crashed, for fp8kv_name_crash. */
static void encode_part_failed(struct sweep_job *job, uint64_t lo, size_t n)
{
#pragma omp critical(fp8kv_sweep_crash)
    if (!job->s->crash_n) {
        job->s->crash_lo = lo;
        job->s->crash_n = n;
    }
}

/* The codes of inputs [lo, lo + n) of the chunk's domain into q, from the subject's encode
 * (x: the inputs, filled). */
static int encode_part(struct sweep_job *job, const float *x, uint64_t lo, size_t n, uint8_t *q)
{
    int status;
    if (job->subject->flags & FP8KV_SUBJECT_SINGLE_THREADED) {
#pragma omp critical(fp8kv_sweep_subject)
        status = job->subject->encode(job->subject->ctx, job->cfg, x, n, job->scale, q);
    } else {
        status = job->subject->encode(job->subject->ctx, job->cfg, x, n, job->scale, q);
    }
    if (status == FP8KV_ERR_SUBJECT)
        encode_part_failed(job, lo, n);
    return status;
}

/* A subject in this process is handed the chunk a part of FP8KV_SWEEP_PART inputs at a time,
 * each part's inputs filled into the same scratch just before: they stay in the first-level
 * cache between the filling and the encoding (a whole chunk's do not). */
enum { FP8KV_SWEEP_PART = 1 << 12 };

static int sweep_chunk(void *ctx, struct fp8kv_sweep_chunk *c)
{
    struct sweep_job *job = ctx;
    int status = 0;
    if (job->subject->encode_f32_range && job->domain == FP8KV_DOMAIN_F32 && job->scale == 1.0f) {
        status = job->subject->encode_f32_range(job->subject->ctx, job->cfg, (uint32_t)c->lo, c->n,
                                                c->q);
        if (status == FP8KV_ERR_SUBJECT) /* (as encode_part notes it) */
            encode_part_failed(job, c->lo, c->n);
    } else if (job->subject->input_buffer) { /* the inputs go where the subject reads them */
        float *mine = job->subject->input_buffer(job->subject->ctx, c->thread);
        fill_inputs(job->domain, c->lo, c->n, mine);
        status = encode_part(job, mine, c->lo, c->n, c->q);
    } else if (!c->x) { /* a stream: its codes come in order, without inputs */
        status = encode_part(job, NULL, c->lo, c->n, c->q);
    } else {
        for (size_t off = 0; off < c->n && status == 0; off += FP8KV_SWEEP_PART) {
            const size_t n = c->n - off < FP8KV_SWEEP_PART ? c->n - off : FP8KV_SWEEP_PART;
            fill_inputs(job->domain, c->lo + off, n, c->x);
            status = encode_part(job, c->x, c->lo + off, n, c->q + off);
        }
    }
    return status != 0 ? status : judge_chunk(job->s, c->index, c->lo, c->n, c->q);
}

/* Fills the verdict part of c from per-class counts and the examples. */
static void fill_verdict(struct fp8kv_check *c, const uint64_t *class_mismatches,
                         const struct fp8kv_examples *examples)
{
    c->has_classes = 1;
    for (int k = 0; k < FP8KV_CLASS_COUNT; k++) {
        c->class_mismatches[k] = class_mismatches[k];
        c->mismatches += class_mismatches[k];
    }
    fp8kv_check_show_examples(c, examples);
}

/* ---- the examples of a self-judging sweep ----------------------------------------------------
 *
 * A subject that judges the domain itself returns the class counts and only the lowest
 * FP8KV_SWEEP_FAILURES failures of a pass. The examples of a check are the first
 * FP8KV_EXAMPLES_PER_CLASS ranges of every class, each range as long as it really is, so more
 * passes are asked of the subject, each with a table of its own: per failing class, passes whose
 * table expects nothing (mask 0) of the other classes; and for a range that reaches the last
 * failure a pass returned, one pass whose table expects that range's code after it, whose first
 * failure is where the range ends. The lines are then those a sweep on the host gives. */

/* The runs of the domain from index k on that the range of failure f may continue into: the
 * same expected byte and class, and f's code failing there too; the end of the last of them. */
static uint64_t range_bound(const struct runs *runs, size_t k, const struct fp8kv_failure *f,
                            uint64_t domain_end)
{
    while (k + 1 < runs->n && runs->v[k + 1].value == f->want && runs->v[k + 1].cls == f->cls &&
           !fp8kv_sweep_run_accepts(&runs->v[k + 1], f->got))
        k++;
    return k + 1 < runs->n ? runs->v[k + 1].start : domain_end;
}

/* Extends f (the last failure a pass returned, maybe with more after it) to the whole range of
 * inputs after it that give the same code in runs that expect the same byte, up to hi. */
static int extend_range(const struct fp8kv_subject *subject, struct fp8kv_codec_cfg cfg,
                        enum fp8kv_domain domain, const struct runs *runs, uint64_t hi,
                        struct fp8kv_failure *f)
{
    const uint64_t domain_end = fp8kv_sweep_domain_size(domain);
    uint64_t bound =
        range_bound(runs, fp8kv_sweep_run_of(runs->v, runs->n, f->last), f, domain_end);
    bound = bound < hi ? bound : hi;
    const uint64_t from = (uint64_t)f->last + 1;
    if (from >= bound)
        return FP8KV_OK;
    /* nothing expected but f's code on [from, bound) */
    struct fp8kv_sweep_run table[3] = {
        {.start = 0}, {.start = (uint32_t)from, .mask = 0xFF, .value = f->got, .cls = f->cls}};
    size_t n = 2;
    if (bound < domain_end)
        table[n++] = (struct fp8kv_sweep_run){.start = (uint32_t)bound};
    struct fp8kv_sweep_result res;
    memset(&res, 0, sizeof res);
    const int rc = subject->sweep(subject->ctx, cfg, domain, table, n, from, bound, &res);
    if (rc != 0)
        return rc;
    const uint64_t last = res.failures > 0 ? (uint64_t)res.failure_input[0] - 1 : bound - 1;
    f->count += last - f->last;
    f->last = (uint32_t)last;
    return FP8KV_OK;
}

/* Adds to out the first FP8KV_EXAMPLES_PER_CLASS ranges of class cls in [lo, hi), whole. */
static int class_examples(const struct fp8kv_subject *subject, struct fp8kv_codec_cfg cfg,
                          enum fp8kv_domain domain, const struct runs *runs, int cls, uint64_t lo,
                          uint64_t hi, struct fp8kv_examples *out)
{
    struct fp8kv_sweep_run *only = malloc(runs->n * sizeof *only);
    if (!only)
        return fp8kv_fail("out of memory");
    for (size_t i = 0; i < runs->n; i++) {
        only[i] = runs->v[i];
        if (only[i].cls != cls)
            only[i].mask = only[i].value = only[i].span = 0; /* any code passes */
    }
    struct fp8kv_examples mine; /* this class's ranges, in input order */
    memset(&mine, 0, sizeof mine);
    int rc = FP8KV_OK, full = 0;
    while (rc == FP8KV_OK && !full && lo < hi) {
        struct fp8kv_sweep_result res;
        memset(&res, 0, sizeof res);
        if ((rc = subject->sweep(subject->ctx, cfg, domain, only, runs->n, lo, hi, &res)) != 0)
            break;
        for (int i = 0; i < res.failures && !full; i++) {
            const struct fp8kv_failure f =
                fp8kv_failure_one(domain_dtype(domain), res.failure_input[i], cls,
                                  res.failure_got[i], res.failure_want[i]);
            full = fp8kv_examples_add(&mine, &f) < 0; /* a range after the last kept one */
        }
        if (full || res.failures < FP8KV_SWEEP_FAILURES)
            break; /* every range kept is whole */
        struct fp8kv_failure *open = &mine.v[mine.n - 1];
        if ((rc = extend_range(subject, cfg, domain, runs, hi, open)) != 0)
            break;
        lo = (uint64_t)open->last + 1;
    }
    free(only);
    for (int i = 0; i < mine.n && rc == FP8KV_OK; i++)
        out->v[out->n++] = mine.v[i];
    return rc;
}

static int by_input(const void *a, const void *b)
{
    const struct fp8kv_failure *x = a, *y = b;
    return (x->input > y->input) - (x->input < y->input);
}

/* The examples of a self-judging sweep over [lo, hi) whose pass counted class_mismatches. */
static int self_sweep_examples(const struct fp8kv_subject *subject, struct fp8kv_codec_cfg cfg,
                               enum fp8kv_domain domain, const struct runs *runs, uint64_t lo,
                               uint64_t hi, const uint64_t *class_mismatches,
                               struct fp8kv_examples *examples)
{
    struct fp8kv_examples all; /* every class's ranges, then in input order */
    memset(&all, 0, sizeof all);
    for (int k = 0; k < FP8KV_CLASS_COUNT; k++)
        if (class_mismatches[k]) {
            const int rc = class_examples(subject, cfg, domain, runs, k, lo, hi, &all);
            if (rc != 0)
                return rc;
        }
    qsort(all.v, (size_t)all.n, sizeof all.v[0], by_input);
    memset(examples, 0, sizeof *examples);
    for (int i = 0; i < all.n; i++)
        fp8kv_examples_add(examples, &all.v[i]);
    return FP8KV_OK;
}

/* A subject that judges the domain itself (FP8KV_CAP_SWEEP: a device kernel handed the runs). */
static int self_sweep(const struct fp8kv_profile *p, enum fp8kv_nan_check check,
                      enum fp8kv_domain domain, const struct runs *runs,
                      const struct fp8kv_subject *subject, struct fp8kv_codec_cfg cfg,
                      const struct fp8kv_sweep_options *opt, struct fp8kv_check *c)
{
    const double t0 = fp8kv_now();
    struct fp8kv_sweep_result res;
    memset(&res, 0, sizeof res);
    uint64_t lo, hi;
    fp8kv_sweep_range(domain, opt, &lo, &hi);
    const int rc = subject->sweep(subject->ctx, cfg, domain, runs->v, runs->n, lo, hi, &res);
    if (rc != 0)
        return rc;
    char detail[160], name[32];
    snprintf(detail, sizeof detail, "all %llu %s inputs, scale 1, nan check %s, judged %s: %.2f ms",
             (unsigned long long)unsharded_size(domain, opt), fp8kv_sweep_domain_names[domain],
             fp8kv_nan_check_names[check],
             subject->memory == FP8KV_MEMORY_DEVICE ? "on the device" : "by the subject",
             res.kernel_ms);
    snprintf(name, sizeof name, "sweep-%s", fp8kv_sweep_domain_names[domain]);
    fp8kv_check_init(c, name, subject->name, p->name, detail);
    c->cases = res.cases;
    c->first_limit = FP8KV_SWEEP_FAILURES; /* the device's first failures, in input order */
    for (int i = 0; i < res.failures && i < FP8KV_SWEEP_FAILURES; i++)
        c->first[c->first_count++] =
            fp8kv_failure_one(domain_dtype(domain), res.failure_input[i],
                              res.failure_cls[i] < FP8KV_CLASS_COUNT ? res.failure_cls[i] : -1,
                              res.failure_got[i], res.failure_want[i]);
    struct fp8kv_examples examples;
    const int erc =
        self_sweep_examples(subject, cfg, domain, runs, lo, hi, res.class_mismatches, &examples);
    if (erc != 0)
        return erc;
    fill_verdict(c, res.class_mismatches, &examples);
    for (int k = FP8KV_CLASS_COUNT; k < FP8KV_SWEEP_CLASSES; k++)
        c->mismatches += res.class_mismatches[k]; /* none: the runs carry our classes only */
    fp8kv_check_finish(c, fp8kv_now() - t0);
    return FP8KV_OK;
}

int fp8kv_sweep(const struct fp8kv_profile *p, enum fp8kv_nan_check check, enum fp8kv_domain domain,
                const uint32_t *boundaries, const struct fp8kv_subject *subject,
                struct fp8kv_codec_cfg cfg, const struct fp8kv_sweep_options *opt,
                struct fp8kv_check *c)
{
    double t0 = fp8kv_now();
    struct runs runs = {0};
    const uint32_t scale = opt ? opt->scale : 0;
    long nruns =
        scale ? fp8kv_sweep_runs_scaled(p, check, domain, boundaries, opt->model, scale, &runs.v)
              : fp8kv_sweep_runs(p, check, domain, boundaries, &runs.v);
    if (nruns < 0)
        return FP8KV_ERR;
    runs.n = (size_t)nruns;
    char scale_text[64] = "scale 1"; /* for the detail */
    float scale_f = 1.0f;
    if (scale) {
        memcpy(&scale_f, &scale, sizeof scale_f);
        snprintf(scale_text, sizeof scale_text, "scale 0x%08x (%.9g), model %s", scale,
                 (double)scale_f, fp8kv_model_names[opt->model]);
    }
    if (fp8kv_subject_can(subject, FP8KV_CAP_SWEEP) && !(opt && opt->limit) && !scale) {
        const int rc = self_sweep(p, check, domain, &runs, subject, cfg, opt, c);
        free(runs.v);
        return rc;
    }
    uint64_t lo, hi;
    fp8kv_sweep_range(domain, opt, &lo, &hi);
    const uint64_t total = hi - lo;
    struct shared_state s = {
        .p = p, .domain = domain, .runs = &runs, .total = total, .scale = scale};
    if (fp8kv_chunk_examples_init(&s.examples,
                                  fp8kv_sweep_chunk_count(domain, opt, subject->chunk)) != 0) {
        free(runs.v);
        return FP8KV_ERR;
    }
    char what[96];
    snprintf(what, sizeof what, "sweep %s %s %s", fp8kv_sweep_domain_names[domain], subject->name,
             p->name);
    struct sweep_job job = {&s, subject, cfg, domain, scale_f};
    unsigned flags = subject->flags & FP8KV_SUBJECT_IN_ORDER ? FP8KV_CHUNKS_IN_ORDER
                     : subject->input_buffer                 ? FP8KV_CHUNKS_NO_INPUTS
                                                             : FP8KV_CHUNKS_UNFILLED;
    int status = fp8kv_sweep_chunks(domain, opt, what, flags, subject->chunk, sweep_chunk, &job);

    char detail[160];
    snprintf(detail, sizeof detail, "all %llu %s inputs, %s, nan check %s",
             (unsigned long long)unsharded_size(domain, opt), fp8kv_sweep_domain_names[domain],
             scale_text, fp8kv_nan_check_names[check]);
    char name[32];
    snprintf(name, sizeof name, "sweep-%s", fp8kv_sweep_domain_names[domain]);
    if (status == FP8KV_ERR_SUBJECT && s.crash_n) { /* name the input, the threads at rest */
        float *x = malloc(s.crash_n * sizeof *x);
        if (x) {
            fill_inputs(domain, s.crash_lo, (size_t)s.crash_n, x);
            fp8kv_name_crash(subject, x, (size_t)s.crash_n, scale_f);
        }
        free(x);
    }
    fp8kv_check_init(c, name, subject->name, p->name, detail);
    c->cases = total;
    fp8kv_chunk_examples_finish(&s.examples);
    fill_verdict(c, s.class_mismatches, &s.examples.merged);
    fp8kv_check_finish(c, fp8kv_now() - t0);
    if (status != 0) { /* the subject failed: whatever was judged, the check did not pass */
        c->passed = 0;
        c->subject_failed = 1;
        snprintf(c->detail, sizeof c->detail,
                 "the subject failed before the sweep ended: no verdict on its codes");
    }
    free(runs.v);
    return status;
}
uint32_t *fp8kv_load_boundaries(const char *dir, const struct fp8kv_profile *p)
{
    char path[4096], rel[256];
    fp8kv_vector_path(path, sizeof path, dir, p, "boundaries.npy");
    snprintf(rel, sizeof rel, "%s/boundaries.npy", p->name);
    struct fp8kv_npy a = {0};
    size_t count = (size_t)fp8kv_boundary_count(p->format);
    /* the bytes verified (when dir was): the table is judged from what was hashed */
    if (fp8kv_vectors_read_npy(dir, rel, FP8KV_NPY_U32, 1, count, &a) != 0)
        return NULL;
    uint32_t *b = a.data;
    for (size_t k = 1; k < count; k++)
        if (b[k] <= b[k - 1] || b[0] != 0 || b[k] >= 0x7F800000u) {
            fp8kv_npy_free(&a);
            fp8kv_fail("%s: not an increasing table of positive finite f32 (entry %zu)", path, k);
            return NULL;
        }
    return b; /* the npy data buffer, handed to the caller */
}

/* ---- byte streams ------------------------------------------------------------------------ */

static int encode_stream(void *ctx, struct fp8kv_codec_cfg cfg, const float *x, size_t n, float s,
                         uint8_t *q)
{
    (void)cfg; /* the stream holds the codes of the canonical inputs: nothing to encode */
    (void)x;
    (void)s;
    struct fp8kv_stream *st = ctx;
    size_t got = 0;
    while (got < n) {
        ssize_t k = read(st->fd, q + got, n - got);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0) /* a failed read is never the end of the stream */
            return fp8kv_fail("cannot read the stream (%s): %s after %llu bytes",
                              st->fd == STDIN_FILENO ? "stdin" : "its file descriptor",
                              strerror(errno), (unsigned long long)(st->consumed + got));
        if (k == 0)
            return fp8kv_fail("the stream ended after %llu bytes, before the %llu-th code",
                              (unsigned long long)(st->consumed + got),
                              (unsigned long long)(st->consumed + got + 1));
        got += (size_t)k;
    }
    st->consumed += n;
    return 0;
}

struct fp8kv_subject fp8kv_stream_subject(struct fp8kv_stream *st, const char *name)
{
#ifdef F_SETPIPE_SZ
    fcntl(st->fd, F_SETPIPE_SZ, 1 << 20); /* fewer, larger reads from a pipe (best effort) */
#endif
    struct fp8kv_subject s = {
        .name = name,
        .description = "codes read from a byte stream in canonical input order",
        .caps = FP8KV_CAP_ENCODE,
        .flags = FP8KV_SUBJECT_IN_ORDER,
        .claim = FP8KV_CLAIM_ALL,
        .ctx = st,
        .encode = encode_stream,
    };
    return s;
}

int fp8kv_stream_finish(struct fp8kv_stream *st, uint64_t expected)
{
    /* one byte past the end decides it: a stream without end (/dev/zero, a runaway producer)
     * is refused at once instead of being drained */
    char extra;
    ssize_t k;
    while ((k = read(st->fd, &extra, 1)) < 0 && errno == EINTR)
        ;
    if (k > 0)
        return fp8kv_fail("the stream is longer than the %llu codes of the sweep (byte %llu "
                          "exists)",
                          (unsigned long long)expected, (unsigned long long)expected + 1);
    if (k < 0)
        return fp8kv_fail("cannot read the stream (%s) past its %llu codes: %s",
                          st->fd == STDIN_FILENO ? "stdin" : "its file descriptor",
                          (unsigned long long)expected, strerror(errno));
    return 0;
}
