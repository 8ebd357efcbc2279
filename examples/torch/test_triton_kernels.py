"""Triton KV-cache kernels on the GPU (triton_kernels.py), judged on every golden case through the
fp8kv Python package and its pytest plugin (run on the GPU machine by scripts/gpu-run)."""
import pytest

from conftest import caches, tensor

triton_kernels = pytest.importorskip("triton_kernels")


@pytest.mark.fp8kv_profiles("e4m3fn_satfinite")
def test_triton_store(fp8kv_case):
    c = fp8kv_case
    if c.layout != "nhd" or c.scale_granularity != "tensor":
        pytest.skip("the Triton example writes the NHD layout with per-tensor scales")
    k, v = caches(c)
    triton_kernels.store(tensor(c.key), tensor(c.value), tensor(c.slot_mapping), k, v, c.k_scale,
                         c.v_scale, div="rn")
    c.judge_store(k, v, subject="triton-store")


@pytest.mark.fp8kv_profiles("e4m3fn_satfinite", "e4m3fn_nan")
def test_triton_decode(fp8kv_case):
    c = fp8kv_case
    if c.layout != "nhd" or c.scale_granularity != "tensor":
        pytest.skip("the Triton example reads the NHD layout with per-tensor scales")
    out = triton_kernels.paged_decode(tensor(c.query), tensor(c.key_cache), tensor(c.value_cache),
                                      tensor(c.block_table), tensor(c.seq_lens), c.k_scale,
                                      c.v_scale, c.softmax_scale)
    c.judge_attention(out, subject="triton-decode")
