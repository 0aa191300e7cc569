"""PyTorch mirrors of minidl's model zoo (nn/models.cpp), layer for layer, and one training-step
workload per process, for bench/compare/compare.py. A baseline only: minidl never imports this.

    python3 torch_models.py MODEL f32|bf16 STEPS REPS THREADS   -> one JSON line
    python3 torch_models.py --flops                              -> training FLOPs per sample
    python3 torch_models.py --search MODEL:STEPS,... THREADS,...  -> f32 samples/s per model and
                                                                    thread count (one process per
                                                                    environment setting searched)
    python3 torch_models.py --suite MODEL:BATCH,... PREC,... SECONDS REPS [--device cuda|cpu]
                                                                 -> one JSON line per workload and
                                                                    precision (bench/gpu/run.sh)
    python3 torch_models.py --conv-layout SECONDS REPS [--batch 128] [--dtype f16] [--device cuda|cpu]
                                                                 -> one JSON line per ResNet-20 conv
                                                                    shape and layout (bench/gpu/run.sh)

The step is minidl-bench-step's (bench/bench_step.cpp): 20 prepared batches of random inputs and
labels, forward + cross-entropy under autocast when asked, backward, SGD(lr 0.01, momentum 0.9),
zero_grad. PyTorch 1.13's CPU autocast has bf16 only (no fp16), so there is no fp16 workload here.

--suite and --conv-layout mirror minidl-bench-step's modes of the same names on either device (on
CUDA: torch.autocast("cuda", dtype) with a GradScaler for fp16, cudnn.benchmark on, TF32 off as
minidl's f32 has none, torch.cuda.synchronize() before every clock read); bench/gpu/run.sh runs them
beside minidl on the GPU. On the CPU they are a smoke test (fp16 refused: no CPU autocast for it).
"""
import time

START = time.perf_counter()  # before `import torch`: the import is part of the time to the first step

import json
import os
import sys

import torch
from torch import nn
import torch.nn.functional as F


class MLP(nn.Module):  # MLP(784, {256, 256}, 10): flatten, (linear, relu) x2, linear
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2, self.fc3 = nn.Linear(784, 256), nn.Linear(256, 256), nn.Linear(256, 10)

    def forward(self, x):
        h = x if x.dim() == 2 else x.flatten(1)
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(h)))))


class LeNet5(nn.Module):  # conv 5x5 pad 2, pool, conv 5x5, pool, 3 linears (biases everywhere)
    def __init__(self):
        super().__init__()
        self.conv1, self.conv2 = nn.Conv2d(1, 6, 5, 1, 2), nn.Conv2d(6, 16, 5)
        self.fc1, self.fc2, self.fc3 = nn.Linear(400, 120), nn.Linear(120, 84), nn.Linear(84, 10)

    def forward(self, x):
        h = F.max_pool2d(F.relu(self.conv1(x)), 2)
        h = F.max_pool2d(F.relu(self.conv2(h)), 2)
        h = F.relu(self.fc1(h.flatten(1)))
        return self.fc3(F.relu(self.fc2(h)))


def conv_bn_relu(cin, cout):  # 3x3 pad 1 without bias, BatchNorm2d (eps 1e-5, momentum 0.1), ReLU
    return [nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU()]


class SmallCNN(nn.Module):  # the zoo's `cnn`
    def __init__(self, classes=10):
        super().__init__()
        self.features = nn.Sequential(
            *conv_bn_relu(3, 32), *conv_bn_relu(32, 32), nn.MaxPool2d(2),
            *conv_bn_relu(32, 64), *conv_bn_relu(64, 64), nn.MaxPool2d(2),
            *conv_bn_relu(64, 128), nn.MaxPool2d(2), nn.AdaptiveAvgPool2d((1, 1)))
        self.head = nn.Linear(128, classes)

    def forward(self, x):
        return self.head(self.features(x).flatten(1))


