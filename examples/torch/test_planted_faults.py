"""Copies of the PyTorch example with a planted fault, on the GPU: each must be reported
nonconformant by fp8kv, in the cache and class the fault touches."""
import pytest

import fp8kv
import torch_engine as engine
from conftest import caches, scale_caches, tensor

FAULTS = {
    # fault: (profiles, the cache whose bytes differ, a text every failure report holds)
    "scale_ignored": (("e4m3fn_satfinite",), None, "key_cache["),
    "k_scale_for_v": (("e4m3fn_satfinite",), "value", "value_cache["),
    "padding_written": (("e4m3fn_satfinite",), None, "(unwritten)"),
    "fnuz_bytes": (("e4m3fn_satfinite", "e4m3fn_nan"), None, "cache["),
    "split_x_8": (("e4m3fn_satfinite",), "key", "key_cache["),
    "head0_scale": (("e4m3fn_satfinite",), None, "cache["),
}


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_planted_fault_is_reported(fault):
    profiles, cache, text = FAULTS[fault]
    caught = 0
    for profile in profiles:
        for c in fp8kv.kv_cases(profile):
            if fault == "split_x_8" and c.layout != "split_x":
                continue
            k, v = caches(c)
            ks, vs = scale_caches(c)
            engine.store(tensor(c.key), tensor(c.value), tensor(c.slot_mapping), k, v,
                         *c.store_scales, c.layout, c.profile, faults=(fault,), k_scale_cache=ks,
                         v_scale_cache=vs)
            j = fp8kv.judge_store(c, k, v, ks, vs, subject=f"torch-eager-{fault}")
            if j:
                continue
            caught += 1
            assert any(text in line for line in j.failures), j.text
            if cache == "value":
                assert j.cache_mismatches[0] == 0, j.text
            if cache == "key":
                assert j.cache_mismatches[1] == 0, j.text
    assert caught > 0, f"{fault} was never reported"
