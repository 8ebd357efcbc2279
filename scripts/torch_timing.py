"""torch_timing.py — how the torch baselines of `fp8kv bench` are timed (imported by
scripts/bench-torch-store.py and scripts/bench-torch-attention.py, which run from scripts/)."""
import statistics
import sys


def import_torch(script):
    """torch, or exit 3 with a message naming script when it is not installed."""
    try:
        import torch
    except ImportError:
        print(f"{script}: torch is not installed", file=sys.stderr)
        sys.exit(3)
    return torch


def time_ms(torch, fn, iterations):
    """(median, min) of fn's time in ms over `iterations` CUDA-event-timed calls, after 2
    untimed ones."""
    for _ in range(2):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iterations):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times), min(times)
