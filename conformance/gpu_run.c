/* gpu_run.c — the GPU target: the open device described for the report, and its subject table
 * (fp8kv/gpu.h) handed to the one run loop of run.c, which judges it exactly as the CPU's.
 *
 * The judging stays on this side: the device sweep kernel receives the run table of
 * fp8kv_sweep_runs as data and reports what it found. Without GPU kernels in the build
 * (FP8KV_HAVE_GPU undefined) the entry points say "unavailable", never "passed".
 */
#include <string.h>

#include "fp8kv/diag.h"
#include "fp8kv/run.h"

#ifndef FP8KV_HAVE_GPU

int fp8kv_gpu_built(void)
{
    return 0;
}

int fp8kv_gpu_target_info(int device, struct fp8kv_target_info *t)
{
    (void)device;
    memset(t, 0, sizeof *t);
    return fp8kv_status_fail(FP8KV_UNAVAILABLE, "this fp8kv was built without GPU kernels "
                                                "(configure with -DFP8KV_GPU=cuda or hip)");
}

int fp8kv_gpu_target_open(int device, struct fp8kv_target *t)
{
    memset(t, 0, sizeof *t);
    return fp8kv_gpu_target_info(device, &t->info);
}

int fp8kv_gpu_devices(void)
{
    struct fp8kv_target_info t;
    fp8kv_gpu_target_info(0, &t); /* the message */
    return 0;
}

#else /* FP8KV_HAVE_GPU */

#include "fp8kv/gpu.h"

_Static_assert(FP8KV_CLASS_COUNT <= FP8KV_SWEEP_CLASSES, "input classes fit the device counters");
_Static_assert(FP8KV_SWEEP_FAILURES <= FP8KV_MAX_FAILURE_LINES, "failure lines fit a check");
_Static_assert(sizeof(struct fp8kv_sweep_run) == 8, "the device run table is 8 bytes a run");

int fp8kv_gpu_built(void)
{
    return 1;
}

int fp8kv_gpu_target_info(int device, struct fp8kv_target_info *t)
{
    memset(t, 0, sizeof *t);
    struct fp8kv_gpu_device_info info;
    if (fp8kv_gpu_open(device, &info) != 0)
        return FP8KV_UNAVAILABLE; /* whatever failed, this device cannot run: the message says why
                                   */
    snprintf(t->target, sizeof t->target, "%s", info.target);
    snprintf(t->device, sizeof t->device, "%.100s (device %d, %d multiprocessors, %.0f GiB)",
             info.name, info.index, info.multiprocessors,
             (double)info.global_memory / 1073741824.0);
    snprintf(t->runtime, sizeof t->runtime, "%s", info.runtime);
    snprintf(t->compiler, sizeof t->compiler, "device: %.70s; host: %.70s", info.compiler,
             FP8KV_HOST_COMPILER);
    snprintf(t->flags, sizeof t->flags, "device: %.300s; host: %.300s", info.flags,
             FP8KV_HOST_FLAGS);
    snprintf(t->compiled, sizeof t->compiled, "device codecs: %.230s", info.compiled);
    t->executed = 1;
    return FP8KV_OK;
}

int fp8kv_gpu_devices(void)
{
    return fp8kv_gpu_device_count();
}

int fp8kv_gpu_target_open(int device, struct fp8kv_target *t)
{
    memset(t, 0, sizeof *t);
    const int rc = fp8kv_gpu_target_info(device, &t->info);
    if (rc != 0)
        return rc;
    t->subject_count = fp8kv_gpu_subjects(&t->subjects);
    t->device_errors = fp8kv_gpu_error_count;
    return FP8KV_OK;
}

#endif /* FP8KV_HAVE_GPU */
