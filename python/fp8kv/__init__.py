"""fp8kv: judge fp8 KV-cache kernels against an exact MPFR oracle's golden cases.

    import fp8kv
    for case in fp8kv.kv_cases("e4m3fn_satfinite"):
        k, v = case.new_caches()
        my_store(case.key, case.value, case.slot_mapping, k, v, case.k_scale, case.v_scale)
        print(fp8kv.judge_store(case, k, v))      # or case.judge_store(k, v) in a test

The judging, encoding and decoding are the C library's (the same code as `fp8kv judge-kv`);
see docs/python.md.
"""
from ._native import Fp8kvError
from .cases import (EngineCase, KVCase, default_vectors, engine_case, kv_case, kv_cases,
                    pack_caches, profiles, unpack_caches)
from .codec import MODELS, decode, encode
from .judge import (Judgement, NonconformantError, declared_arithmetic, judge_attention,
                    judge_gather, judge_store)

__all__ = ["EngineCase", "Fp8kvError", "Judgement", "KVCase", "engine_case", "MODELS", "NonconformantError", "decode",
           "declared_arithmetic", "default_vectors", "encode", "judge_attention", "judge_gather", "judge_store",
           "kv_case", "kv_cases", "pack_caches", "profiles", "unpack_caches"]
__version__ = "0.1.0"
