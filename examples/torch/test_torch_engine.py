"""PyTorch eager KV-cache kernels on the GPU, judged on every golden case through the fp8kv Python
package and its pytest plugin (run on the GPU machine by scripts/gpu-run)."""
import pytest
import torch

import torch_engine as engine
from conftest import caches, scale_caches, tensor

TORCH_PROFILES = ("e4m3fn_satfinite", "e4m3fn_nan", "e4m3fnuz_satfinite", "e4m3fnuz_nan")
# torch's fp8 -> float conversion gives 0x7fffffff for every NaN code (sign and payload lost):
# its reads are judged where the caches hold no NaN code; findings.py shows the others
READ_PROFILES = ("e4m3fn_satfinite", "e4m3fnuz_satfinite")


@pytest.mark.fp8kv_profiles(*TORCH_PROFILES)
def test_torch_store(fp8kv_case):
    c = fp8kv_case
    k, v = caches(c)
    ks, vs = scale_caches(c)
    engine.store(tensor(c.key), tensor(c.value), tensor(c.slot_mapping), k, v, *c.store_scales,
                 c.layout, c.profile, k_scale_cache=ks, v_scale_cache=vs)
    c.judge_store(k, v, ks, vs, subject="torch-eager")


@pytest.mark.fp8kv_profiles(*READ_PROFILES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_torch_gather(fp8kv_case, dtype):
    c = fp8kv_case
    rows = engine.gather(tensor(c.key_cache), tensor(c.value_cache), tensor(c.block_table),
                         c.seq_lens, *c.read_scales, c.layout, c.profile, c.num_heads,
                         c.head_size, dtype)
    c.judge_gather(rows, subject="torch-eager")


@pytest.mark.fp8kv_profiles(*READ_PROFILES)
def test_torch_attention(fp8kv_case):
    c = fp8kv_case
    out = engine.paged_attention(tensor(c.query), tensor(c.key_cache), tensor(c.value_cache),
                                 tensor(c.block_table), c.seq_lens, *c.read_scales,
                                 c.softmax_scale, c.layout, c.profile)
    c.judge_attention(out, subject="torch-eager")
