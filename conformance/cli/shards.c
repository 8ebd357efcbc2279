/* shards.c — what the commands that split share (sweep, audit, merge): the `--shard i/N` and
 * `--device N|all` options, the documents a shard writes, their merge back into the unsharded
 * verdict, and `--device all`, which runs one shard per GPU and merges them the same way
 * (fp8kv/shard.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "fp8kv/diag.h"
#include "fp8kv/fileio.h"
#include "fp8kv/run.h"
#include "fp8kv/sweep.h"

extern char **environ;

/* ---- options and documents ------------------------------------------------------------------- */

int fp8kv_cli_parse_shard(const char *cmd, const char *text, struct fp8kv_shard *out)
{
    if (fp8kv_shard_parse(text, out) != 0)
        return fp8kv_cli_usage_error(cmd, "--shard: %s", fp8kv_last_error());
    return 0;
}

int fp8kv_cli_parse_device_or_all(const char *cmd, const char *text, int *device)
{
    if (strcmp(text, "all") == 0) {
        *device = FP8KV_CLI_ALL_DEVICES;
        return 0;
    }
    return fp8kv_cli_parse_device(cmd, text, device);
}

json_t *fp8kv_cli_shard_json(struct fp8kv_shard s, json_t *of)
{
    json_t *slices = json_object();
    for (int d = 0; d < FP8KV_DOMAIN_COUNT; d++) {
        uint64_t lo, hi;
        fp8kv_shard_domain_slice(s, (enum fp8kv_domain)d,
                                 fp8kv_sweep_domain_size((enum fp8kv_domain)d), &lo, &hi);
        json_object_set_new(slices, fp8kv_sweep_domain_names[d],
                            json_pack("[I, I]", (json_int_t)lo, (json_int_t)hi));
    }
    return json_pack("{s:i, s:i, s:o, s:o}", "index", (int)s.index, "count", (int)s.count, "of", of,
                     "slices", slices);
}

json_t *fp8kv_cli_verdict_shard_doc(const char *command, const char *verdict,
                                    const struct fp8kv_check *checks, size_t count, json_t *extra,
                                    struct fp8kv_shard s, json_t *of)
{
    json_t *doc = fp8kv_cli_verdict_doc(command, verdict, checks, count, extra);
    if (!doc || s.count == 0) {
        json_decref(of);
        return doc;
    }
    json_t *list = json_array();
    for (size_t i = 0; i < count; i++)
        json_array_append_new(list, fp8kv_check_json_shard(&checks[i]));
    json_object_set_new(doc, "checks", list);
    json_object_set_new(doc, "shard", fp8kv_cli_shard_json(s, of));
    return doc;
}

void fp8kv_cli_print_shard(struct fp8kv_shard s, unsigned domains)
{
    for (int d = 0; s.count && d < FP8KV_DOMAIN_COUNT; d++) {
        if (!(domains >> d & 1u))
            continue;
        const uint64_t size = fp8kv_sweep_domain_size((enum fp8kv_domain)d);
        uint64_t lo, hi;
        fp8kv_shard_domain_slice(s, (enum fp8kv_domain)d, size, &lo, &hi);
        char n[32], all[32];
        printf("shard %u/%u: %s inputs [0x%llx, 0x%llx): %s of %s\n", s.index, s.count,
               fp8kv_sweep_domain_names[d], (unsigned long long)lo, (unsigned long long)hi,
               fp8kv_format_count(hi - lo, n, sizeof n), fp8kv_format_count(size, all, sizeof all));
    }
}

/* ---- the merge of shard documents ------------------------------------------------------------ */

/* The first key whose value differs between two `of` objects, or NULL when they are equal. */
static const char *first_difference(json_t *a, json_t *b)
{
    const char *key;
    json_t *v;
    json_object_foreach(a, key, v)
    {
        if (!json_equal(v, json_object_get(b, key)))
            return key;
    }
    json_object_foreach(b, key, v)
    {
        if (!json_object_get(a, key))
            return key;
    }
    return NULL;
}

