# Writes tests/pool1d_torch_values.h, the literals of tests/test_pool1d.cpp: torch.nn.functional's
# 1-D pools on operand 0 of tests/sine_operands.h (f64), their gradients of sum(y * cosine weights),
# the max pools' indices, and the layers' reprs.
# Run with the benchmark baseline's torch: /usr/bin/python3 tests/torch_refs/pool1d.py > tests/pool1d_torch_values.h
import math, torch, torch.nn.functional as F
from sine_operands import cosine_weights, operand, print_header, print_map, vals
cases = [
    ("max_pool1d k3 s2 p1", (2, 3, 7), lambda x: F.max_pool1d(x, 3, 2, 1, return_indices=True)),
    ("max_pool1d k2 d2 ceil", (2, 3, 7), lambda x: F.max_pool1d(x, 2, 2, 0, 2, ceil_mode=True, return_indices=True)),
    ("max_pool1d unbatched k2", (3, 7), lambda x: F.max_pool1d(x, 2, return_indices=True)),
    ("avg_pool1d k3 s2 p1 ceil no pad count", (2, 3, 7), lambda x: F.avg_pool1d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False)),
    ("avg_pool1d k2", (2, 3, 7), lambda x: F.avg_pool1d(x, 2)),
    ("adaptive_avg_pool1d 3", (2, 3, 7), lambda x: F.adaptive_avg_pool1d(x, 3)),
    ("adaptive_max_pool1d 4", (2, 3, 7), lambda x: F.adaptive_max_pool1d(x, 4, return_indices=True)),
]
print_header("pool1d.py")
entries = []
for name, shape, f in cases:
    x = operand(0, shape).requires_grad_()
    r = f(x)
    y, idx = (r if isinstance(r, tuple) else (r, None))
    (g,) = torch.autograd.grad((y * cosine_weights(y.shape)).sum(), [x])
    entries += [(f"{name}.value", vals(y)), (f"{name}.shape", vals(torch.tensor(y.shape, dtype=torch.float64))),
                (f"{name}.grad0", vals(g))]
    if idx is not None: entries.append((f"{name}.indices", vals(idx.double())))
print_map("name.value, name.shape, name.grad0 (of the input), name.indices (max pools).", "torch_pool1d_values",
          "std::vector<double>", entries)
modules = [("max", torch.nn.MaxPool1d(3, 2, 1, 2, ceil_mode=True)), ("max default", torch.nn.MaxPool1d(3)),
           ("avg", torch.nn.AvgPool1d(3, 1, 1, True, False)), ("adaptive avg", torch.nn.AdaptiveAvgPool1d(4)),
           ("adaptive max", torch.nn.AdaptiveMaxPool1d(2))]
print_map("Each layer's repr.", "torch_pool1d_reprs", "std::string", [(k, f'"{m}"') for k, m in modules])