class BasicBlock(nn.Module):  # two 3x3 conv-bn, 1x1-conv + bn projection where the shape changes
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.proj = None
        if stride != 1 or cin != cout:
            self.proj = nn.Conv2d(cin, cout, 1, stride=stride, bias=False)
            self.proj_bn = nn.BatchNorm2d(cout)

    def forward(self, x):
        h = F.relu(self.bn1(self.conv1(x)))
        h = self.bn2(self.conv2(h))
        shortcut = self.proj_bn(self.proj(x)) if self.proj is not None else x
        return F.relu(h + shortcut)


class ResNet20(nn.Module):  # stem conv-bn-relu 16, 3 stages x 3 blocks (16, 32, 64), avg pool, linear
    def __init__(self, classes=10):
        super().__init__()
        self.stem = nn.Conv2d(3, 16, 3, padding=1, bias=False)
        self.stem_bn = nn.BatchNorm2d(16)
        blocks, cin = [], 16
        for width in (16, 32, 64):
            for b in range(3):
                blocks.append(BasicBlock(cin, width, 2 if b == 0 and width != 16 else 1))
                cin = width
        self.stages = nn.Sequential(*blocks)
        self.head = nn.Linear(64, classes)

    def forward(self, x):
        h = F.relu(self.stem_bn(self.stem(x)))
        h = F.adaptive_avg_pool2d(self.stages(h), (1, 1)).flatten(1)
        return self.head(h)


SLOW_STEP_S = 2.0  # a first step longer than this: no warm-up, one step per measurement

# name: (constructor, one sample's shape, batch) as in bench/bench_step.cpp's kModels
MODELS = {
    "mlp": (MLP, (784,), 128),
    "lenet": (LeNet5, (1, 28, 28), 64),
    "cnn": (SmallCNN, (3, 32, 32), 64),
    "resnet20": (ResNet20, (3, 32, 32), 128),
}


def training_flops_per_sample(name):
    """Analytic training FLOPs of one sample: 2 * multiply-adds of every conv and linear in the forward
    pass (from the layer shapes seen on a 1-sample forward), times 3 (backward: input and weight
    gradient, each as large as the forward product). Element-wise ops, BN, pooling are not counted."""
    ctor, shape, _ = MODELS[name]
    model, total = ctor(), [0]

    def hook(mod, inp, out):
        if isinstance(mod, nn.Conv2d):
            k = mod.in_channels // mod.groups * mod.kernel_size[0] * mod.kernel_size[1]
            total[0] += 2 * out.numel() * k
        elif isinstance(mod, nn.Linear):
            total[0] += 2 * out.numel() * mod.in_features

    for m in model.modules():
        m.register_forward_hook(hook)
    with torch.no_grad():
        model(torch.zeros((1,) + shape))
    return 3 * total[0]


