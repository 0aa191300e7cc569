# Writes tests/conv_transpose1d_torch_values.h, the literals of tests/test_conv_transpose1d.cpp:
# torch.nn.functional.conv_transpose1d in f64 on operands of tests/sine_operands.h (input, weight,
# bias): plain, strided with padding, output padding, dilation and groups, and unbatched without a
# bias; values and the gradients of sum(y * cosine weights) with respect to every operand.
# Run with the benchmark baseline's torch: /usr/bin/python3 tests/torch_refs/conv_transpose1d.py > tests/conv_transpose1d_torch_values.h
import torch
import torch.nn.functional as F
from sine_operands import case_entries, print_header, print_map

torch.set_default_dtype(torch.float64)
cases = [
    ("plain", [(2, 4, 5), (4, 3, 3), (3,)], lambda x: F.conv_transpose1d(x[0], x[1], x[2])),
    ("strided_groups", [(2, 4, 5), (4, 3, 3), (6,)],
     lambda x: F.conv_transpose1d(x[0], x[1], x[2], stride=2, padding=1, output_padding=1, groups=2, dilation=2)),
    ("unbatched", [(4, 5), (4, 2, 2)], lambda x: F.conv_transpose1d(x[0], x[1], stride=3)),
]
print_header("conv_transpose1d.py")
print_map("name.value, name.shape, name.gradK (of operand K).", "torch_conv_transpose1d_values", "std::vector<double>",
          case_entries(cases, with_shape=True))
