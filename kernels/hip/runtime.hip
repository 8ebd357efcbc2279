/* runtime.hip — errors, devices, the probe of the compiled codec paths, the codec table, and
 * the buffer and timer helpers of common.h. */
#include "common.h"
#include "fp8kv/target.h"

#include <atomic>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#ifndef FP8KV_GPU_COMPILER
#define FP8KV_GPU_COMPILER "unknown"
#endif
#ifndef FP8KV_GPU_FLAGS
#define FP8KV_GPU_FLAGS "unknown"
#endif

/* ---- errors ---------------------------------------------------------------------------------- */

/* Messages go through the core's one reporting function (fp8kv/diag.h: fp8kv_last_error); the
 * device keeps only a count of its failures, for the per-profile health check of a run. */
static std::atomic<unsigned long> error_count(0);

/* The source path from kernels/hip/ on, for messages. */
static const char *source_name(const char *file)
{
    const char *base = strstr(file, "kernels/hip/");
    return base ? base : file;
}

extern "C" int fp8kv_gpu_fail_at(const char *file, int line, const char *what, const char *message)
{
    error_count.fetch_add(1);
    return fp8kv_status_fail(FP8KV_ERR_SUBJECT, "%s:%d: %s: %s", source_name(file), line, what,
                             message);
}

extern "C" unsigned long fp8kv_gpu_error_count(void)
{
    return error_count.load();
}