def run_one(name, precision, steps, reps, threads, quiet=False):
    torch.set_num_threads(threads)
    ctor, shape, batch = MODELS[name]
    torch.manual_seed(0)
    model = ctor()
    # A searched setting (compare.py): model and images channels-last, as minidl's CIFAR models run.
    channels_last = os.environ.get("COMPARE_CHANNELS_LAST") == "1" and len(shape) == 3
    if channels_last:
        model = model.to(memory_format=torch.channels_last)
    fmt = torch.channels_last if channels_last else torch.contiguous_format
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    batches = [(torch.randn((batch,) + shape).contiguous(memory_format=fmt), torch.randint(0, 10, (batch,)))
               for _ in range(20)]
    use_amp = precision == "bf16"

    def run(n):
        t0 = time.perf_counter()
        for i in range(n):
            x, y = batches[i % len(batches)]
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=use_amp):
                loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            opt.zero_grad()
        return time.perf_counter() - t0

    t1 = run(1)
    first = time.perf_counter() - START
    if t1 > SLOW_STEP_S:
        # A step of seconds (PyTorch 1.13's bf16 on CPUs without native bf16: 10-20x its f32) needs
        # no warm-up to be measured and would take minutes per repetition: time single steps.
        steps = 1
    else:
        run(max(2, steps // 5))  # warm-up
    rates = [steps * batch / run(steps) for _ in range(reps)]
    if quiet:
        return rates
    print(json.dumps({"side": "pytorch", "model": name, "precision": precision, "batch": batch,
                      "threads": torch.get_num_threads(), "first_step_s": round(first, 4),
                      "samples_per_s": [round(r, 2) for r in rates], "torch": torch.__version__}))


def blas_library():
    """The BLAS library torch's f32 mm runs on, as the loader resolved libblas.so.3 (Debian's torch
    links the alternative: netlib's reference BLAS, 50x slower, unless OpenBLAS is installed)."""
    torch.mm(torch.ones(64, 64), torch.ones(64, 64))
    with open("/proc/self/maps") as f:
        paths = {line.split()[-1] for line in f if "blas" in line.split()[-1]}
    return sorted(os.path.realpath(p) for p in paths) or ["(none loaded: torch's own kernels)"]


# ---------------------------------------------------------------- --suite and --conv-layout
AMP_DTYPES = {"f32": None, "bf16": torch.bfloat16, "fp16": torch.float16}


def setup_device(device):
    """The torch.device to run on, with the GPU settings of bench/gpu/run.sh's comparison."""
    dev = torch.device(device)
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            sys.exit(f"torch_models.py: --device {device}: torch {torch.__version__} sees no CUDA GPU")
        torch.backends.cudnn.benchmark = True
        # minidl's f32 matmuls and convolutions on CUDA do not use TF32: neither does the baseline.
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    return dev


def sync(dev):
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)


def device_fields(dev):
    out = {"device": str(dev), "torch": torch.__version__}
    if dev.type == "cuda":
        out["gpu"] = torch.cuda.get_device_name(dev)
    else:
        out["threads"] = torch.get_num_threads()
    return out


def grad_scaler():
    """torch.amp.GradScaler("cuda") where it exists (torch >= 2.3), else torch.cuda.amp.GradScaler."""
    if hasattr(torch, "amp") and hasattr(torch.amp, "GradScaler"):
        return torch.amp.GradScaler("cuda")
    return torch.cuda.amp.GradScaler()


def suite_workload(name, batch, precision, dev):
    """One model's training step as minidl-bench-step's Runner: 20 batches prepared on the device,
    forward + cross-entropy under autocast when asked, backward (scaled for fp16), SGD(lr 0.01,
    momentum 0.9) (through the scaler for fp16), zero_grad. Returns run(n) -> seconds of n steps."""
    ctor, shape, _ = MODELS[name]
    torch.manual_seed(0)
    model = ctor().to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    batches = [(torch.randn((batch,) + shape, device=dev), torch.randint(0, 10, (batch,), device=dev))
               for _ in range(20)]
    amp_dtype = AMP_DTYPES[precision]
    # A disabled CPU autocast still warns about a dtype it does not support: give it bf16.
    cast_dtype = amp_dtype or (torch.float16 if dev.type == "cuda" else torch.bfloat16)
    scaler = grad_scaler() if precision == "fp16" else None

    def run(n):
        sync(dev)
        t0 = time.perf_counter()
        for i in range(n):
            x, y = batches[i % len(batches)]
            with torch.autocast(dev.type, dtype=cast_dtype, enabled=amp_dtype is not None):
                loss = F.cross_entropy(model(x), y)
            if scaler is not None:
                scaler.scale(loss).backward()
                scaler.step(opt)
                scaler.update()
            else:
                loss.backward()
                opt.step()
            opt.zero_grad()
        sync(dev)
        return time.perf_counter() - t0

    return run


def run_suite(workloads, precisions, seconds, reps, dev):
    """Every workload in every precision, workload-major, as minidl-bench-step --suite: one step
    (first_step_s, from the start of the workload's set-up), two warm-up steps, three more timed to
    size the repetitions, then REPS repetitions of max(3, SECONDS / that step time) steps."""
    failed = 0
    for w in workloads:
        name, batch = w.split(":")
        batch = int(batch)
        for prec in precisions:
            try:
                suite_one(name, batch, prec, seconds, reps, dev)
            except Exception as e:  # one failing workload does not take the others' results with it
                failed += 1
                print(f"torch_models.py --suite: {name} b{batch} {prec} failed: {e!r}", file=sys.stderr)
                print(json.dumps({"side": "pytorch", "model": name, "precision": prec, "batch": batch,
                                  "error": repr(e)}), flush=True)
    if failed:
        sys.exit(1)


def suite_one(name, batch, prec, seconds, reps, dev):
    t0 = time.perf_counter()
    run = suite_workload(name, batch, prec, dev)
    run(1)
    first = time.perf_counter() - t0
    run(2)
    step_s = run(3) / 3
    steps = int(min(max(seconds / step_s, 3), 1e5))
    rates = [steps * batch / run(steps) for _ in range(reps)]
    print(json.dumps({"side": "pytorch", "model": name, "precision": prec, "batch": batch,
                      "first_step_s": round(first, 4), "samples_per_s": [round(r, 2) for r in rates],
                      "steps": steps, **device_fields(dev)}), flush=True)


# ResNet-20's convolutions as minidl-bench-step's kResNet20Convs: (cin, cout, hw, k, stride, count).
RESNET20_CONVS = [(3, 16, 32, 3, 1, 1), (16, 16, 32, 3, 1, 6), (16, 32, 32, 3, 2, 1), (16, 32, 32, 1, 2, 1),
                  (32, 32, 16, 3, 1, 5), (32, 64, 16, 3, 2, 1), (32, 64, 16, 1, 2, 1), (64, 64, 8, 3, 1, 5)]
CONV_DTYPES = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}


