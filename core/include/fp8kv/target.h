/* fp8kv/target.h — the names of targets, in one table: what `--target` accepts and what a
 * report folder is called.
 *
 * A run goes to a kind of target (auto, cpu, hip); the report it writes is named after the
 * machine it ran on: cpu-x86_64 (cpu-<arch>), sm_90 (sm_<major><minor>, NVIDIA compute
 * capability) or gfx942 (the AMD architecture name). run, bench, report and the GPU runtime
 * all take their names from here.
 */
#ifndef FP8KV_TARGET_H
#define FP8KV_TARGET_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What --target selects. */
enum fp8kv_target_kind {
    FP8KV_TARGET_AUTO, /* the GPU when one answers, else the CPU */
    FP8KV_TARGET_CPU,
    FP8KV_TARGET_HIP, /* the kernels of kernels/hip/ on a GPU (AMD through HIP, NVIDIA through
                         the CUDA mapping) */
    FP8KV_TARGET_KIND_COUNT
};

/* "auto", "cpu", "hip": the index is the enum value. */
extern const char *const fp8kv_target_kind_names[FP8KV_TARGET_KIND_COUNT];

/* fp8kv_target_name_cpu: the report name of this build's CPU target ("cpu-x86_64",
 * "cpu-aarch64", or "cpu") into buf. */
void fp8kv_target_name_cpu(char *buf, size_t size);

/* fp8kv_target_name_nvidia: "sm_<major><minor>" into buf. */
void fp8kv_target_name_nvidia(int major, int minor, char *buf, size_t size);

/* fp8kv_target_name_amd: the architecture name of an AMD device, "gfx942" from
 * "gfx942:sramecc+:xnack-" (the features dropped), into buf. */
void fp8kv_target_name_amd(const char *arch, char *buf, size_t size);

/* fp8kv_target_kind_of_name: the kind a report name belongs to: FP8KV_TARGET_CPU for
 * "cpu-<arch>", FP8KV_TARGET_HIP for "sm_<digits>" and "gfx<hex digits>"; -1 for anything
 * else (not a target name). */
int fp8kv_target_kind_of_name(const char *name);

#ifdef __cplusplus
}
#endif
#endif
