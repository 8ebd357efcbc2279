/* diag.c — the last-error buffer of fp8kv/diag.h. */
#include "fp8kv/diag.h"

#include <stdarg.h>
#include <stdio.h>

static _Thread_local char last_error[1024];

int fp8kv_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return FP8KV_ERR;
}

const char *fp8kv_last_error(void)
{
    return last_error;
}