def run_conv_layout(seconds, reps, batch, dtype, dev):
    """minidl-bench-step --conv-layout: conv2d forward + backward (input and weight gradients, no
    bias) of each ResNet-20 shape with the images NCHW and channels-last; here the weight follows the
    images' layout, as model.to(memory_format=torch.channels_last) leaves it."""
    dt = CONV_DTYPES[dtype]
    layouts = {"nchw": torch.contiguous_format, "channels_last": torch.channels_last}
    torch.manual_seed(0)
    for cin, cout, hw, k, stride, count in RESNET20_CONVS:
        pad = k // 2
        ohw = (hw + 2 * pad - k) // stride + 1
        w0 = (torch.randn(cout, cin, k, k) * 0.1).to(dev, dt)
        x0 = torch.randn(batch, cin, hw, hw).to(dev, dt)
        gy0 = torch.randn(batch, cout, ohw, ohw).to(dev, dt)
        ops = {}
        out_layout = {}
        for name, fmt in layouts.items():
            x, w, gy = (t.contiguous(memory_format=fmt) for t in (x0, w0, gy0))

            def run(n, x=x, w=w, gy=gy, name=name):
                sync(dev)
                t0 = time.perf_counter()
                for _ in range(n):
                    xi, wi = x.detach().requires_grad_(), w.detach().requires_grad_()
                    y = F.conv2d(xi, wi, None, stride, pad)
                    out_layout[name] = ("channels_last" if y.is_contiguous(memory_format=torch.channels_last)
                                        and not y.is_contiguous() else "nchw")
                    y.backward(gy)
                sync(dev)
                return time.perf_counter() - t0

            ops[name] = run
        pass_s = 0.0
        for run in ops.values():
            run(3)
            pass_s = max(pass_s, run(5) / 5)
        n = int(min(max(seconds / pass_s, 3), 1e5))
        ms = {name: [] for name in ops}
        names = list(ops)
        for r in range(reps):
            for name in (names if r % 2 == 0 else names[::-1]):
                ms[name].append(ops[name](n) / n * 1e3)
        for name in names:
            print(json.dumps({"side": "pytorch", "conv": f"{cin}x{cout}x{hw}x{hw} k{k} s{stride}", "cin": cin,
                              "cout": cout, "hw": hw, "k": k, "stride": stride, "count": count, "batch": batch,
                              "dtype": dtype, "layout": name, "output_layout": out_layout[name], "passes": n,
                              "ms": [round(v, 4) for v in ms[name]], **device_fields(dev)}), flush=True)


