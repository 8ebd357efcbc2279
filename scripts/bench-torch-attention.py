#!/usr/bin/env python3
"""bench-torch-attention.py — torch's own decode attention, the baseline `fp8kv bench --target
hip` prints its attention figures against (it runs this script when torch imports).

For each shape SEQSxLEN: one decode step, torch.nn.functional.scaled_dot_product_attention with
query [seqs, q_heads, 1, head] and key/value [seqs, kv_heads, len, head] in bf16 (contiguous,
not paged: the best case for torch), grouped-query heads (enable_gqa), on the flash-attention
backend where torch has it for these arguments (else torch's default choice, named). Timed
with CUDA events: the median of --iterations after 2 warm-ups. Prints one line per shape:

    bench: torch_sdpa shape=8x32768 ms=0.2640 gbps=4066.1 backend=flash

(gbps: the K and V bytes over the time). With --prefill, a causal prefill instead: query
[seqs, q_heads, len, head], is_causal, and the line is

    bench: torch_sdpa_prefill shape=1x8192 ms=1.2345 tflops=450.1 backend=flash

(tflops: the causal products, 4 x q_heads x head x len (len + 1) / 2 a sequence, over the time).
Exit 3 when torch or a CUDA device is missing.
Usage: bench-torch-attention.py [--shapes 8x32768,8x1024,...] [--kv-heads 8] [--q-heads 32]
                                [--head 128] [--iterations 20] [--prefill]
"""
import argparse
import sys

from torch_timing import import_torch, time_ms as timed

torch = import_torch("bench-torch-attention")
F = torch.nn.functional


def time_ms(fn, iterations):
    return timed(torch, fn, iterations)[0]


def sdpa(q, k, v, backend, causal=False):
    """The attention call, on the named backend (None: torch's choice)."""
    if backend is None:
        return F.scaled_dot_product_attention(q, k, v, enable_gqa=True, is_causal=causal)
    from torch.nn.attention import sdpa_kernel

    with sdpa_kernel(backend):
        return F.scaled_dot_product_attention(q, k, v, enable_gqa=True, is_causal=causal)


def shape_of(text):
    seqs, length = text.lower().split("x")
    return int(seqs), int(length)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shapes", default="8x32768")
    ap.add_argument("--kv-heads", type=int, default=8)
    ap.add_argument("--q-heads", type=int, default=32)
    ap.add_argument("--head", type=int, default=128)
    ap.add_argument("--iterations", type=int, default=20)
    ap.add_argument("--prefill", action="store_true",
                    help="a causal prefill of every token instead of one decode step")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("bench-torch-attention: torch has no CUDA device", file=sys.stderr)
        return 3
    try:
        from torch.nn.attention import SDPBackend

        backends = [("flash", SDPBackend.FLASH_ATTENTION), ("default", None)]
    except ImportError:
        backends = [("default", None)]
    print(f"torch {torch.__version__} on {torch.cuda.get_device_name()}")
    for text in args.shapes.split(","):
        seqs, length = shape_of(text)
        gen = torch.Generator(device="cuda").manual_seed(7)
        queries = length if args.prefill else 1
        q = torch.randn(seqs, args.q_heads, queries, args.head, device="cuda",
                        dtype=torch.bfloat16, generator=gen)
        k = torch.randn(seqs, args.kv_heads, length, args.head, device="cuda",
                        dtype=torch.bfloat16, generator=gen)
        v = torch.randn_like(k)
        for name, backend in backends:
            try:
                sdpa(q, k, v, backend, args.prefill)
            except RuntimeError:
                continue  # this backend does not take these arguments
            ms = time_ms(lambda: sdpa(q, k, v, backend, args.prefill), args.iterations)
            if args.prefill:
                flops = 4 * seqs * args.q_heads * args.head * length * (length + 1) / 2
                print(f"bench: torch_sdpa_prefill shape={seqs}x{length} ms={ms:.4f} "
                      f"tflops={flops / (ms * 1e-3) / 1e12:.1f} backend={name}")
            else:
                gbps = 2 * k.numel() * k.element_size() / (ms * 1e-3) / 1e9
                print(f"bench: torch_sdpa shape={seqs}x{length} ms={ms:.4f} gbps={gbps:.1f} "
                      f"backend={name}")
            break
        del q, k, v
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
