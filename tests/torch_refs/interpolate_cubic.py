# Writes tests/interpolate_cubic_torch_values.h, the literals of tests/test_interpolate_cubic.cpp:
# torch.nn.functional.interpolate's bicubic (on operand 0 [1, 2, 3, 4] of tests/sine_operands.h) and
# trilinear (operand 0 [1, 2, 2, 3, 4]) modes in f64: up and down, by size and by scale factor, with
# and without align_corners; values, shapes and the input gradients of sum(y * cosine weights).
# Run with the benchmark baseline's torch: /usr/bin/python3 tests/torch_refs/interpolate_cubic.py > tests/interpolate_cubic_torch_values.h
import torch
import torch.nn.functional as F
from sine_operands import case_entries, print_header, print_map

torch.set_default_dtype(torch.float64)
cases = [
    ("bicubic_up", [(1, 2, 3, 4)], lambda x: F.interpolate(x[0], size=(5, 7), mode="bicubic")),
    ("bicubic_up_aligned", [(1, 2, 3, 4)], lambda x: F.interpolate(x[0], size=(5, 7), mode="bicubic", align_corners=True)),
    ("bicubic_down", [(1, 2, 3, 4)], lambda x: F.interpolate(x[0], size=(2, 3), mode="bicubic")),
    ("bicubic_scale", [(1, 2, 3, 4)], lambda x: F.interpolate(x[0], scale_factor=1.7, mode="bicubic")),
    ("bicubic_one_dim", [(1, 2, 3, 4)], lambda x: F.interpolate(x[0], size=(3, 6), mode="bicubic")),
    ("trilinear_up", [(1, 2, 2, 3, 4)], lambda x: F.interpolate(x[0], size=(3, 4, 6), mode="trilinear")),
    ("trilinear_aligned", [(1, 2, 2, 3, 4)],
     lambda x: F.interpolate(x[0], size=(4, 2, 5), mode="trilinear", align_corners=True)),
    ("trilinear_scale", [(1, 2, 2, 3, 4)], lambda x: F.interpolate(x[0], scale_factor=(1.5, 0.7, 1.25), mode="trilinear")),
]
print_header("interpolate_cubic.py")
print_map("name.value, name.shape, name.grad0.", "torch_interpolate_cubic_values", "std::vector<double>",
          case_entries(cases, with_shape=True))
