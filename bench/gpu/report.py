#!/usr/bin/env python3
"""Tables of bench/gpu/run.sh's comparisons with PyTorch, from the JSON lines bench/gpu/versus_torch.sh
collected (standard library only):

    python3 bench/gpu/report.py steps DIR   # DIR/steps_r*_{minidl,pytorch}.jsonl -> DIR/steps.md
    python3 bench/gpu/report.py conv DIR    # DIR/conv_layout_{minidl,pytorch}.jsonl -> DIR/conv_layout.md

Each prints the table and ends with one line starting RESULT (run.sh's summary quotes it).
"""
import glob
import json
import os
import re
import statistics
import sys

# The step-time targets (bench/README.md, "The CUDA check on a GPU machine"): minidl's samples/s over
# PyTorch's with torch.autocast + GradScaler (the fp16 rows). (ratio, strictly greater?)
TARGETS = {("mlp", 128): (1.0, True), ("mlp", 1024): (1.0, False), ("resnet20", 128): (1 / 1.2, False)}
# cuDNN's NHWC counts as faster when PyTorch's channels-last total is under this fraction of its NCHW.
NHWC_GAIN = 0.9


def read_jsonl(path):
    rows = []
    if not os.path.exists(path):
        return rows
    with open(path, errors="replace") as f:
        for line in f:
            line = line.strip()
            if line.startswith("{"):
                try:
                    rows.append(json.loads(line))
                except ValueError:
                    pass
    return rows


def fmt(v):
    return "n/a" if v is None else (f"{v:.0f}" if v >= 100 else f"{v:.3g}")


def spread(vals):
    if not vals:
        return "n/a"
    return f"{fmt(statistics.median(vals))} ({fmt(min(vals))}-{fmt(max(vals))}, n={len(vals)})"


def meets(ratio, bar, strict):
    return ratio is not None and (ratio > bar if strict else ratio >= bar)


