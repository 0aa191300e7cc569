"""The price of run-time CPU kernel choice: minidl-bench-step from a default build (kernel sets
chosen at run time, ops/cpu_isa.h) against the same source built with MINIDL_NATIVE=ON
(-march=native, one set), alternated in one run, and the lower sets of the default build
(MINIDL_MAX_CPU_ISA) beside them to show what each level buys. bench/compare/isa_cost.sh builds
both binaries and calls this; what it measured is recorded in bench/README.md.

    python3 isa_cost.py --dispatch BIN --native BIN [--reps N] [--models a,b] [--precisions f32,bf16]
"""
import argparse
import json
import math
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare import alternate_steps, cpu_model, run_measured  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dispatch", required=True, help="minidl-bench-step of the default build")
    ap.add_argument("--native", required=True, help="minidl-bench-step of a MINIDL_NATIVE=ON build")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--models", default="mlp,lenet,cnn,resnet20")
    ap.add_argument("--precisions", default="f32,bf16")
    a = ap.parse_args()
    models, precisions = a.models.split(","), a.precisions.split(",")

    # The configurations: native; run-time choice uncapped; then each lower set the CPU has.
    probe = run_measured([a.dispatch, "--one", "mlp", "f32", "2", "1"])
    best = probe["cpu_kernels"].split()[0]
    rank = {"baseline": 0, "avx2": 1, "avx512": 2}
    configs = [("native", a.native, {}), (f"run-time ({best})", a.dispatch, {})]
    configs += [(f"capped {s}", a.dispatch, {"MINIDL_MAX_CPU_ISA": s}) for s in ("avx2", "baseline") if rank[s] < rank[best]]
    cpu = cpu_model()[0]
    print(f"CPU: {cpu}; kernels of the default build: {probe['cpu_kernels']}", flush=True)

    workloads = [(m, prec, None) for m in models for prec in precisions]
    results = {(w[0], w[1], label): v for (w, label), v in alternate_steps(configs, workloads, a.reps).items()}

    labels = [c[0] for c in configs]
    for title, pick in (("median", statistics.median), ("best", max)):
        print(f"\nsamples/s, {title} of {a.reps} alternated repetitions (ratio to native)\n")
        print("| model | precision | " + " | ".join(labels) + " |")
        print("| --- | --- | " + " | ".join("---" for _ in labels) + " |")
        logs = {label: [] for label in labels}
        for m in models:
            for prec in precisions:
                native = pick(results[(m, prec, "native")])
                cells = []
                for label in labels:
                    v = pick(results[(m, prec, label)])
                    logs[label].append(math.log(v / native))
                    cells.append(f"{v:.0f}" if label == "native" else f"{v:.0f} ({v / native:.2f}x)")
                print(f"| {m} | {prec} | " + " | ".join(cells) + " |")
        print("| geometric mean of the ratios | | " +
              " | ".join(f"{math.exp(sum(l) / len(l)):.3f}x" for l in logs.values()) + " |")
    print(json.dumps({"cpu": cpu, "kernels": probe["cpu_kernels"], "reps": a.reps,
                      "results": {f"{k[0]}/{k[1]}/{k[2]}": v for k, v in results.items()}}))


if __name__ == "__main__":
    main()
