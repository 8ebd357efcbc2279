"""What the Triton store gives with the `/` operator instead of tl.div_rn: every golden NHD case
of e4m3fn_satfinite judged by fp8kv (a finding report, not a test: it prints each judgement)."""
import fp8kv
import triton_kernels
from conftest import caches, tensor

if __name__ == "__main__":
    for div in ("rn", "fast"):
        for c in fp8kv.kv_cases("e4m3fn_satfinite"):
            if c.layout != "nhd":
                continue
            k, v = caches(c)
            triton_kernels.store(tensor(c.key), tensor(c.value), tensor(c.slot_mapping), k, v,
                                 c.k_scale, c.v_scale, div=div)
            j = fp8kv.judge_store(c, k, v, subject=f"triton-store-div-{div}")
            print(f"== div={div}")
            print(j.text)