def steps(out):
    runs = {}  # (model, batch, precision, side) -> [samples/s of each round]
    allocs, gpu, device, torch_ver, rounds, errors = {}, None, None, None, set(), []
    for path in sorted(glob.glob(os.path.join(out, "steps_r*_*.jsonl"))):
        m = re.search(r"steps_r(\d+)_(minidl|pytorch)\.jsonl$", path)
        if not m:
            continue
        for r in read_jsonl(path):
            rounds.add(int(m.group(1)))
            if "error" in r:
                errors.append(f"round {m.group(1)} {r['side']} {r['model']} b{r['batch']} {r['precision']}: {r['error']}")
                continue
            key = (r["model"], r["batch"], r["precision"], r["side"])
            runs.setdefault(key, []).extend(r["samples_per_s"])
            if r["side"] == "minidl" and "device_allocs" in r:
                allocs.setdefault(key, []).append(r["device_allocs"])
            gpu, device = gpu or r.get("gpu"), device or r.get("device")
            if r["side"] == "pytorch":
                torch_ver = r.get("torch")
    lines = ["# Training step, minidl against PyTorch on the same device (bench/gpu/run.sh, stage steps)", "",
             f"Device: {device or 'unknown'}{f' ({gpu})' if gpu else ''}; PyTorch {torch_ver or '(no result)'}; rounds with results: "
             f"{len(rounds)}, alternated (odd rounds minidl first, even rounds PyTorch first), each side one "
             "process per round running every workload; per workload and round one repetition of about the "
             "seconds asked (bench/gpu/versus_torch.sh). Samples/s: median (min-max, n) over rounds. Both "
             "sides: SGD(lr 0.01, momentum 0.9), cross-entropy, 20 batches prepared on the device, warm-up "
             "untimed, clocks read after a device synchronisation; fp16 = autocast + GradScaler, bf16 = "
             "autocast; PyTorch with cudnn.benchmark and TF32 off (minidl's f32 has none).", "",
             "| workload | precision | minidl samples/s | PyTorch samples/s | minidl / PyTorch | bar | "
             "minidl cudaMalloc in timed steps |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    verdicts = []
    order = ["mlp", "lenet", "cnn", "resnet20"]
    workloads = sorted({(k[0], k[1]) for k in runs}, key=lambda w: (order.index(w[0]) if w[0] in order else 9, w[1]))
    for w in TARGETS:  # a target workload without any result still gets its rows
        if w not in workloads:
            workloads.append(w)
    for model, batch in workloads:
        bar, strict = TARGETS.get((model, batch), (None, False))
        for prec in ("f32", "fp16", "bf16"):
            mi, pt = runs.get((model, batch, prec, "minidl"), []), runs.get((model, batch, prec, "pytorch"), [])
            ratio = statistics.median(mi) / statistics.median(pt) if mi and pt else None
            if not mi and not pt and (model, batch) not in TARGETS:
                continue
            status = "no result" if ratio is None else ("met" if meets(ratio, bar or 0, strict) else "NOT met")
            label = "-" if bar is None else (f"{'>' if strict else '>='} {bar:.2f}: {status}" +
                                              (" (target)" if prec == "fp16" else ""))
            a = allocs.get((model, batch, prec, "minidl"))
            lines.append(f"| {model} b{batch} | {prec} | {spread(mi)} | {spread(pt)} | "
                         f"{'n/a' if ratio is None else f'{ratio:.2f}x'} | {label} | "
                         f"{'n/a' if a is None else max(a)} |")
            if prec == "fp16" and bar is not None:
                verdicts.append(f"{model} b{batch} {status}" + ("" if ratio is None else f" ({ratio:.2f}x)"))
    lines += ["", "Targets (the fp16 rows, PyTorch with autocast + GradScaler): the MLP faster than PyTorch at "
              "batch 128 and at least as fast at 1024; ResNet-20 at batch 128 within 1.2x of PyTorch's step "
              "time (samples/s ratio >= 0.83). The f32 and bf16 rows are held to the same bars for "
              "information only.", ""]
    if errors:
        lines += ["Failed workloads:", ""] + [f"- {e}" for e in errors] + [""]
    result = "RESULT targets (fp16): " + "; ".join(verdicts)
    text = "\n".join(lines) + "\n" + result + "\n"
    with open(os.path.join(out, "steps.md"), "w") as f:
        f.write(text)
    print(text, end="")


def conv(out):
    rows = {}  # (conv, layout, side) -> json
    for side in ("minidl", "pytorch", "minidl_heuristic"):
        for r in read_jsonl(os.path.join(out, f"conv_layout_{side}.jsonl")):
            rows[(r["conv"], r["layout"], side)] = r  # side from the file: the heuristic run's lines say minidl
    shapes = []
    for (c, _, _), r in rows.items():
        if c not in [s[0] for s in shapes]:
            shapes.append((c, r["count"]))
    gpu = next((r.get("gpu") for r in rows.values() if r.get("gpu")), None)
    device = next((r.get("device") for r in rows.values() if r.get("device")), "unknown")
    dtype = next((r.get("dtype") for r in rows.values()), "f16")
    batch = next((r.get("batch") for r in rows.values()), "?")
    cols = [("minidl", "nchw"), ("minidl", "channels_last"), ("pytorch", "nchw"), ("pytorch", "channels_last")]

    def ms(c, layout, side):
        r = rows.get((c, layout, side))
        return statistics.median(r["ms"]) if r and r["ms"] else None

    def ratio(a, b):
        return f"{a / b:.2f}x" if a is not None and b else "n/a"

    # minidl's NCHW pass: the ms until its passes were queued (host work; near the whole time when the
    # host sets the pace), and the time with cuDNN's heuristics instead of the timed search.
    def host_ms(c):
        r = rows.get((c, "nchw", "minidl"))
        return statistics.median(r["host_ms"]) if r and r.get("host_ms") else None

    def extra(c):
        h, heur = host_ms(c), ms(c, "nchw", "minidl_heuristic")
        return " | ".join("n/a" if v is None else f"{v:.3f}" for v in (h, heur))

    lines = ["# f16 convolutions NCHW against NHWC (channels-last) on the GPU (bench/gpu/run.sh, stage conv_layout)", "",
             f"Device: {device}{f' ({gpu})' if gpu else ''}; {dtype}, batch {batch}; conv2d forward + input and weight gradients of each "
             "ResNet-20 shape; ms per pass, median of the repetitions (layouts alternated within a process). "
             "minidl's CUDA convolutions are NCHW only (ops/cuda/conv.cu; no CUDA entry in "
             "conv2d_channels_last), so its channels-last column is an NHWC input reordered to NCHW and an "
             "NCHW result; PyTorch's channels-last column is cuDNN's NHWC kernels (weights channels-last too).", "",
             "| conv cin x cout x H x W | count | minidl NCHW | minidl channels-last in | PyTorch NCHW | "
             "PyTorch NHWC | PyTorch NHWC / NCHW | minidl NCHW / PyTorch NCHW | minidl output layout (cl in) | "
             "minidl NCHW queued by (host ms) | minidl NCHW, cuDNN heuristics |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    totals = {col: 0.0 for col in cols}
    complete = {col: bool(shapes) for col in cols}
    for c, count in shapes:
        vals = [ms(c, layout, side) for side, layout in cols]
        for col, v in zip(cols, vals):
            if v is None:
                complete[col] = False
            else:
                totals[col] += count * v
        r = rows.get((c, "channels_last", "minidl"))
        lines.append(f"| {c} | {count} | " + " | ".join("n/a" if v is None else f"{v:.3f}" for v in vals) +
                     f" | {ratio(vals[3], vals[2])} | {ratio(vals[0], vals[2])} | {r['output_layout'] if r else 'n/a'} | {extra(c)} |")
    tot = [totals[col] if complete[col] else None for col in cols]
    lines.append("| **ResNet-20, all 21 convs (sum of count x ms)** | 21 | " +
                 " | ".join("n/a" if v is None else f"{v:.3f}" for v in tot) +
                 f" | {ratio(tot[3], tot[2])} | {ratio(tot[0], tot[2])} | | | |")
    if not rows:
        verdict = "no results (see conv_layout.log): no decision"
    elif not device.startswith("cuda"):
        verdict = f"a {device} run (a smoke test of the control flow, not cuDNN): no decision about the GPU's layout"
    elif tot[2] and tot[3] is not None and tot[0] is not None:
        # The layout question is whether cuDNN's NHWC kernels would beat what minidl runs now
        # (its NCHW passes), not only PyTorch's own NCHW.
        gain = tot[3] / tot[2]
        if tot[3] < NHWC_GAIN * tot[0]:
            verdict = (f"cuDNN's NHWC (through PyTorch) takes {tot[3] / tot[0]:.2f}x of minidl's NCHW time on these "
                       f"shapes ({gain:.2f}x of PyTorch's NCHW): an NHWC path for f16 in ops/cuda/conv.cu (a CUDA "
                       "conv2d_channels_last entry) would pay")
        else:
            verdict = (f"keep NCHW: cuDNN's NHWC through PyTorch takes {tot[3] / tot[0]:.2f}x of minidl's NCHW time "
                       f"on these shapes (an NHWC path would need under {NHWC_GAIN}x), though it takes {gain:.2f}x of "
                       "PyTorch's own NCHW")
    else:
        verdict = "no PyTorch NCHW/NHWC totals: no decision"
    if tot[0] is not None and tot[1] is not None:
        verdict += f"; minidl with channels-last input takes {tot[1] / tot[0]:.2f}x its NCHW time"
    text = "\n".join(lines) + "\n\nRESULT conv layout: " + verdict + "\n"
    with open(os.path.join(out, "conv_layout.md"), "w") as f:
        f.write(text)
    print(text, end="")


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("steps", "conv"):
        sys.exit("usage: report.py steps|conv DIR")
    (steps if sys.argv[1] == "steps" else conv)(sys.argv[2])