def gpu_modes(argv):
    """--suite and --conv-layout (argparse: they are newer than the positional modes above)."""
    import argparse
    ap = argparse.ArgumentParser(prog="torch_models.py " + argv[0])
    if argv[0] == "--suite":
        ap.add_argument("workloads", help="MODEL:BATCH,... (models: " + ", ".join(MODELS) + ")")
        ap.add_argument("precisions", help="f32,bf16,fp16 or a subset")
    ap.add_argument("seconds", type=float, help="about how long one repetition runs")
    ap.add_argument("reps", type=int)
    ap.add_argument("--device", default="cuda", help="cuda (default), cuda:N or cpu")
    ap.add_argument("--threads", type=int, default=0, help="CPU threads (0: torch's default)")
    if argv[0] == "--conv-layout":
        ap.add_argument("--batch", type=int, default=128)
        ap.add_argument("--dtype", default="f16", choices=list(CONV_DTYPES),
                        help="f16 (default; PyTorch's CPU convolutions have none: bf16 or f32 there)")
    a = ap.parse_args(argv[1:])
    if a.seconds <= 0 or a.reps < 1:
        ap.error("SECONDS must be > 0 and REPS >= 1")
    if a.threads:
        torch.set_num_threads(a.threads)
    dev = setup_device(a.device)
    if argv[0] == "--conv-layout":
        if dev.type == "cpu" and a.dtype == "f16":
            ap.error(f"torch {torch.__version__} has no f16 convolution on the CPU: --dtype bf16 or f32 there")
        run_conv_layout(a.seconds, a.reps, a.batch, a.dtype, dev)
        return
    workloads, precisions = a.workloads.split(","), a.precisions.split(",")
    for w in workloads:
        parts = w.split(":")
        if len(parts) != 2 or parts[0] not in MODELS or not parts[1].isdigit() or int(parts[1]) < 1:
            ap.error(f"bad workload '{w}' (MODEL:BATCH, MODEL one of {', '.join(MODELS)})")
    for p in precisions:
        if p not in AMP_DTYPES:
            ap.error(f"unknown precision '{p}' (f32, bf16, fp16)")
        if p == "fp16" and dev.type == "cpu":
            ap.error(f"torch {torch.__version__}'s CPU autocast has no fp16 (nor a CPU GradScaler): f32,bf16 there")
    run_suite(workloads, precisions, a.seconds, a.reps, dev)


if __name__ == "__main__":
    if sys.argv[1:] == ["--flops"]:
        print(json.dumps({m: training_flops_per_sample(m) for m in MODELS}))
    elif sys.argv[1:] == ["--blas"]:
        print(json.dumps(blas_library()))
    elif sys.argv[1:2] in (["--suite"], ["--conv-layout"]):
        gpu_modes(sys.argv[1:])
    elif len(sys.argv) == 4 and sys.argv[1] == "--search":
        out = {}
        for spec in sys.argv[2].split(","):
            m, steps = spec.split(":")
            for t in sys.argv[3].split(","):
                out[f"{m}:{t}"] = max(run_one(m, "f32", int(steps), 2, int(t), quiet=True))
        print(json.dumps(out))
    else:
        if len(sys.argv) != 6 or sys.argv[1] not in MODELS or sys.argv[2] not in ("f32", "bf16"):
            sys.exit("usage: torch_models.py MODEL f32|bf16 STEPS REPS THREADS | --flops")
        run_one(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]))