/* The shard object of doc read from path, checked against this fp8kv's slices: 0 with its index
 * and count, or FP8KV_ERR naming path and the problem. */
static int read_shard(const char *path, json_t *doc, struct fp8kv_shard *s, json_t **of)
{
    json_t *shard = json_object_get(doc, "shard");
    const char *schema = json_string_value(json_object_get(doc, "schema"));
    if (!json_is_object(doc) || !schema || strcmp(schema, "fp8kv-verdict") != 0)
        return fp8kv_fail("%s: not an fp8kv verdict document (docs/json.md)", path);
    const char *verdict = json_string_value(json_object_get(doc, "verdict"));
    if (verdict && strcmp(verdict, "subject failed") == 0)
        return fp8kv_fail("%s: the subject failed in this shard (%s): no verdict to merge", path,
                          json_string_value(json_object_get(doc, "error")));
    if (!json_is_object(shard))
        return fp8kv_fail("%s: not a shard's document (no \"shard\": written without --shard?)",
                          path);
    json_t *index = json_object_get(shard, "index"), *count = json_object_get(shard, "count");
    *of = json_object_get(shard, "of");
    if (!json_is_integer(index) || !json_is_integer(count) || !json_is_object(*of) ||
        json_integer_value(count) < 1 || json_integer_value(count) > FP8KV_SHARD_MAX ||
        json_integer_value(index) < 0 || json_integer_value(index) >= json_integer_value(count))
        return fp8kv_fail("%s: shard: not {index i, count N, of} with 0 <= i < N <= %u", path,
                          FP8KV_SHARD_MAX);
    s->index = (uint32_t)json_integer_value(index);
    s->count = (uint32_t)json_integer_value(count);
    json_t *want = fp8kv_cli_shard_json(*s, json_object());
    const int same = json_equal(json_object_get(want, "slices"), json_object_get(shard, "slices"));
    json_decref(want);
    if (!same)
        return fp8kv_fail("%s: shard %u/%u: its slices are not the ones this fp8kv cuts (another "
                          "version's shard?)",
                          path, s->index, s->count);
    return FP8KV_OK;
}

/* The largest shard document merge reads (a sweep's holds its failing runs: megabytes). */
#define SHARD_DOCUMENT_MAX ((size_t)256 << 20)

/* "sweep and audit": the commands of mergers, for a message. */
static const char *merger_names(const struct fp8kv_cli_merger *mergers)
{
    static char buf[128];
    buf[0] = '\0';
    for (const struct fp8kv_cli_merger *m = mergers; m->command; m++)
        snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "%s%s",
                 m == mergers   ? ""
                 : m[1].command ? ", "
                                : " and ",
                 m->command);
    return buf;
}

