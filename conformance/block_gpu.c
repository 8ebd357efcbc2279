/* block_gpu.c — the GPU block codec (kernels/hip/block.hip) as a block subject
 * (fp8kv/block_judge.h), where the build has a GPU target. */
#include "fp8kv/block_judge.h"
#include "fp8kv/diag.h"

int fp8kv_block_subject_gpu(const struct fp8kv_block_format *f, enum fp8kv_block_rule rule,
                            enum fp8kv_block_model model, int device,
                            struct fp8kv_block_subject *out)
{
    (void)f, (void)rule, (void)model, (void)device, (void)out;
    return fp8kv_fail("this fp8kv was built without a GPU target (configure with -DFP8KV_GPU=cuda "
                      "or hip)");
}
