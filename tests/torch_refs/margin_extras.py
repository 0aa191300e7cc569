# Writes tests/margin_extras_torch_values.h, the literals of tests/test_margin_extras.cpp:
# multilabel_margin_loss (fixed targets, -1 terminated, a repeated class), triplet_margin_with_distance_loss
# (default distance, and 1 - cosine similarity with swap) and pdist (p 2, 1, 3) on the inputs of
# tests/sine_operands.h (f64), with the gradients of sum(y * cosine weights) for every input.
# Run with the benchmark baseline's torch: /usr/bin/python3 tests/torch_refs/margin_extras.py > tests/margin_extras_torch_values.h
import torch, torch.nn.functional as F
from sine_operands import case_entries, print_header, print_map

T = lambda rows: torch.tensor(rows, dtype=torch.long)
cosine_distance = lambda a, b: 1 - F.cosine_similarity(a, b)
cases = [
    ("multilabel_margin_loss", [(3, 4)], lambda x: F.multilabel_margin_loss(x[0], T([[3, 0, -1, 1], [1, 2, 3, 0], [-1, 0, 0, 0]]))),
    ("multilabel_margin_loss 1d none", [(5,)], lambda x: F.multilabel_margin_loss(x[0], T([4, 1, -1, 0, 0]), reduction="none")),
    ("multilabel_margin_loss repeated sum", [(1, 4)], lambda x: F.multilabel_margin_loss(x[0], T([[2, 2, -1, 0]]), reduction="sum")),
    ("triplet_with_distance", [(4, 3), (4, 3), (4, 3)], lambda x: F.triplet_margin_with_distance_loss(x[0], x[1], x[2])),
    ("triplet_with_distance cosine swap", [(4, 3), (4, 3), (4, 3)],
     lambda x: F.triplet_margin_with_distance_loss(x[0], x[1], x[2], distance_function=cosine_distance, margin=0.5,
                                                   swap=True, reduction="none")),
    ("pdist", [(4, 3)], lambda x: F.pdist(x[0])),
    ("pdist p1", [(5, 2)], lambda x: F.pdist(x[0], 1.0)),
    ("pdist p3", [(4, 3)], lambda x: F.pdist(x[0], 3.0)),
]
print_header("margin_extras.py")
print_map("name.value, name.shape, name.gradK (of input K).", "torch_margin_extras_values", "std::vector<double>",
          case_entries(cases, with_shape=True))
