"""The numpy decode of attention_engine.py in every declared arithmetic, judged by fp8kv: every
correct draw of implementation choices passes, on the golden cases and on the engine suite,
and every planted fault fails in every arithmetic (docs/DESIGN.md §5.3.1).

The engine suite's largest cases take seconds each in numpy: by default the tests run its
smaller cases, 3 to 8 — multi-token decode, prefill and chunked prefill and a sliding window
among them (FP8KV_ENGINE_CASES=all runs all of them, =0,2 a list)."""
import os

import numpy as np
import pytest

import attention_engine as engine
import fp8kv

PROFILES = ("e4m3fn_satfinite", "e5m2_inf", "e4m3fnuz_nan")
DRAWS = 3


def _engine_indices():
    chosen = os.environ.get("FP8KV_ENGINE_CASES", "3,4,5,6,7,8")
    count = len(fp8kv.kv_cases(PROFILES[0], suite="engine"))
    return list(range(count)) if chosen == "all" else [int(i) for i in chosen.split(",")]


def _applies(case, arithmetic):
    # a folded arithmetic folds one scale per sequence and head: not one per token
    return not (arithmetic.endswith("-folded") and case.scale_granularity == "token_head")


def _ratio(judgement):
    return float(judgement.checks[-1]["bound_ratio"])


@pytest.mark.fp8kv_profiles(*PROFILES)
@pytest.mark.parametrize("arithmetic", list(engine.PRESETS))
def test_correct_draws_pass_the_golden_cases(fp8kv_case, arithmetic):
    if not _applies(fp8kv_case, arithmetic):
        pytest.skip("a folded arithmetic takes scales per tensor or per head")
    for seed in range(DRAWS):
        rng = np.random.default_rng(seed) if seed else None
        out = engine.paged_decode(fp8kv_case, arithmetic, rng)
        fp8kv_case.judge_attention(out, arithmetic=arithmetic)


@pytest.mark.parametrize("index", _engine_indices())
@pytest.mark.parametrize("arithmetic", list(engine.PRESETS))
def test_correct_draws_pass_the_engine_suite(index, arithmetic):
    case = fp8kv.engine_case(PROFILES[0], index)
    out = engine.paged_decode(case, arithmetic, np.random.default_rng(100 + index))
    case.judge_attention(out, arithmetic=arithmetic)


def test_a_wrong_output_dtype_is_refused():
    case = fp8kv.kv_case(PROFILES[0], 0)
    out = engine.paged_decode(case, "bf16")
    with pytest.raises(fp8kv.Fp8kvError, match="bfloat16"):
        fp8kv.judge_attention(case, out.astype(np.float32), arithmetic="bf16")
    with pytest.raises(fp8kv.Fp8kvError, match="give a preset"):
        fp8kv.judge_attention(case, out, arithmetic="bf17")


# Faults a worst-case bound cannot see (DESIGN §5.3.1): a 1% softmax scale is within the
# rounding of fp8 P; an exp without the running maximum only shows where scores pass exp's f32
# range (the engine suite's large-score case).
INVISIBLE = {("softmax_scale_1pct", "fp8")}


@pytest.mark.parametrize("fault", engine.FAULTS)
@pytest.mark.parametrize("arithmetic", list(engine.PRESETS))
def test_every_planted_fault_fails(fault, arithmetic):
    if (fault, arithmetic) in INVISIBLE:
        pytest.skip("within the bound of a correct kernel (DESIGN §5.3.1)")
    cases = [c for c in fp8kv.kv_cases(PROFILES[0]) if _applies(c, arithmetic)]
    cases += [fp8kv.engine_case(PROFILES[0], i) for i in _engine_indices()]
    ratios = []
    for c in cases:
        out = engine.paged_decode(c, arithmetic, None, faults=(fault,))
        judgement = fp8kv.judge_attention(c, out, arithmetic=arithmetic)
        ratios.append(_ratio(judgement))
        if not judgement.conformant:
            return
    pytest.fail(f"{fault} under {arithmetic} passed every case (ratios {ratios})")


def test_the_engine_suite_refuses_what_it_does_not_judge():
    case = fp8kv.engine_case(PROFILES[0], 5)
    with pytest.raises(fp8kv.Fp8kvError, match="attention outputs only"):
        case.judge_store(np.zeros(4, np.uint8), np.zeros(4, np.uint8))
    with pytest.raises(fp8kv.Fp8kvError, match="unknown engine-suite case"):
        fp8kv.engine_case(PROFILES[0], 99)
    with pytest.raises(fp8kv.Fp8kvError, match="elements"):
        fp8kv.judge_attention(case, np.zeros(7, np.float32))


def test_packed_caches_are_the_engines_tensors():
    """kv_cache(): the two caches as the one tensor engines allocate, each half the cache."""
    case = fp8kv.engine_case(PROFILES[0], 3)  # hnd, FlashInfer's [num_blocks, 2, ...]
    assert case.packing == "block_first"
    kv = case.kv_cache()
    assert kv.shape == (case.num_blocks, 2) + case.key_cache.shape[1:]
    assert np.array_equal(kv[:, 0], case.key_cache) and np.array_equal(kv[:, 1], case.value_cache)
    kv_first = case.kv_cache("kv_first")  # vLLM's [2, num_blocks, ...]
    assert kv_first.shape == (2,) + case.key_cache.shape
    for packing, tensor in (("block_first", kv), ("kv_first", kv_first)):
        k, v = fp8kv.unpack_caches(tensor, packing)
        assert np.array_equal(k, case.key_cache) and np.array_equal(v, case.value_cache)
    with pytest.raises(fp8kv.Fp8kvError, match="unknown packing"):
        case.kv_cache("interleaved")
    with pytest.raises(fp8kv.Fp8kvError, match="2 along axis 1"):
        fp8kv.unpack_caches(kv_first[0], "block_first")


def test_the_golden_output_is_an_attribute_of_the_case():
    """reference(arithmetic): the exact output and the interval judge_attention uses; the
    exact values rounded to the output dtype pass, and one output moved past its interval
    fails."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    case = fp8kv.engine_case(PROFILES[0], 8)  # a window: 305 query rows
    exact, lo, hi = case.reference("bf16")
    assert exact.shape == (case.query_rows, case.num_q_heads, case.head_size)
    assert np.all((lo <= exact) & (exact <= hi)) and np.all(lo < hi)
    out = exact.astype(np.float32).astype(ml_dtypes.bfloat16)
    assert fp8kv.judge_attention(case, out, arithmetic="bf16").conformant
    out[0, 0, 0] = ml_dtypes.bfloat16(hi[0, 0, 0] + (hi[0, 0, 0] - lo[0, 0, 0]))
    assert not fp8kv.judge_attention(case, out, arithmetic="bf16").conformant
    with pytest.raises(fp8kv.Fp8kvError, match="arithmetic"):
        case.reference("bf17")
