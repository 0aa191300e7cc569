# Prints the literals of tests/test_instance_norm.cpp (InstanceNorm2d with affine and running
# statistics, InstanceNorm1d unbatched) as torch computes them, on the inputs of tests/sine_operands.h.
# Run with the benchmark baseline's torch: /usr/bin/python3 tests/torch_refs/instance_norm.py
import torch, math
from sine_operands import cosine_weights, operand, vals
x = operand(0, (2, 3, 2, 2)).requires_grad_()
m = torch.nn.InstanceNorm2d(3, affine=True, track_running_stats=True).double()
with torch.no_grad():
    m.weight.copy_(torch.tensor([1.5, -0.5, 2.0], dtype=torch.float64)); m.bias.copy_(torch.tensor([0.1, 0.2, -0.3], dtype=torch.float64))
y = m(x)
w = torch.tensor([math.cos(0.21 * j) for j in range(y.numel())], dtype=torch.float64).reshape(y.shape)
gx, gw, gb = torch.autograd.grad((y * w).sum(), [x, m.weight, m.bias])
print("y", vals(y)); print("gx", vals(gx)); print("gw", vals(gw)); print("gb", vals(gb))
print("rm", vals(m.running_mean), "rv", vals(m.running_var))
m.eval(); print("eval", vals(m(x)))
x1 = operand(1, (3, 5))
print("unbatched1d", vals(torch.nn.InstanceNorm1d(3)(x1)))
