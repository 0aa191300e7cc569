# Writes tests/sliding_blocks_torch_values.h, the literals of tests/test_sliding_blocks.cpp:
# torch.nn.functional.unfold and fold on operand 0 of tests/sine_operands.h (f64), the gradients of
# sum(y * cosine weights), and the modules' reprs.
# Run with the benchmark baseline's torch: /usr/bin/python3 tests/torch_refs/sliding_blocks.py > tests/sliding_blocks_torch_values.h
import torch
import torch.nn.functional as F
from sine_operands import cosine_weights, operand, print_header, print_map, vals
cases = [
    ("unfold k2", (2, 3, 4, 5), lambda x: F.unfold(x, 2)),
    ("unfold k(2,3) d(2,1) p1 s(2,1)", (2, 3, 5, 6), lambda x: F.unfold(x, (2, 3), dilation=(2, 1), padding=1, stride=(2, 1))),
    ("unfold unbatched k3 p1 s2", (2, 5, 5), lambda x: F.unfold(x, 3, padding=1, stride=2)),
    ("fold k2 to 4x5", (2, 12, 12), lambda x: F.fold(x, (4, 5), 2)),
    ("fold k(2,3) d(2,1) p1 s(2,1) to 5x6", (2, 18, 18), lambda x: F.fold(x, (5, 6), (2, 3), dilation=(2, 1), padding=1, stride=(2, 1))),
    ("fold unbatched k3 p1 s2 to 5x5", (18, 9), lambda x: F.fold(x, (5, 5), 3, padding=1, stride=2)),
]
print_header("sliding_blocks.py")
entries = []
for name, shape, f in cases:
    x = operand(0, shape).requires_grad_()
    y = f(x)
    (g,) = torch.autograd.grad((y * cosine_weights(y.shape)).sum(), [x])
    entries += [(f"{name}.value", vals(y)), (f"{name}.shape", vals(torch.tensor(y.shape, dtype=torch.float64))),
                (f"{name}.grad0", vals(g))]
print_map("name.value, name.shape, name.grad0 (of the input).", "torch_sliding_blocks_values", "std::vector<double>", entries)
modules = [("unfold", torch.nn.Unfold(kernel_size=(2, 3), dilation=1, padding=0, stride=1)),
           ("fold", torch.nn.Fold(output_size=(4, 5), kernel_size=2))]
print_map("Each module's repr.", "torch_sliding_blocks_reprs", "std::string", [(k, f'"{m}"') for k, m in modules])
