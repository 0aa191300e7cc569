"""minidl against PyTorch on the same training steps, side by side in one run (bench/compare/run.sh
builds the binaries and calls this). What is measured and how: bench/README.md, "Side by side with PyTorch".

    python3 compare.py --bench BIN --fma BIN [--quick] [--reps N] [--models a,b] [--out DIR]
"""
import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TORCH_SCRIPT = os.path.join(HERE, "torch_models.py")
PYTHON = "/usr/bin/python3"  # Debian's python3-torch lives in the system interpreter

# steps per measured repetition (about 1 s each on a quiet 2-core Zen 3/4 or Xeon), full and --quick
STEPS = {"mlp": (400, 40), "lenet": (150, 15), "cnn": (10, 2), "resnet20": (5, 2)}
PRECISIONS = ("f32", "bf16", "fp16")
SLOW_REPEAT_S = 5.0  # seconds per step above which a PyTorch workload is measured in one repetition only  # PyTorch 1.13's CPU autocast has no fp16


def run_process(cmd, env_extra=None):
    """Runs a helper (the FMA loop, the FLOP count, the settings search) and returns its stdout."""
    p = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **(env_extra or {})})
    if p.returncode != 0:
        sys.exit(f"compare: {' '.join(cmd)} failed ({p.returncode}):\n{p.stderr[-2000:]}")
    return p.stdout


def run_measured(cmd, env_extra=None):
    """Like run_process but with the child's own peak RSS (ru_maxrss of wait4, KiB on Linux)."""
    env = dict(os.environ)
    env.update(env_extra or {})
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: stdout into the pipe, stderr to a file we may print on failure
        os.close(r)
        os.dup2(w, 1)
        errf = os.open("/tmp/minidl-compare-stderr.%d" % os.getpid(), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(errf, 2)
        try:
            os.execvpe(cmd[0], cmd, env)
        finally:
            os._exit(127)
    os.close(w)
    with os.fdopen(r) as f:
        out = f.read()
    _, status, usage = os.wait4(pid, 0)
    errpath = "/tmp/minidl-compare-stderr.%d" % pid
    err = open(errpath).read() if os.path.exists(errpath) else ""
    if os.path.exists(errpath):
        os.unlink(errpath)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"compare: {' '.join(cmd)} failed ({os.waitstatus_to_exitcode(status)}):\n{err[-2000:]}")
    line = [l for l in out.splitlines() if l.startswith("{")][-1]
    res = json.loads(line)
    res["peak_rss_mib"] = usage.ru_maxrss / 1024.0
    return res


def alternate_steps(configs, workloads, reps):
    """Runs minidl-bench-step configurations alternately (ab.py, isa_cost.py): configs are
    (label, binary, extra environment), workloads (model, precision, threads); each repetition
    runs every workload under every configuration, in reversed configuration order every other
    repetition, each run its own process. Returns {(workload, label): [samples/s, ...]}."""
    results = {}
    for rep in range(reps):
        order = configs if rep % 2 == 0 else configs[::-1]
        for w in workloads:
            model, prec, threads = w
            for label, binary, env in order:
                env = dict(env, OMP_NUM_THREADS=str(threads)) if threads else env
                r = run_measured([binary, "--one", model, prec, str(STEPS[model][0]), "1"], env)
                results.setdefault((w, label), []).append(r["samples_per_s"][0])
        print(f"repetition {rep + 1}/{reps} done", flush=True)
    return results


def cpu_model():
    name, flags = "unknown", set()
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name") and name == "unknown":
                name = line.split(":", 1)[1].strip()
            elif line.startswith("flags") and not flags:
                flags = set(line.split(":", 1)[1].split())
    fam = mod = None
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("cpu family") and fam is None:
                fam = line.split(":")[1].strip()
            elif line.startswith("model\t") and mod is None:
                mod = line.split(":")[1].strip()
    return f"{name} (family {fam} model {mod}, {os.cpu_count()} CPUs)", flags


