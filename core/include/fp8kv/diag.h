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

/* The one status convention of the library: 0 is success, every other outcome a negative
 * value from this list. Judging functions report a verdict in their results and return
 * FP8KV_OK; FP8KV_NONCONFORMANT is for functions whose answer is the verdict itself. */
enum fp8kv_status {
    FP8KV_OK = 0,
    FP8KV_NONCONFORMANT = -1, /* the subject was judged and is wrong somewhere */
    FP8KV_ERR = -2,           /* bad input, bad file, I/O error: the message says which */
    FP8KV_UNAVAILABLE = -3,   /* the target cannot run here (no GPU, no kernel image for it) */
    FP8KV_ERR_SUBJECT = -4,   /* the subject under test (a plugin, a GPU kernel) crashed, hung
                                 or failed: the message says how and on which inputs */
};

/* fp8kv_exit_code: the CLI's exit code for a status: 0 conformant, 1 nonconformant, 2 bad
 * usage or input, 3 target unavailable, 4 the subject crashed (the harness is intact). */
int fp8kv_exit_code(int status);

/* fp8kv_status_fail: records a printf-style message as the last error and returns status
 * (one of the negative values above). */
int fp8kv_status_fail(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* fp8kv_fail: records a printf-style message as the last error and returns FP8KV_ERR. Control
 * characters in it but newline and tab become '?' (what it quotes from outside, a file name or
 * a field, cannot drive the terminal it is printed on). */
int fp8kv_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* fp8kv_text_defang: in s, every control character that could drive a terminal replaced by
 * '?' in place: C0 but newline and tab, DEL, C1 (U+0080..U+009F, one '?' a byte) and the
 * bidirectional embeddings, overrides and isolates (U+202A..U+202E, U+2066..U+2069). */
void fp8kv_text_defang(char *s);

/* fp8kv_last_error: the message of the last fp8kv_fail on this thread ("" if none). */
const char *fp8kv_last_error(void);

#ifdef __cplusplus
}
#endif
#endif
