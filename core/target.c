/* target.c — the target-name table of fp8kv/target.h. */
#include "fp8kv/target.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

const char *const fp8kv_target_kind_names[FP8KV_TARGET_KIND_COUNT] = {"auto", "cpu", "hip"};

void fp8kv_target_name_cpu(char *buf, size_t size)
{
#if defined(__x86_64__)
    snprintf(buf, size, "cpu-x86_64");
#elif defined(__aarch64__)
    snprintf(buf, size, "cpu-aarch64");
#else
    snprintf(buf, size, "cpu");
#endif
}

void fp8kv_target_name_nvidia(int major, int minor, char *buf, size_t size)
{
    snprintf(buf, size, "sm_%d%d", major, minor);
}

void fp8kv_target_name_amd(const char *arch, char *buf, size_t size)
{
    const size_t n = strcspn(arch, ":");
    snprintf(buf, size, "%.*s", (int)(n < 24 ? n : 24), arch);
}

/* Whether s is one or more characters of which accept(c) holds for each. */
static int all_of(const char *s, int (*accept)(int))
{
    if (!*s)
        return 0;
    for (; *s; s++)
        if (!accept((unsigned char)*s))
            return 0;
    return 1;
}

static int is_arch_char(int c)
{
    return islower(c) || isdigit(c) || c == '_';
}

int fp8kv_target_kind_of_name(const char *name)
{
    if (strncmp(name, "cpu", 3) == 0 &&
        (name[3] == '\0' || (name[3] == '-' && all_of(name + 4, is_arch_char))))
        return FP8KV_TARGET_CPU;
    if (strncmp(name, "sm_", 3) == 0 && all_of(name + 3, isdigit))
        return FP8KV_TARGET_HIP;
    if (strncmp(name, "gfx", 3) == 0 && all_of(name + 3, isxdigit))
        return FP8KV_TARGET_HIP;
    return -1;
}
