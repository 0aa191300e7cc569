"""A change against its baseline: two minidl-bench-step binaries (say, a build of the parent
revision and one of the change) alternated in one run, each workload its own process, and the
ratio B / A per workload with the geometric mean. What each change measured is recorded in
bench/README.md (performance log).

    python3 ab.py --a BIN --b BIN [--reps N] [--threads 1,2] [--models a,b] [--precisions f32,bf16,fp16]
"""
import argparse
import math
import statistics
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare import alternate_steps, cpu_model  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--a", required=True, help="minidl-bench-step of the baseline")
    ap.add_argument("--b", required=True, help="minidl-bench-step of the change")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--threads", default="1")
    ap.add_argument("--models", default="mlp,lenet,cnn,resnet20")
    ap.add_argument("--precisions", default="f32,bf16,fp16")
    a = ap.parse_args()
    models, precisions = a.models.split(","), a.precisions.split(",")
    threads = [int(t) for t in a.threads.split(",")]
    cpu = cpu_model()[0]
    load = open("/proc/loadavg").read().split()[:3]
    print(f"CPU: {cpu}; load before: {' '.join(load)}", flush=True)

    sides = [("A", a.a, {}), ("B", a.b, {})]
    workloads = [(m, prec, t) for t in threads for m in models for prec in precisions]
    results = alternate_steps(sides, workloads, a.reps)

    for title, pick in (("median", statistics.median), ("best", max)):
        print(f"\nsamples/s, {title} of {a.reps} alternated repetitions\n")
        print("| threads | model | precision | A | B | B / A |")
        print("| --- | --- | --- | --- | --- | --- |")
        logs = []
        for t in threads:
            for m in models:
                for prec in precisions:
                    va, vb = pick(results[((m, prec, t), "A")]), pick(results[((m, prec, t), "B")])
                    logs.append(math.log(vb / va))
                    print(f"| {t} | {m} | {prec} | {va:.0f} | {vb:.0f} | {vb / va:.2f}x |")
        print(f"| | geometric mean | | | | {math.exp(sum(logs) / len(logs)):.3f}x |")


if __name__ == "__main__":
    main()
