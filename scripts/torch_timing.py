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


# The device-side hold queued before each timed call, in device clock cycles (as fp8kv bench's
# own figures): the events then time the device's work, not Python's and the dispatcher's
# latency in launching it. A call whose start event the device had already reached when fn
# returned is timed again with twice the hold (up to 256 times the first).
HOLD_CYCLES = 200000


def time_ms(torch, fn, iterations):
    """(median, min) of fn's time in ms over `iterations` CUDA-event-timed calls, after 2
    untimed ones, each behind the hold."""
    for _ in range(2):
        fn()
    torch.cuda.synchronize()
    hold = HOLD_CYCLES
    times = []
    for _ in range(iterations):
        while True:
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            torch.cuda._sleep(hold)
            start.record()
            fn()
            late = start.query()
            end.record()
            end.synchronize()
            if not late or hold >= HOLD_CYCLES << 8:
                break
            hold *= 2
        times.append(start.elapsed_time(end))
    return statistics.median(times), min(times)
