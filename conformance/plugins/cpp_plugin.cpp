// cpp_plugin.cpp — a codec plugin and a KV-kernel descriptor written in C++, compiled with
// -Wall -Wextra -Werror: the ABI headers work from C++ through the fp8kv_codec_v1_t and
// fp8kv_kv_kernels_v1_t names (the functions fp8kv_codec_v1 and fp8kv_kv_kernels_v1 hide the
// structs of the same names there). A compile test: its codec gives code 0 for everything.
#include <cstddef>
#include <cstdint>

#include "fp8kv/kv_plugin.h"
#include "fp8kv/plugin.h"

namespace {

void encode_zero(const float *, size_t n, float, uint8_t *q)
{
    for (size_t i = 0; i < n; i++)
        q[i] = 0;
}

int store_nothing(void *, const fp8kv_kv_store_args_v1 *)
{
    return 1; // cannot run: a compile test only
}

const fp8kv_codec_v1_t codec = {FP8KV_CODEC_ABI_VERSION, "cpp-zero", "e4m3fn", "satfinite",
                                encode_zero, nullptr};

fp8kv_kv_kernels_v1_t make_kernels()
{
    fp8kv_kv_kernels_v1_t k{};
    k.abi_version = FP8KV_KV_ABI_VERSION;
    k.name = "cpp-kv";
    k.memory = FP8KV_KV_MEMORY_HOST;
    k.store = store_nothing;
    return k;
}
const fp8kv_kv_kernels_v1_t kernels = make_kernels();

} // namespace

extern "C" __attribute__((visibility("default"))) const fp8kv_codec_v1_t *fp8kv_codec_v1(void)
{
    return &codec;
}

extern "C" __attribute__((visibility("default"))) const fp8kv_kv_kernels_v1_t *
fp8kv_kv_kernels_v1(void)
{
    return &kernels;
}
