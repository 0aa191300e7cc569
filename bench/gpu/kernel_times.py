#!/usr/bin/env python3
"""bench/gpu/kernel_times.py CSV STEPS [TOP]: sums the kernel durations that
`ncu --metrics gpu__time_duration.sum --csv` wrote for STEPS timed training steps (bench/gpu/run.sh,
stage kernel_times) by kernel name: the device time one step spends in each kind of kernel, and the
sum against the step's wall time (the rest is launch gaps, host waits and copies)."""
import collections
import csv
import sys


def short(name):
    """A kernel's name without its template and parameter lists."""
    depth, out = 0, []
    for ch in name:
        if ch in "<(":
            depth += 1
        elif ch in ">)":
            depth -= 1
        elif depth == 0:
            out.append(ch)
    return "".join(out).replace("void ", "").strip()[:90]


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit("usage: kernel_times.py CSV STEPS [TOP]")
    steps = float(sys.argv[2])
    top = int(sys.argv[3]) if len(sys.argv) == 4 else 25
    with open(sys.argv[1]) as f:
        lines = [ln for ln in f if ln.startswith('"')]  # ncu's own messages are not CSV rows
    total, count = collections.Counter(), collections.Counter()
    for row in csv.DictReader(lines):
        if row.get("Metric Name") != "gpu__time_duration.sum":
            continue
        scale = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3, "s": 1e6,
                 "second": 1e6}.get(row.get("Metric Unit", ""), None)
        if scale is None:
            continue
        v = float(row["Metric Value"].replace(",", "")) * scale
        k = short(row["Kernel Name"])
        total[k] += v
        count[k] += 1
    us = sum(total.values())
    n = sum(count.values())
    print(f"{n} kernels, {us / 1e3:.3f} ms of kernel time over {steps:g} steps: "
          f"{n / steps:.0f} kernels and {us / steps / 1e3:.3f} ms per step")
    print(f"{'us/step':>9} {'share':>6} {'calls/step':>10}  kernel")
    for k, v in total.most_common(top):
        print(f"{v / steps:9.1f} {100 * v / us:5.1f}% {count[k] / steps:10.1f}  {k}")


if __name__ == "__main__":
    main()