namespace fp8kv_gpu
{

device_state g_device;

int fail(const char *file, int line, const char *fmt, ...)
{
    char message[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    error_count.fetch_add(1);
    return fp8kv_status_fail(FP8KV_ERR, "%s:%d: %s", source_name(file), line, message);
}

int require_open(const char *what)
{
    if (g_device.open) { /* the runtime's current device is per thread: this one uses it too */
        int current = -1;
        FP8KV_GPU_CHECK(hipGetDevice(&current));
        if (current != g_device.index)
            FP8KV_GPU_CHECK(hipSetDevice(g_device.index));
        return FP8KV_OK;
    }
    error_count.fetch_add(1);
    return fp8kv_status_fail(FP8KV_UNAVAILABLE, "%s: no GPU device is open (fp8kv_gpu_open)", what);
}

buffer::~buffer()
{
    if (ptr)
        (void)hipFree(ptr);
}

int buffer::alloc(size_t n)
{
    if (ptr) {
        FP8KV_GPU_CHECK(hipFree(ptr));
        ptr = nullptr;
    }
    bytes = n ? n : 1;
    FP8KV_GPU_CHECK(hipMalloc(&ptr, bytes));
    return FP8KV_OK;
}

int buffer::upload(const void *host, size_t n)
{
    int rc = alloc(n);
    if (rc != 0)
        return rc;
    if (n)
        FP8KV_GPU_CHECK(hipMemcpy(ptr, host, n, hipMemcpyHostToDevice));
    return FP8KV_OK;
}

int buffer::download(void *host, size_t n) const
{
    if (n > bytes)
        return FP8KV_FAIL("download of %zu bytes from a buffer of %zu", n, bytes);
    if (n)
        FP8KV_GPU_CHECK(hipMemcpy(host, ptr, n, hipMemcpyDeviceToHost));
    return FP8KV_OK;
}

extern "C" int fp8kv_gpu_alloc(size_t bytes, void **device)
{
    *device = nullptr;
    int rc = require_open("fp8kv_gpu_alloc");
    if (rc != 0)
        return rc;
    FP8KV_GPU_CHECK(hipMalloc(device, bytes ? bytes : 1));
    return FP8KV_OK;
}

extern "C" void fp8kv_gpu_free(void *device)
{
    if (device)
        (void)hipFree(device);
}

extern "C" int fp8kv_gpu_to_device(void *device, const void *host, size_t bytes)
{
    if (bytes)
        FP8KV_GPU_CHECK(hipMemcpy(device, host, bytes, hipMemcpyHostToDevice));
    return FP8KV_OK;
}

extern "C" int fp8kv_gpu_to_host(void *host, const void *device, size_t bytes)
{
    FP8KV_GPU_CHECK(hipDeviceSynchronize());
    if (bytes)
        FP8KV_GPU_CHECK(hipMemcpy(host, device, bytes, hipMemcpyDeviceToHost));
    return FP8KV_OK;
}

timer::~timer()
{
    if (begin)
        (void)hipEventDestroy(begin);
    if (end)
        (void)hipEventDestroy(end);
}

int timer::start()
{
    if (!begin)
        FP8KV_GPU_CHECK(hipEventCreate(&begin));
    if (!end)
        FP8KV_GPU_CHECK(hipEventCreate(&end));
    FP8KV_GPU_CHECK(hipEventRecord(begin, 0));
    return FP8KV_OK;
}

int timer::stop(double *ms)
{
    float elapsed = 0.0f;
    FP8KV_GPU_CHECK(hipEventRecord(end, 0));
    FP8KV_GPU_CHECK(hipEventSynchronize(end));
    FP8KV_GPU_CHECK(hipEventElapsedTime(&elapsed, begin, end));
    *ms = (double)elapsed;
    return FP8KV_OK;
}

int check_shape(const struct fp8kv_cache_shape *s, const char *what)
{
    /* the host's rule (kv_cache.c), counted as a device-side failure */
    if (fp8kv_cache_shape_check(s, what) != 0)
        return FP8KV_FAIL("%s", fp8kv_last_error());
    if (s->packing != FP8KV_PACKING_SEPARATE) /* the kernels' descriptor declares no packing */
        return FP8KV_FAIL("%s: fp8kv's GPU kernels take separate key and value caches, not %s",
                          what, fp8kv_kv_packing_names[s->packing]);
    return FP8KV_OK;
}

} // namespace fp8kv_gpu

using namespace fp8kv_gpu;

/* ---- the codec table ------------------------------------------------------------------------- */

/* name, description, vendor, claim {format, saturate, inf_to_nan} */
#define ANY FP8KV_CLAIM_ANY
extern "C" const struct fp8kv_gpu_codec fp8kv_gpu_codecs[FP8KV_GPU_CODEC_COUNT] = {
    {FP8KV_NAME_BITS,
     "fp8kv_encode_bits of codec.h (integer bit manipulation), on the device",
     0,
     {ANY, ANY, ANY}},
    {FP8KV_NAME_FREXP,
     "fp8kv_encode_frexp of codec.h with the device's frexpf/ldexpf/nearbyintf",
     0,
     {ANY, ANY, ANY}},
    {FP8KV_NAME_PTX_CVT,
     "inline PTX cvt.rn.satfinite.e4m3x2.f32 (NVIDIA sm_89+ hardware)",
     1,
     {FP8KV_CODEC_E4M3FN, 1, 0}},
    {FP8KV_NAME_CUDA_FP8_SATFINITE,
     "cuda_fp8.h __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3) (hardware on sm_89+)",
     1,
     {FP8KV_CODEC_E4M3FN, 1, 0}},
    {FP8KV_NAME_CUDA_FP8_NOSAT,
     "cuda_fp8.h __nv_cvt_float_to_fp8(x, __NV_NOSAT, __NV_E4M3) (a software path)",
     1,
     {FP8KV_CODEC_E4M3FN, 0, ANY}},
    {FP8KV_NAME_AMD_FNUZ,
     "__builtin_amdgcn_cvt_pk_fp8_f32 on gfx940-942, no clamp (FNUZ; claim unverified on "
     "hardware)",
     1,
     {FP8KV_CODEC_E4M3FNUZ, 0, ANY}},
    {FP8KV_NAME_AMD_OCP,
     "__builtin_amdgcn_cvt_pk_fp8_f32 on gfx950/gfx12, no clamp (OCP; claim unverified on "
     "hardware)",
     1,
     {FP8KV_CODEC_E4M3FN, 0, ANY}},
    /* e5m2. PTX .satfinite: NaN stays NaN, a magnitude above MAX_NORM (Inf included) becomes
     * ±MAX_NORM: e5m2_satfinite. cuda_fp8.h's __NV_NOSAT software path (cuda_fp8.hpp,
     * __nv_cvt_double_to_fp8): overflow past the RNE threshold and Inf give ±Inf (0x7C | sign),
     * NaN gives NaN: e5m2_inf; its __NV_SATFINITE is the PTX instruction on sm_89+ and the same
     * software path with MAXNORM elsewhere */
    {FP8KV_NAME_PTX_CVT_E5M2,
     "inline PTX cvt.rn.satfinite.e5m2x2.f32 (NVIDIA sm_89+ hardware)",
     1,
     {FP8KV_CODEC_E5M2, 1, 0}},
    {FP8KV_NAME_CUDA_FP8_SATFINITE_E5M2,
     "cuda_fp8.h __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E5M2) (hardware on sm_89+)",
     1,
     {FP8KV_CODEC_E5M2, 1, 0}},
    {FP8KV_NAME_CUDA_FP8_NOSAT_E5M2,
     "cuda_fp8.h __nv_cvt_float_to_fp8(x, __NV_NOSAT, __NV_E5M2) (a software path: Inf on "
     "overflow)",
     1,
     {FP8KV_CODEC_E5M2, 0, ANY}},
    {FP8KV_NAME_AMD_BF8_FNUZ,
     "__builtin_amdgcn_cvt_pk_bf8_f32 on gfx940-942, no clamp (e5m2fnuz; claim unverified on "
     "hardware)",
     1,
     {FP8KV_CODEC_E5M2FNUZ, 0, ANY}},
    {FP8KV_NAME_AMD_BF8_OCP,
     "__builtin_amdgcn_cvt_pk_bf8_f32 on gfx950/gfx12, no clamp (OCP e5m2; claim unverified on "
     "hardware)",
     1,
     {FP8KV_CODEC_E5M2, 0, ANY}},
};

/* name, description, vendor, claim (the format: decoding has no other choice) */
extern "C" const struct fp8kv_gpu_decoder fp8kv_gpu_decoders[FP8KV_GPU_DECODER_COUNT] = {
    {"decode-bits", "fp8kv_decode_bits of codec.h, on the device", 0, {ANY, ANY, ANY}},
    {"decode-table",
     "a 256-entry table in shared memory, from fp8kv_decode_table_fill",
     0,
     {ANY, ANY, ANY}},
    {"decode-fast",
     "decode_fast of device_codecs.h (templated on the format), the one the KV kernels use",
     0,
     {ANY, ANY, ANY}},
    {FP8KV_NAME_DECODE_CUDA_FP8,
     "cuda_fp8.h __nv_cvt_fp8_to_halfraw(code, __NV_E4M3 / __NV_E5M2) widened to f32 (hardware "
     "cvt.rn.f16x2 on sm_89+)",
     1,
     {FP8KV_CLAIM_OCP, ANY, ANY}},
    {FP8KV_NAME_DECODE_AMD_FNUZ,
     "__builtin_amdgcn_cvt_f32_fp8 / _bf8 on gfx940-942 (FNUZ; claim unverified on hardware)",
     1,
     {FP8KV_CLAIM_FNUZ, ANY, ANY}},
    {FP8KV_NAME_DECODE_AMD_OCP,
     "__builtin_amdgcn_cvt_f32_fp8 / _bf8 on gfx950/gfx12 (OCP; claim unverified on hardware)",
     1,
     {FP8KV_CLAIM_OCP, ANY, ANY}},
};
#undef ANY

extern "C" int fp8kv_gpu_codec_by_name(const char *name)
{
    for (int c = 0; c < FP8KV_GPU_CODEC_COUNT; c++)
        if (name && strcmp(fp8kv_gpu_codecs[c].name, name) == 0)
            return c;
    return -1;
}

extern "C" int fp8kv_gpu_codec_available(int codec)
{
    return g_device.open && codec >= 0 && codec < FP8KV_GPU_CODEC_COUNT &&
           (g_device.codec_mask >> codec & 1u);
}

extern "C" int fp8kv_gpu_decoder_available(int decoder)
{
    return g_device.open && decoder >= 0 && decoder < FP8KV_GPU_DECODER_COUNT &&
           (g_device.decoder_mask >> decoder & 1u);
}

/* ---- devices --------------------------------------------------------------------------------- */

/* The probe: which codec and decoder paths the device pass for this device compiled (mask[0],
 * mask[1]). Bit 31 of mask[0] says that a kernel image ran at all. File-local (an anonymous
 * namespace): nothing outside needs its name. */
namespace
{
__global__ void probe_kernel(unsigned *mask)
{
#ifdef FP8KV_DEVICE_PASS
    mask[0] = FP8KV_DEVICE_CODEC_MASK | 0x80000000u;
    mask[1] = FP8KV_DEVICE_DECODER_MASK;
#else
    (void)mask;
#endif
}
} // namespace

extern "C" int fp8kv_gpu_device_count(void)
{
    int count = 0;
    const hipError_t e = hipGetDeviceCount(&count);
    if (e != hipSuccess) {
        (void)hipGetLastError(); /* clear it: "no device" is an answer, not a failure */
        fp8kv_status_fail(FP8KV_UNAVAILABLE, "no GPU: %s", hipGetErrorString(e));
        return 0;
    }
    if (count == 0)
        fp8kv_status_fail(FP8KV_UNAVAILABLE, "no GPU: the runtime sees no device");
    return count;
}

/* The kernel driver's version where the system says it (NVIDIA: /proc/driver/nvidia/version). */
static void kernel_driver_version(char *buf, size_t size)
{
    buf[0] = '\0';
    FILE *f = fopen("/proc/driver/nvidia/version", "r");
    if (!f)
        return;
    char line[256];
    /* "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build ..." */
    if (fgets(line, sizeof line, f)) {
        const char *k = strstr(line, "Kernel Module");
        while (k && *k && !(*k >= '0' && *k <= '9' && k[-1] == ' '))
            k++;
        if (k && *k) {
            const size_t n = strcspn(k, " \n");
            snprintf(buf, size, "%.*s", (int)(n < 64 ? n : 64), k);
        }
    }
    fclose(f);
}

static int device_target(int index, char *target, size_t tsize, char *name, size_t nsize)
{
#if defined(__HIP_PLATFORM_AMD__)
    hipDeviceProp_t prop;
    FP8KV_GPU_CHECK(hipGetDeviceProperties(&prop, index));
    snprintf(name, nsize, "%.*s", (int)(nsize - 1), prop.name);
    fp8kv_target_name_amd(prop.gcnArchName, target, tsize);
#else
    int major = 0, minor = 0;
    FP8KV_GPU_CHECK(hipDeviceGetAttribute(&major, hipDeviceAttributeComputeCapabilityMajor, index));
    FP8KV_GPU_CHECK(hipDeviceGetAttribute(&minor, hipDeviceAttributeComputeCapabilityMinor, index));
    fp8kv_target_name_nvidia(major, minor, target, tsize);
    /* cudaDeviceProp only for its name: CUDA 13 removed other fields ROCm's headers read */
    hipDeviceProp_t prop;
    FP8KV_GPU_CHECK(hipGetDeviceProperties(&prop, index));
    snprintf(name, nsize, "%.*s", (int)(nsize - 1), prop.name);
#endif
    return FP8KV_OK;
}

extern "C" int fp8kv_gpu_open(int index, struct fp8kv_gpu_device_info *info)
{
    memset(info, 0, sizeof *info);
    g_device = device_state();
    const int count = fp8kv_gpu_device_count();
    if (count <= 0)
        return FP8KV_UNAVAILABLE; /* the message says why */
    if (index < 0 || index >= count)
        return fp8kv_status_fail(FP8KV_UNAVAILABLE, "no GPU device %d (%d present)", index, count);
    FP8KV_GPU_CHECK(hipSetDevice(index));
    info->index = index;
    int rc = device_target(index, info->target, sizeof info->target, info->name, sizeof info->name);
    if (rc != 0)
        return rc;
    FP8KV_GPU_CHECK(hipDeviceGetAttribute(&info->multiprocessors,
                                          hipDeviceAttributeMultiprocessorCount, index));
    int shared = 0;
    FP8KV_GPU_CHECK(
        hipDeviceGetAttribute(&shared, hipDeviceAttributeMaxSharedMemoryPerBlock, index));
    size_t free_bytes = 0, total_bytes = 0;
    FP8KV_GPU_CHECK(hipMemGetInfo(&free_bytes, &total_bytes));
    info->global_memory = total_bytes;

    int runtime = 0, driver = 0;
    FP8KV_GPU_CHECK(hipRuntimeGetVersion(&runtime));
    FP8KV_GPU_CHECK(hipDriverGetVersion(&driver));
    char kmod[80];
    kernel_driver_version(kmod, sizeof kmod);
#if defined(__HIP_PLATFORM_AMD__)
    snprintf(info->runtime, sizeof info->runtime, "HIP runtime %d, driver %d", runtime, driver);
#else
    snprintf(info->runtime, sizeof info->runtime, "CUDA runtime %d.%d, driver API %d.%d%s%s",
             runtime / 1000, runtime % 1000 / 10, driver / 1000, driver % 1000 / 10,
             kmod[0] ? ", kernel driver " : "", kmod);
#endif
    snprintf(info->compiler, sizeof info->compiler, "%s", FP8KV_GPU_COMPILER);
    snprintf(info->flags, sizeof info->flags, "%s", FP8KV_GPU_FLAGS);

    /* the probe: a kernel image for this device, and the paths its device pass compiled */
    buffer mask;
    rc = mask.alloc(2 * sizeof(unsigned));
    if (rc != 0)
        return rc;
    FP8KV_GPU_CHECK(hipMemset(mask.ptr, 0, 2 * sizeof(unsigned)));
    probe_kernel<<<1, 1>>>(mask.as<unsigned>());
    const hipError_t launch = hipGetLastError();
    if (launch != hipSuccess)
        return fp8kv_status_fail(FP8KV_UNAVAILABLE,
                                 "GPU %d (%s, %s): no kernel of this build runs on it: %s (build "
                                 "for its architecture)",
                                 index, info->name, info->target, hipGetErrorString(launch));
    unsigned got[2] = {0, 0};
    rc = mask.download(got, sizeof got);
    if (rc != 0)
        return rc;
    if (!(got[0] & 0x80000000u))
        return FP8KV_FAIL("the probe kernel did not run on GPU %d", index);
    info->codec_mask = got[0] & ~0x80000000u;
    info->decoder_mask = got[1];
    size_t used = 0;
    for (int c = 0; c < FP8KV_GPU_CODEC_COUNT; c++)
        if (info->codec_mask >> c & 1u)
            used += (size_t)snprintf(info->compiled + used, sizeof info->compiled - used, "%s%s",
                                     used ? " " : "", fp8kv_gpu_codecs[c].name);
    for (int d = FP8KV_GPU_DECODE_CUDA_FP8; d < FP8KV_GPU_DECODER_COUNT; d++) /* the vendor ones */
        if (info->decoder_mask >> d & 1u && used < sizeof info->compiled)
            used += (size_t)snprintf(info->compiled + used, sizeof info->compiled - used, "%s%s",
                                     used ? " " : "", fp8kv_gpu_decoders[d].name);
    g_device.open = 1;
    g_device.index = index;
    g_device.multiprocessors = info->multiprocessors;
    g_device.max_shared_per_block = shared;
    g_device.codec_mask = info->codec_mask;
    g_device.decoder_mask = info->decoder_mask;
    return FP8KV_OK;
}