def torch_envs(avx512):
    """The BLAS/OpenMP environments searched for PyTorch (each with 1 and 2 threads). Debian's
    OpenBLAS 0.3.21 may not recognise a new CPU and fall back to slow kernels unless told its core
    type; its pthread pool and PyTorch's OpenMP team may fight over 2 cores unless one is quiet."""
    cores = ["SkylakeX", "Cooperlake", "Haswell"] if avx512 else ["Haswell", "Zen"]
    envs = [{}, {"OPENBLAS_NUM_THREADS": "1"}, {"OMP_WAIT_POLICY": "PASSIVE"},
            {"OPENBLAS_NUM_THREADS": "1", "OMP_WAIT_POLICY": "PASSIVE"}]
    return envs + [{"OPENBLAS_NUM_THREADS": "1", "OPENBLAS_CORETYPE": c} for c in cores]


# Models whose images may run channels-last (torch.channels_last, searched as a setting of its own:
# minidl's CIFAR models run so on the CPU).
IMAGE_MODELS = ("lenet", "cnn", "resnet20")


def with_channels_last(envs):
    """Every environment once more with the image models' memory format channels-last."""
    return envs + [dict(e, COMPARE_CHANNELS_LAST="1") for e in envs]


def env_label(threads, env):
    return f"threads={threads}" + "".join(f" {k}={v}" for k, v in sorted(env.items()))


def slow(run):
    """A workload whose steps take so long (PyTorch's CPU bf16) that repeating it would take minutes."""
    return run["batch"] / run["samples_per_s"][0] > SLOW_REPEAT_S


