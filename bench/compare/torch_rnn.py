# PyTorch's side of bench/rnn_compare.sh: one nn.LSTM training step (forward and backward of
# sum(output * w), no optimizer) on the CPU, in sequences per second; the same shapes and timing
# as bench/rnn_lab.cpp (3 warm-up steps, median of 5 runs).
#   python3 bench/compare/torch_rnn.py SEQ BATCH INPUT HIDDEN LAYERS [seconds=2] [precision=f32|bf16]
import json
import os
import sys
import time

import torch

L, N, I, H, layers = (int(a) for a in sys.argv[1:6])
budget = float(sys.argv[6]) if len(sys.argv) > 6 else 2.0
precision = sys.argv[7] if len(sys.argv) > 7 else "f32"
torch.manual_seed(0)
lstm = torch.nn.LSTM(I, H, num_layers=layers)
x, w = torch.randn(L, N, I), torch.randn(L, N, H)


def step():
    lstm.zero_grad()
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "bf16"):
        out = lstm(x)[0]
    (out.float() * w).sum().backward()


for _ in range(3):
    step()
rates, steps = [], 0
for _ in range(5):
    n, t0 = 0, time.perf_counter()
    while True:
        step()
        n += 1
        elapsed = time.perf_counter() - t0
        if elapsed >= budget / 5:
            break
    rates.append(n * N / elapsed)
    steps += n
rates.sort()
env = " ".join(f"{k}={os.environ[k]}" for k in ("OPENBLAS_NUM_THREADS", "OMP_WAIT_POLICY") if k in os.environ)
print(json.dumps({"side": "pytorch", "env": env or "default", "precision": precision, "threads": torch.get_num_threads(), "steps": steps,
                  "sequences_per_s": round(rates[2], 1), "min": round(rates[0], 1), "max": round(rates[4], 1)}))
