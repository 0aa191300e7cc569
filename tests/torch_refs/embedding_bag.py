# Writes tests/embedding_bag_torch_values.h, the literals of tests/test_embedding_bag.cpp:
# torch.nn.functional.embedding_bag in f64 on weight operand 0 [10, 3] of tests/sine_operands.h (and
# per_sample_weights operand 1): sum, mean and max over 1-D indices with offsets (an empty bag among
# them), include_last_offset, padding_idx, per_sample_weights, and a 2-D index tensor; the values and
# the gradients of sum(y * cosine weights) with respect to the weight (and the per-sample weights).
# Also max_norm (embedding and embedding_bag, p = 2 and 1) on 1.5 * operand 0: the output, the
# renormalised table and its gradient.
# Run with the benchmark baseline's torch: /usr/bin/python3 tests/torch_refs/embedding_bag.py > tests/embedding_bag_torch_values.h
import torch
import torch.nn.functional as F
from sine_operands import case_entries, cosine_weights, operand, print_header, print_map, vals

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
entries = case_entries(cases)
for key, f in [("renorm_embedding", lambda w: F.embedding(idx.reshape(2, 4), w, max_norm=1.0)),
               ("renorm_embedding_p1", lambda w: F.embedding(idx, w, max_norm=1.5, norm_type=1.0, padding_idx=2)),
               ("renorm_bag", lambda w: F.embedding_bag(idx, w, offsets, mode="sum", max_norm=1.2))]:
    w = (1.5 * operand(0, (10, 3))).requires_grad_()
    y = f(w)
    (g,) = torch.autograd.grad((y * cosine_weights(y.shape)).sum(), [w])
    entries += [(f"{key}.value", vals(y)), (f"{key}.table", vals(w)), (f"{key}.grad0", vals(g))]
print_header("embedding_bag.py")
print_map("name.value, name.gradK (of input K); name.table (the renormalised weight).", "torch_embedding_bag_values",
          "std::vector<double>", entries)
