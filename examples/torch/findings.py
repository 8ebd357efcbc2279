"""What fp8kv finds in the ways engines write these kernels that the examples avoid: each
variant judged on every golden case it applies to, its judgement printed (a findings report
for reports/sm_90/python/, not a test). Run on the GPU machine by scripts/gpu-run.

  torch-store-python-scale  (x.float() / k_scale).to(fp8) with k_scale a Python float
  torch-row-scale-python-max  per-token scales amax / 448 with 448 a Python float
  torch-read-nan-profiles   cache.view(fp8).float() * scale where caches hold NaN codes
  triton-store-fast-div     the Triton store with `/` instead of tl.div_rn
"""
import fp8kv
import torch

import torch_engine as engine
import triton_kernels
from conftest import caches, scale_caches, tensor


def report(name, judgements):
    bad = [j for j in judgements if not j]
    print(f"== {name}: {len(judgements) - len(bad)} of {len(judgements)} cases conformant")
    for j in bad:
        print(j.text)


def main():
    profiles = ("e4m3fn_satfinite", "e4m3fn_nan", "e4m3fnuz_satfinite", "e4m3fnuz_nan")
    judged = []
    for profile in profiles:
        for c in fp8kv.kv_cases(profile):
            if c.scale_granularity != "tensor":
                continue
            k, v = caches(c)
            engine.store(tensor(c.key), tensor(c.value), tensor(c.slot_mapping), k, v, c.k_scale,
                         c.v_scale, c.layout, c.profile, scale_as="python")
            judged.append(fp8kv.judge_store(c, k, v, subject="torch-store-python-scale"))
    report("torch-store-python-scale", judged)

    judged = []
    for profile in profiles:
        for c in fp8kv.kv_cases(profile):
            if c.scale_granularity != "token_head":
                continue
            k, v = caches(c)
            ks, vs = scale_caches(c)
            engine.store(tensor(c.key), tensor(c.value), tensor(c.slot_mapping), k, v, None, None,
                         c.layout, c.profile, scale_as="python", k_scale_cache=ks,
                         v_scale_cache=vs)
            judged.append(fp8kv.judge_store(c, k, v, ks, vs, subject="torch-row-scale-python-max"))
    report("torch-row-scale-python-max", judged)

    judged = []
    for profile in ("e4m3fn_nan", "e4m3fnuz_nan"):
        for c in fp8kv.kv_cases(profile):
            rows = engine.gather(tensor(c.key_cache), tensor(c.value_cache),
                                 tensor(c.block_table), c.seq_lens, *c.read_scales,
                                 c.layout, c.profile, c.num_heads, c.head_size, torch.float32)
            judged.append(fp8kv.judge_gather(c, rows, subject="torch-read"))
    report("torch-read-nan-profiles", judged)

    judged = []
    for c in fp8kv.kv_cases("e4m3fn_satfinite"):
        if c.layout != "nhd" or c.scale_granularity != "tensor":
            continue
        k, v = caches(c)
        triton_kernels.store(tensor(c.key), tensor(c.value), tensor(c.slot_mapping), k, v,
                             c.k_scale, c.v_scale, div="fast")
        judged.append(fp8kv.judge_store(c, k, v, subject="triton-store-fast-div"))
    report("triton-store-fast-div", judged)


if __name__ == "__main__":
    main()