int fp8kv_cli_merge_files(const char *cmd, char *const *paths, int n, const char *json_path,
                          const struct fp8kv_cli_merger *mergers)
{
    json_t **docs = calloc((size_t)n, sizeof *docs), **sorted = calloc((size_t)n, sizeof *sorted);
    char **names = calloc((size_t)n, sizeof *names);
    struct fp8kv_shard first = {0, 0};
    json_t *first_of = NULL;
    int rc = docs && sorted && names ? 0 : fp8kv_fail("out of memory");
    for (int k = 0; k < n && rc == 0; k++) {
        json_error_t err;
        size_t len = 0;
        char *text = fp8kv_read_regular(paths[k], SHARD_DOCUMENT_MAX, &len);
        if (!text) {
            rc = FP8KV_ERR;
            break;
        }
        docs[k] = json_loadb(text, len, JSON_REJECT_DUPLICATES, &err);
        free(text);
        if (!docs[k]) {
            rc = fp8kv_fail("%s: not JSON: %s (line %d)", paths[k], err.text, err.line);
            break;
        }
        struct fp8kv_shard s = {0, 0};
        json_t *of = NULL;
        if ((rc = read_shard(paths[k], docs[k], &s, &of)) != 0)
            break;
        const char *key;
        if (k == 0) {
            first = s;
            first_of = of;
        } else if (s.count != first.count) {
            rc = fp8kv_fail("%s is shard %u/%u but %s is shard %u/%u: not one split", paths[0],
                            first.index, first.count, paths[k], s.index, s.count);
        } else if ((key = first_difference(first_of, of)) != NULL) {
            char *a = json_dumps(json_object_get(first_of, key), JSON_ENCODE_ANY);
            char *b = json_dumps(json_object_get(of, key), JSON_ENCODE_ANY);
            rc = fp8kv_fail("%s and %s are not shards of one pass: %s %s vs %s", paths[0], paths[k],
                            key, a ? a : "(none)", b ? b : "(none)");
            free(a);
            free(b);
        }
        if (rc == 0 && s.index < (uint32_t)n && sorted[s.index])
            rc = fp8kv_fail("shard %u/%u is given twice: %s and %s", s.index, s.count,
                            names[s.index], paths[k]);
        if (rc == 0 && s.index < (uint32_t)n) {
            sorted[s.index] = docs[k];
            names[s.index] = paths[k];
        }
    }
    for (uint32_t i = 0; rc == 0 && i < first.count; i++)
        if (i >= (uint32_t)n || !sorted[i])
            rc = fp8kv_fail("shard %u/%u is missing (%d document%s given, for shards 0 .. %u)", i,
                            first.count, n, n == 1 ? "" : "s", first.count - 1);
    if (rc == 0 && (int)first.count != n)
        rc = fp8kv_fail("%d documents for %u shards: a shard is given twice", n, first.count);
    int exit_code = FP8KV_EXIT_USAGE;
    if (rc == 0) {
        const char *command = json_string_value(json_object_get(first_of, "command"));
        const struct fp8kv_cli_merger *m = mergers;
        while (m->command && (!command || strcmp(command, m->command) != 0))
            m++;
        if (m->command)
            exit_code = m->merge(sorted, names, n, json_path);
        else
            exit_code = (fp8kv_fail("%s: shard of '%s': only %s shards merge here", paths[0],
                                    command ? command : "(none)", merger_names(mergers)),
                         fp8kv_cli_input_error(cmd));
    } else {
        fp8kv_cli_input_error(cmd);
    }
    for (int k = 0; docs && k < n; k++)
        json_decref(docs[k]);
    free(docs);
    free(sorted);
    free(names);
    return exit_code;
}

/* ---- --device all -----------------------------------------------------------------------------
 */

/* Runs argv with stdout and stderr into log; its pid, or -1 with a message. */
static pid_t spawn_logged(char **argv, const char *log)
{
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_adddup2(&fa, STDOUT_FILENO, STDERR_FILENO);
    pid_t pid;
    const int e = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (e != 0) {
        fp8kv_fail("cannot start %s: %s", argv[0], strerror(e));
        return -1;
    }
    return pid;
}

/* Prints the file at path to stderr. */
static void show_log(const char *path)
{
    FILE *f = fopen(path, "r");
    char buf[4096];
    size_t got;
    while (f && (got = fread(buf, 1, sizeof buf, f)) > 0)
        fwrite(buf, 1, got, stderr);
    if (f)
        fclose(f);
}

