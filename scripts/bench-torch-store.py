#!/usr/bin/env python3
"""bench-torch-store.py — the eager PyTorch baseline of the fp8 KV store.

The same shape and data volume as `fp8kv bench --target hip`'s store: 65536 tokens x 8 heads
x 128 of bf16 key and value (256 MiB together), a per-tensor scale, a shuffled slot mapping
into an NHD cache [blocks, 16, heads, 128]. What an engine does without a fused kernel:
    q = (x.float() / s).to(torch.float8_e4m3fn)       # per tensor, key and value
    cache.view(-1, heads, head)[slots] = q            # the scatter by slot
timed with CUDA events (median of 20 after 2 warm-ups), next to a device-to-device copy of
the bf16 input measured the same way. Prints `bench: key=value` lines like fp8kv bench.
Usage: python3 scripts/bench-torch-store.py [--tokens N] [--iterations N]
"""
import argparse
import sys

from torch_timing import import_torch, time_ms as timed

torch = import_torch("bench-torch-store")


def time_ms(fn, iterations):
    return timed(torch, fn, iterations)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokens", type=int, default=65536)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--head-size", type=int, default=128)
    ap.add_argument("--block-size", type=int, default=16)
    ap.add_argument("--iterations", type=int, default=20)
    a = ap.parse_args()
    if not torch.cuda.is_available():
        print("bench-torch-store: no CUDA device for torch", file=sys.stderr)
        return 3
    dev = torch.device("cuda")
    g = torch.Generator(device="cpu").manual_seed(0x5EED)
    tokens, heads, head, block = a.tokens, a.heads, a.head_size, a.block_size
    blocks = (tokens + block - 1) // block
    key = (torch.rand(tokens, heads, head, generator=g) * 6 - 3).to(torch.bfloat16).to(dev)
    value = (torch.rand(tokens, heads, head, generator=g) * 6 - 3).to(torch.bfloat16).to(dev)
    perm = torch.randperm(blocks, generator=g)
    t = torch.arange(tokens)
    slots = (perm[t // block] * block + t % block).to(torch.int64).to(dev)
    k_cache = torch.empty(blocks, block, heads, head, dtype=torch.float8_e4m3fn, device=dev)
    v_cache = torch.empty_like(k_cache)
    k_scale = torch.tensor(0.0123, dtype=torch.float32, device=dev)
    v_scale = torch.tensor(0.0123, dtype=torch.float32, device=dev)

    def store():
        k_cache.view(-1, heads, head)[slots] = (key.float() / k_scale).to(torch.float8_e4m3fn)
        v_cache.view(-1, heads, head)[slots] = (value.float() / v_scale).to(torch.float8_e4m3fn)

    src = torch.cat([key.flatten(), value.flatten()])
    dst = torch.empty_like(src)

    def copy():
        dst.copy_(src)

    elems = tokens * heads * head
    store_bytes = elems * (2 * 2 + 2 * 1) + tokens * 8  # bf16 K+V in, fp8 K+V out, slots
    copy_bytes = 2 * src.numel() * src.element_size()
    store_ms, store_min = time_ms(store, a.iterations)
    copy_ms, copy_min = time_ms(copy, a.iterations)
    store_gbps = store_bytes / (store_ms * 1e-3) / 1e9
    copy_gbps = copy_bytes / (copy_ms * 1e-3) / 1e9
    print(f"torch {torch.__version__} on {torch.cuda.get_device_name(dev)}")
    print(f"torch eager store (x.float()/s).to(float8_e4m3fn) + scatter, {tokens} tokens x "
          f"{heads} x {head}, bf16 in ({elems * 4 / 2**20:.0f} MiB K+V)")
    print(f"  {store_ms:.3f} ms median (min {store_min:.3f}), {store_gbps:.1f} GB/s "
          f"(same bytes as fp8kv's store)")
    print(f"torch device-to-device copy of {src.numel() * 2 / 2**20:.0f} MiB: {copy_ms:.3f} ms, "
          f"{copy_gbps:.1f} GB/s")
    print(f"bench: torch_store_ms={store_ms:.4f} torch_store_gbps={store_gbps:.2f} "
          f"torch_copy_gbps={copy_gbps:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
