/* fp8kv/diag.h — the one way fp8kv functions report errors.
 *
 * A function that fails returns a negative status and leaves a one-line message (naming the
 * file, argument or value at fault) in a thread-local buffer; the CLI prints it and picks the
 * exit code. Nothing below the CLI prints errors itself.
 */
#ifndef FP8KV_DIAG_H
#define FP8KV_DIAG_H

#ifdef __cplusplus
extern "C" {
#endif

enum fp8kv_status {
    FP8KV_OK = 0,
    FP8KV_ERR = -1,         /* bad input, bad file, I/O error: the message says which */
    FP8KV_ERR_SUBJECT = -4, /* the subject under test (a plugin) crashed or hung: the message
                               says how and on which inputs */
};

/* fp8kv_fail: records a printf-style message as the last error and returns FP8KV_ERR. */
int fp8kv_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* fp8kv_last_error: the message of the last fp8kv_fail on this thread ("" if none). */
const char *fp8kv_last_error(void);

#ifdef __cplusplus
}
#endif
#endif
