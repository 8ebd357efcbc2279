/* diag.c — the last-error buffer of fp8kv/diag.h. */
#include "fp8kv/diag.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static _Thread_local char last_error[1024];

void fp8kv_text_defang(char *s)
{
    for (unsigned char *c = (unsigned char *)s; *c; c++) {
        if ((*c < 0x20 && *c != '\n' && *c != '\t') || *c == 0x7f)
            *c = '?';
        else if (c[0] == 0xc2 && c[1] >= 0x80 && c[1] <= 0x9f) /* C1: U+0080 .. U+009F */
            c[0] = c[1] = '?';
        else if (c[0] == 0xe2 && ((c[1] == 0x80 && c[2] >= 0xaa && c[2] <= 0xae) ||
                                  (c[1] == 0x81 && c[2] >= 0xa6 && c[2] <= 0xa9)))
            c[0] = c[1] = c[2] = '?'; /* bidirectional embeddings, overrides and isolates */
    }
}

/* Formats through a copy, so that a message may quote the last one (fp8kv_last_error() as an
 * argument) without reading the buffer it is writing. */
static int record(int status, const char *fmt, va_list ap)
{
    char message[sizeof last_error];
    vsnprintf(message, sizeof message, fmt, ap);
    fp8kv_text_defang(message); /* a quoted name or field from outside drives no terminal */
    memcpy(last_error, message, sizeof last_error);
    return status;
}

int fp8kv_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    const int status = record(FP8KV_ERR, fmt, ap);
    va_end(ap);
    return status;
}

int fp8kv_status_fail(int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    record(status, fmt, ap);
    va_end(ap);
    return status;
}

int fp8kv_exit_code(int status)
{
    switch (status) {
    case FP8KV_OK: return 0;
    case FP8KV_NONCONFORMANT: return 1;
    case FP8KV_UNAVAILABLE: return 3;
    case FP8KV_ERR_SUBJECT: return 4;
    default: return 2;
    }
}

const char *fp8kv_last_error(void)
{
    return last_error;
}
