#!/usr/bin/env python3
"""Host round trips of torch.sort, the peer of `Sorter::sort` on host slices.

For each size, random 32-bit keys (and, with --pairs, 32-bit values moved by the sort's
permutation) go from host memory to the GPU, are sorted there, and come back to host memory,
timed on the host clock around the whole trip:

  pageable: a CPU tensor in ordinary memory, `.cuda()`, `torch.sort`, `.cpu()`;
  pinned:   CPU tensors in page-locked memory, `.cuda(non_blocking=True)`, `torch.sort`,
            `copy_(..., non_blocking=True)` into a pinned result, then a synchronize.

Median of --runs timed trips after one untimed; fresh random keys before every trip
(untimed); every result checked for order (and, for pairs, that each value followed its key).

  python3 scripts/torch_roundtrip.py --max-log 28 --runs 5 [--pairs]
"""

import argparse
import statistics
import time

import torch


def trip(keys, values, pinned_out):
    """One host -> GPU -> host sort; returns the sorted keys (and values) on the host."""
    non_blocking = pinned_out is not None
    dk = keys.cuda(non_blocking=non_blocking)
    sorted_keys, order = torch.sort(dk)
    sorted_values = None
    if values is not None:
        dv = values.cuda(non_blocking=non_blocking)
        sorted_values = torch.gather(dv, 0, order)
    if pinned_out is None:
        out_k = sorted_keys.cpu()
        out_v = sorted_values.cpu() if sorted_values is not None else None
    else:
        out_k, out_v = pinned_out
        out_k.copy_(sorted_keys, non_blocking=True)
        if out_v is not None:
            out_v.copy_(sorted_values, non_blocking=True)
        torch.cuda.synchronize()
    return out_k, out_v


def measure(n, runs, pairs, pinned):
    gen = torch.Generator().manual_seed(n)
    info = torch.iinfo(torch.int32)
    keys = torch.empty(n, dtype=torch.int32, pin_memory=pinned)
    values = torch.empty(n, dtype=torch.int32, pin_memory=pinned) if pairs else None
    out = None
    if pinned:
        out = (
            torch.empty(n, dtype=torch.int32, pin_memory=True),
            torch.empty(n, dtype=torch.int32, pin_memory=True) if pairs else None,
        )
    times = []
    for run in range(runs + 1):
        keys.copy_(torch.randint(info.min, info.max, (n,), dtype=torch.int32, generator=gen))
        if pairs:
            values.copy_(keys ^ 0x5A5A5A5A)
        torch.cuda.synchronize()
        start = time.perf_counter()
        out_k, out_v = trip(keys, values, out)
        ms = (time.perf_counter() - start) * 1e3
        if n > 1 and not bool((out_k[1:] >= out_k[:-1]).all()):
            raise SystemExit(f"torch result not sorted at n={n}")
        if pairs and not bool(((out_k ^ 0x5A5A5A5A) == out_v).all()):
            raise SystemExit(f"torch values did not follow their keys at n={n}")
        if run > 0:
            times.append(ms)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--min-log", type=int, default=10)
    parser.add_argument("--max-log", type=int, default=24)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--pairs", action="store_true")
    args = parser.parse_args()
    if args.runs < 1:
        raise SystemExit("--runs must be at least 1")
    torch.cuda.init()
    print(f"torch {torch.__version__} on {torch.cuda.get_device_name(0)}; "
          f"{'u32-wide keys + values' if args.pairs else 'u32-wide keys'} (int32)")
    print(f"{'n':>10} {'pageable ms':>12} {'pinned ms':>12}")
    for log in range(args.min_log, args.max_log + 1):
        if log > 16 and log % 2:
            continue
        n = 1 << log
        pageable = measure(n, args.runs, args.pairs, pinned=False)
        pinned = measure(n, args.runs, args.pairs, pinned=True)
        print(f"{n:>10} {pageable:>12.3f} {pinned:>12.3f}", flush=True)


if __name__ == "__main__":
    main()