def torch_cmd(model, prec, steps, reps, threads):
    return [PYTHON, TORCH_SCRIPT, model, prec, str(steps), str(reps), str(threads)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", required=True, help="minidl-bench-step")
    ap.add_argument("--fma", required=True, help="minidl-fma-peak")
    ap.add_argument("--quick", action="store_true", help="smoke test: 1 repetition, few steps, default environment only")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--models", default="mlp,lenet,cnn,resnet20")
    ap.add_argument("--out", default=os.path.join(HERE, "results"))
    ap.add_argument("--scaling", action="store_true",
                    help="also minidl's 1 -> 2 thread speed-up and batch 64-512 samples/s on the CNN steps")
    a = ap.parse_args()
    reps = 1 if a.quick else a.reps
    models = a.models.split(",")
    cpu, flags = cpu_model()
    avx512 = "avx512f" in flags
    fma = json.loads(run_process([a.fma, "2"]).strip().splitlines()[-1])
    flops = json.loads(run_process([PYTHON, TORCH_SCRIPT, "--flops"]).strip().splitlines()[-1])
    print(f"CPU: {cpu}; FMA-loop peak ({fma['isa']}): {fma['peak_gflops_1t']:.0f} GFLOP/s per core, "
          f"{fma['peak_gflops_nt']:.0f} on 2 threads; load average {os.getloadavg()[0]:.1f}", flush=True)
    # A baseline on netlib's reference BLAS (what Debian's libblas.so.3 alternative is when OpenBLAS
    # is not installed) runs PyTorch's f32 linear layers ~50x slower: not a fair baseline.
    blas = json.loads(run_process([PYTHON, TORCH_SCRIPT, "--blas"]).strip().splitlines()[-1])
    print(f"PyTorch's BLAS: {', '.join(blas)}", flush=True)
    if any("openblas" not in b for b in blas if b.startswith("/")):
        sys.exit("compare.py: PyTorch runs on the reference BLAS; install OpenBLAS (apt-get install "
                 "libopenblas0-pthread; bench/compare/run.sh does) for a fair baseline")

    # 1. PyTorch's best configuration per model: short f32 runs (best of 2) of every setting, one
    # process per environment (the variables are read at start-up), thread counts inside it.
    envs = torch_envs(avx512)
    if a.quick:
        envs = envs[:1]
    envs = with_channels_last(envs)
    trials = {m: [] for m in models}
    for env in envs:
        searched = [m for m in models if m in IMAGE_MODELS or "COMPARE_CHANNELS_LAST" not in env]
        if not searched:
            continue
        spec = ",".join(f"{m}:{max(2, STEPS[m][1])}" for m in searched)
        rates = json.loads(run_process([PYTHON, TORCH_SCRIPT, "--search", spec, "1,2"], env).strip().splitlines()[-1])
        for key, rate in rates.items():
            m, t = key.split(":")
            trials[m].append((rate, int(t), env))
    best = {}
    for m in models:
        trials[m].sort(key=lambda t: -t[0])
        best[m] = trials[m][0]
        print(f"PyTorch {m}: best of {len(trials[m])} settings: {env_label(best[m][1], best[m][2])} "
              f"({trials[m][0][0]:.0f} samples/s; worst {trials[m][-1][0]:.0f}: {env_label(trials[m][-1][1], trials[m][-1][2])})",
              flush=True)

    # 2. Alternated repetitions: per repetition every workload, minidl and PyTorch as separate
    # processes, the order flipped on odd repetitions.
    results = {}
    for rep in range(reps):
        for m in models:
            steps = STEPS[m][1 if a.quick else 0]
            for prec in PRECISIONS:
                sides = ["minidl", "pytorch"] if rep % 2 == 0 else ["pytorch", "minidl"]
                for side in sides:
                    if side == "pytorch" and prec == "fp16":
                        continue
                    if side == "pytorch" and rep > 0 and slow(results[(m, prec, side)][0]):
                        continue  # a step of many seconds: its first repetition stands alone
                    if side == "minidl":
                        r = run_measured([a.bench, "--one", m, prec, str(steps), "1"])
                    else:
                        _, threads, env = best[m]
                        r = run_measured(torch_cmd(m, prec, steps, 1, threads), env)
                    results.setdefault((m, prec, side), []).append(r)
        print(f"repetition {rep + 1}/{reps} done", flush=True)

    # 3. Table.
    rows = []
    for m in models:
        for prec in PRECISIONS:
            row = {"model": m, "batch": results[(m, prec, "minidl")][0]["batch"], "precision": prec,
                   "train_flops_per_sample": flops[m]}
            for side in ("minidl", "pytorch"):
                runs = results.get((m, prec, side))
                if not runs:
                    row[side] = None
                    continue
                rates = [r["samples_per_s"][0] for r in runs]
                med = statistics.median(rates)
                threads = runs[0]["threads"]
                peak = fma["peak_gflops_1t"] if threads == 1 else fma["peak_gflops_nt"]
                gflops = med * flops[m] / 1e9
                row[side] = {"samples_per_s_median": med, "reps": len(rates), "min": min(rates), "max": max(rates), "threads": threads,
                             "peak_rss_mib": statistics.median(r["peak_rss_mib"] for r in runs),
                             "first_step_s": statistics.median(r["first_step_s"] for r in runs),
                             "gflops": gflops, "fraction_of_fma_peak": gflops / peak,
                             "os_threads": runs[0].get("os_threads")}
            if row["pytorch"]:
                row["pytorch"]["config"] = env_label(best[m][1], best[m][2])
            row["ratio"] = (row["minidl"]["samples_per_s_median"] / row["pytorch"]["samples_per_s_median"]
                            if row["pytorch"] else None)
            rows.append(row)

    def num(v):
        return f"{v:.0f}" if v >= 100 else f"{v:.3g}"

    def cell(s):
        if not s:
            return "n/a (PyTorch CPU autocast has no fp16)", "", "", "", ""
        spread = f"({num(s['min'])}-{num(s['max'])})" if s["reps"] == reps else f"({s['reps']} rep: slow steps)"
        return (f"{num(s['samples_per_s_median'])} {spread}", f"{s['peak_rss_mib']:.0f}",
                f"{s['first_step_s']:.2f}", f"{s['gflops']:.1f}", f"{100 * s['fraction_of_fma_peak']:.0f}%")

    head = ("| model | prec | MFLOP/sample | minidl samples/s (min-max) | PyTorch samples/s (min-max) | ratio | "
            "RSS MiB m / pt | 1st step s m / pt | GFLOP/s m / pt | of FMA peak m / pt |")
    lines = [head, "|" + " --- |" * 10]
    for r in rows:
        mc, pc = cell(r["minidl"]), cell(r["pytorch"])
        ratio = f"{r['ratio']:.2f}x" if r["ratio"] else "-"
        lines.append(f"| {r['model']} b{r['batch']} | {r['precision']} | {r['train_flops_per_sample'] / 1e6:.1f} | {mc[0]} | "
                     f"{pc[0]} | {ratio} | {mc[1]} / {pc[1]} | {mc[2]} / {pc[2]} | {mc[3]} / {pc[3]} | {mc[4]} / {pc[4]} |")
    when = datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M UTC")
    notes = [f"minidl vs PyTorch {results.get((models[0], 'f32', 'pytorch'), [{}])[0].get('torch', '?')}, {when}, {cpu}.",
             f"FMA-loop peak ({fma['isa']}): {fma['peak_gflops_1t']:.1f} GFLOP/s on 1 thread, "
             f"{fma['peak_gflops_nt']:.1f} on 2; 'of FMA peak' divides by the peak at the threads the side used.",
             f"Medians of {reps} alternated repetitions{' (--quick: smoke test, not a measurement)' if a.quick else ''}, "
             f"each workload its own process; minidl on its default threads ({rows[0]['minidl']['threads']}).",
             "PyTorch settings (best f32 samples/s of the searched ones, also used for bf16): " +
             "; ".join(f"{m}: {env_label(best[m][1], best[m][2])}" for m in models) + ".",
             f"PyTorch's BLAS: {', '.join(blas)}.",
             "FLOPs: 3 x the forward's conv/linear multiply-adds x 2 (bench/compare/torch_models.py)."]
    text = "\n".join(notes) + "\n\n" + "\n".join(lines) + "\n"
    if a.scaling:
        text += "\n" + scaling_tables(a.bench, [m for m in models if m in ("cnn", "resnet20")], reps)
    print("\n" + text)
    os.makedirs(a.out, exist_ok=True)
    stem = os.path.join(a.out, datetime.datetime.utcnow().strftime("%Y%m%d-%H%M%S") + ("-quick" if a.quick else ""))
    with open(stem + ".md", "w") as f:
        f.write(text)
    with open(stem + ".json", "w") as f:
        json.dump({"cpu": cpu, "fma": fma, "reps": reps, "quick": a.quick, "rows": rows,
                   "pytorch_search": {m: env_label(best[m][1], best[m][2]) for m in models}}, f, indent=1)
    print(f"written: {stem}.md, {stem}.json")


def scaling_tables(bench, models, reps):
    """minidl's f32 CNN steps on 1 and 2 threads, and at batch 64 to 512 (samples/s per sample should
    stay flat), alternated like the main table; markdown text."""
    runs = {}
    for rep in range(reps):
        for m in models:
            steps = STEPS[m][0]
            configs = [("t1", {"OMP_NUM_THREADS": "1"}, None), ("t2", {"OMP_NUM_THREADS": "2"}, None)]
            configs += [(f"b{b}", {}, b) for b in (64, 128, 256, 512)]
            for key, env, batch in (configs if rep % 2 == 0 else configs[::-1]):
                # Bigger batches run fewer steps for about the same time per run.
                n = steps if batch is None else max(2, steps * 64 // batch)
                cmd = [bench, "--one", m, "f32", str(n), "1"] + ([str(batch)] if batch else [])
                runs.setdefault((m, key), []).append(run_measured(cmd, env)["samples_per_s"][0])
        print(f"scaling repetition {rep + 1}/{reps} done", flush=True)
    med = {k: statistics.median(v) for k, v in runs.items()}
    out = [f"minidl f32 scaling, medians of {reps} alternated repetitions:", "",
           "| model | 1 thread samples/s | 2 threads | speed-up | b64 | b128 | b256 | b512 | b512 / b64 |",
           "|" + " --- |" * 9]
    for m in models:
        t1, t2 = med[(m, "t1")], med[(m, "t2")]
        bs = [med[(m, f"b{b}")] for b in (64, 128, 256, 512)]
        out.append(f"| {m} | {t1:.0f} | {t2:.0f} | {t2 / t1:.2f}x | " + " | ".join(f"{b:.0f}" for b in bs) +
                   f" | {bs[-1] / bs[0]:.2f} |")
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    main()