int fp8kv_cli_on_every_device(const char *cmd, const struct fp8kv_cli_args *a,
                              const struct fp8kv_cli_option *options_of, int count, int opt_device,
                              int opt_shard, int opt_json, const char *json_path,
                              const struct fp8kv_cli_merger *mergers)
{
    const int devices = fp8kv_gpu_devices();
    if (devices <= 0) {
        fprintf(stderr, "fp8kv %s: --device all: %s\n", cmd, fp8kv_last_error());
        return FP8KV_EXIT_UNAVAILABLE;
    }
    char exe[4096], dir[] = "/tmp/fp8kv-devices.XXXXXX";
    const ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len <= 0 || !mkdtemp(dir)) {
        fprintf(stderr, "fp8kv %s: --device all: %s\n", cmd, strerror(errno));
        return FP8KV_EXIT_USAGE;
    }
    exe[len] = '\0';
    const double t0 = fp8kv_now();
    char **argv = calloc((size_t)count + 6, sizeof *argv),
         **files = calloc((size_t)devices, sizeof *files);
    char **logs = calloc((size_t)devices, sizeof *logs);
    pid_t *pids = calloc((size_t)devices, sizeof *pids);
    int exit_code = argv && files && logs && pids ? 0 : FP8KV_EXIT_USAGE;
    int started = 0;
    for (int k = 0; k < devices && exit_code == 0; k++) {
        int n = 0;
        argv[n++] = exe;
        argv[n++] = (char *)cmd;
        char *owned[3 + CLI_MAX_OPTIONS] = {0};
        int nowned = 0;
        for (int o = 0; o < count; o++) {
            if (!a->value[o] || o == opt_device || o == opt_shard || o == opt_json)
                continue;
            if (options_of[o].takes_value &&
                asprintf(&owned[nowned], "--%s=%s", options_of[o].name, a->value[o]) < 0)
                owned[nowned] = NULL;
            else if (!options_of[o].takes_value &&
                     asprintf(&owned[nowned], "--%s", options_of[o].name) < 0)
                owned[nowned] = NULL;
            argv[n++] = owned[nowned++];
        }
        if (asprintf(&owned[nowned++], "--device=%d", k) < 0 ||
            asprintf(&owned[nowned++], "--shard=%d/%d", k, devices) < 0 ||
            asprintf(&files[k], "%s/shard%d.json", dir, k) < 0 ||
            asprintf(&logs[k], "%s/shard%d.log", dir, k) < 0 ||
            asprintf(&owned[nowned++], "--json=%s", files[k]) < 0) {
            exit_code = FP8KV_EXIT_USAGE;
        } else {
            argv[n++] = owned[nowned - 3];
            argv[n++] = owned[nowned - 2];
            argv[n++] = owned[nowned - 1];
            argv[n] = NULL;
            if ((pids[k] = spawn_logged(argv, logs[k])) < 0)
                exit_code = fp8kv_cli_input_error(cmd);
            else
                started++;
        }
        for (int i = 0; i < nowned; i++)
            free(owned[i]);
    }
    for (int k = 0; k < started; k++) { /* every child, then the first failure */
        int status = 0;
        while (waitpid(pids[k], &status, 0) < 0 && errno == EINTR)
            ;
        const int code = WIFEXITED(status) ? WEXITSTATUS(status) : FP8KV_EXIT_SUBJECT_FAILED;
        if (code > FP8KV_EXIT_NONCONFORMANT && exit_code == 0) {
            fprintf(stderr, "fp8kv %s: --device all: shard %d/%d on GPU %d failed (exit %d):\n",
                    cmd, k, devices, k, code);
            show_log(logs[k]);
            exit_code = code;
        }
    }
    if (exit_code == 0) {
        /* which GPUs ran it, and the wall time (the merged report's times are the shards') */
        fprintf(stderr, "fp8kv %s: --device all: %d GPUs, one shard each, %.2f s wall\n", cmd,
                devices, fp8kv_now() - t0);
        exit_code = fp8kv_cli_merge_files(cmd, files, devices, json_path, mergers);
    }
    for (int k = 0; k < devices && files && logs; k++) {
        if (files[k])
            remove(files[k]);
        if (logs[k])
            remove(logs[k]);
        free(files[k]);
        free(logs[k]);
    }
    rmdir(dir);
    free(argv);
    free(files);
    free(logs);
    free(pids);
    return exit_code;
}
