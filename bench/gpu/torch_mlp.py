#!/usr/bin/env python3
"""PyTorch reference for bench/gpu/step_bench.cpp: one training step of the MLP 784-256-256-10
(SGD lr 0.05, momentum 0.9, cross-entropy) on synthetic data already on the GPU, in f32 or with
torch.autocast(fp16) + torch.amp.GradScaler. Prints, per configuration, one line

  RESULT framework=torch batch=128 amp=fp16 ms_per_step=... samples_per_s=... final_loss=...

Usage: python3 bench/gpu/torch_mlp.py [--batch 128 1024] [--amp off fp16] [--steps 300] [--warmup 30]
TF32 stays off (PyTorch's default for matmul), so f32 is f32 on both sides. The model is
bench/compare/torch_models.py's MLP (the one definition of the PyTorch mirrors); bench/gpu/run.sh's
steps stage uses that file's --suite mode instead of this script.
"""
import argparse
import os
import sys
import time

import torch
import torch.nn as nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "compare"))
from torch_models import MLP  # noqa: E402


def make_model():
    torch.manual_seed(0)
    return MLP().cuda()


def bench(batch, amp, steps, warmup):
    model = make_model()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    fp16 = amp == "fp16"
    scaler = torch.amp.GradScaler("cuda", enabled=fp16)
    loss_fn = nn.CrossEntropyLoss()
    xs = [torch.rand(batch, 784, device="cuda") for _ in range(8)]
    ys = [torch.randint(0, 10, (batch,), device="cuda") for _ in range(8)]

    def step(i):
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.float16, enabled=fp16):
            loss = loss_fn(model(xs[i % 8]), ys[i % 8])
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        return loss

    for i in range(warmup):
        loss = step(i)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for i in range(steps):
        loss = step(i)
    torch.cuda.synchronize()
    s = time.perf_counter() - t0
    print(f"RESULT framework=torch batch={batch} amp={'fp16' if fp16 else 'off'} "
          f"ms_per_step={1e3 * s / steps:.4f} samples_per_s={batch * steps / s:.0f} final_loss={loss.item():.4f}",
          flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--batch", type=int, nargs="+", default=[128, 1024])
    p.add_argument("--amp", nargs="+", default=["off", "fp16"], choices=["off", "fp16"])
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--warmup", type=int, default=30)
    a = p.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    print(f"# torch {torch.__version__}, {torch.cuda.get_device_name(0)}", flush=True)
    for b in a.batch:
        for amp in a.amp:
            bench(b, amp, a.steps, a.warmup)


if __name__ == "__main__":
    main()
