# Writes tests/grid_sample_torch_values.h, the literals of tests/test_grid_sample.cpp: affine_grid and
# grid_sample (bilinear and nearest; zeros, border and reflection padding; both align_corners) on the
# inputs of tests/sine_operands.h (f64; grids scaled past [-1, 1] so that padding matters), and a
# spatial-transformer step, affine_grid into grid_sample; with the gradients of sum(y * cosine
# weights) with respect to every input.
# Run with the benchmark baseline's torch: /usr/bin/python3 tests/torch_refs/grid_sample.py > tests/grid_sample_torch_values.h
import torch, torch.nn.functional as F
from sine_operands import case_entries, print_header, print_map

def sample(mode, padding, align, scale):
    return lambda x: F.grid_sample(x[0], x[1] * scale, mode=mode, padding_mode=padding, align_corners=align)

cases = [
    ("affine_grid", [(2, 2, 3)], lambda x: F.affine_grid(x[0], (2, 1, 3, 4), align_corners=False)),
    ("affine_grid align", [(2, 2, 3)], lambda x: F.affine_grid(x[0], (2, 1, 3, 4), align_corners=True)),
    ("bilinear zeros", [(1, 2, 4, 5), (1, 3, 3, 2)], sample("bilinear", "zeros", False, 1.2)),
    ("bilinear zeros align", [(2, 1, 3, 4), (2, 2, 3, 2)], sample("bilinear", "zeros", True, 1.2)),
    ("bilinear border align", [(1, 2, 4, 5), (1, 3, 3, 2)], sample("bilinear", "border", True, 1.5)),
    ("bilinear reflection", [(1, 2, 4, 5), (1, 3, 3, 2)], sample("bilinear", "reflection", False, 2.5)),
    ("bilinear reflection align", [(1, 1, 4, 5), (1, 4, 3, 2)], sample("bilinear", "reflection", True, 2.5)),
    ("nearest zeros", [(1, 2, 4, 5), (1, 3, 3, 2)], sample("nearest", "zeros", False, 1.2)),
    ("nearest border", [(1, 2, 4, 5), (1, 3, 3, 2)], sample("nearest", "border", False, 1.7)),
    ("spatial transformer", [(2, 1, 5, 5), (2, 2, 3)],
     lambda x: F.grid_sample(x[0], F.affine_grid(x[1] * 0.8, (2, 1, 4, 4), align_corners=False), align_corners=False)),
]
print_header("grid_sample.py")
entries = case_entries(cases, with_shape=True)
print_map("name.value, name.shape, name.gradK (of input K).", "torch_grid_sample_values", "std::vector<double>", entries)
