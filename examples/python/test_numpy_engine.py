"""The numpy engine of numpy_engine.py judged on every golden case through fp8kv's pytest
plugin: this is what an engine's own test file looks like."""
import numpy as np
import pytest

import numpy_engine as engine

PROFILES = ("e4m3fn_satfinite", "e4m3fn_nan", "e4m3fnuz_satfinite", "e4m3fnuz_nan")


@pytest.mark.fp8kv_profiles(*PROFILES)
def test_store(fp8kv_case):
    c = fp8kv_case
    k, v = c.new_caches()
    k_scales, v_scales = c.new_scale_caches()  # per token and head; None otherwise
    engine.store(c.key, c.value, c.slot_mapping, k, v, *c.store_scales, c.layout, c.profile,
                 k_scale_cache=k_scales, v_scale_cache=v_scales)
    c.judge_store(k, v, k_scales, v_scales)


@pytest.mark.fp8kv_profiles(*PROFILES)
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_gather(fp8kv_case, dtype):
    c = fp8kv_case
    out_dtype = {"float32": np.float32, "float16": np.float16}.get(dtype)
    if out_dtype is None:
        import ml_dtypes
        out_dtype = ml_dtypes.bfloat16
    rows = engine.gather(c.key_cache, c.value_cache, c.block_table, c.seq_lens, *c.read_scales,
                         c.layout, c.profile, c.num_heads, c.head_size, out_dtype)
    c.judge_gather(rows)


@pytest.mark.fp8kv_profiles(*PROFILES)
def test_attention(fp8kv_case):
    c = fp8kv_case
    out = engine.paged_attention(c.query, c.key_cache, c.value_cache, c.block_table, c.seq_lens,
                                 *c.read_scales, c.softmax_scale, c.layout, c.profile)
    c.judge_attention(out)
