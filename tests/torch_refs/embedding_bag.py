# Writes tests/embedding_bag_torch_values.h, the literals of tests/test_embedding_bag.cpp:
# torch.nn.functional.embedding_bag in f64 on weight operand 0 [10, 3] of tests/sine_operands.h (and
# per_sample_weights operand 1): sum, mean and max over 1-D indices with offsets (an empty bag among
# them), include_last_offset, padding_idx, per_sample_weights, and a 2-D index tensor; the values and
# the gradients of sum(y * cosine weights) with respect to the weight (and the per-sample weights).
# Run with the benchmark baseline's torch: /usr/bin/python3 tests/torch_refs/embedding_bag.py > tests/embedding_bag_torch_values.h
import torch
import torch.nn.functional as F
from sine_operands import case_entries, print_header, print_map

torch.set_default_dtype(torch.float64)
idx = torch.tensor([1, 2, 4, 5, 4, 3, 2, 9])
offsets = torch.tensor([0, 3, 3, 6])
last = torch.tensor([0, 2, 2, 8])  # with include_last_offset: bags [0, 2), [2, 2), [2, 8)
cases = [
    ("sum_offsets", [(10, 3)], lambda x: F.embedding_bag(idx, x[0], offsets, mode="sum")),
    ("mean_offsets", [(10, 3)], lambda x: F.embedding_bag(idx, x[0], offsets, mode="mean")),
    ("max_offsets", [(10, 3)], lambda x: F.embedding_bag(idx, x[0], offsets, mode="max")),
    ("mean_padding", [(10, 3)], lambda x: F.embedding_bag(idx, x[0], offsets, mode="mean", padding_idx=4)),
    ("max_padding", [(10, 3)], lambda x: F.embedding_bag(idx, x[0], offsets, mode="max", padding_idx=2)),
    ("sum_last", [(10, 3)], lambda x: F.embedding_bag(idx, x[0], last, mode="sum", include_last_offset=True)),
    ("max_last", [(10, 3)], lambda x: F.embedding_bag(idx, x[0], last, mode="max", include_last_offset=True)),
    ("sum_weighted", [(10, 3), (8,)], lambda x: F.embedding_bag(idx, x[0], offsets, mode="sum", per_sample_weights=x[1])),
    ("mean_2d", [(10, 3)], lambda x: F.embedding_bag(idx.reshape(2, 4), x[0], mode="mean")),
    ("sum_2d_padding", [(10, 3)], lambda x: F.embedding_bag(idx.reshape(4, 2), x[0], mode="sum", padding_idx=4)),
]
print_header("embedding_bag.py")
print_map("name.value, name.gradK (of input K).", "torch_embedding_bag_values", "std::vector<double>", case_entries(cases))
