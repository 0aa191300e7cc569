"""PyTorch mirrors of minidl's model zoo (nn/models.cpp), layer for layer, and one training-step
workload per process, for bench/compare/compare.py. A baseline only: minidl never imports this.

    python3 torch_models.py MODEL f32|bf16 STEPS REPS THREADS   -> one JSON line
    python3 torch_models.py --flops                              -> training FLOPs per sample
    python3 torch_models.py --search MODEL:STEPS,... THREADS,...  -> f32 samples/s per model and
                                                                    thread count (one process per
                                                                    environment setting searched)

The step is minidl-bench-step's (bench/bench_step.cpp): 20 prepared batches of random inputs and
labels, forward + cross-entropy under autocast when asked, backward, SGD(lr 0.01, momentum 0.9),
zero_grad. PyTorch 1.13's CPU autocast has bf16 only (no fp16), so there is no fp16 workload here.
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


if __name__ == "__main__":
    if sys.argv[1:] == ["--flops"]:
        print(json.dumps({m: training_flops_per_sample(m) for m in MODELS}))
    elif sys.argv[1:] == ["--blas"]:
        print(json.dumps(blas_library()))
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
