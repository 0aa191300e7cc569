# Writes tests/ctc_loss_torch_values.h, the literals of tests/test_ctc_loss.cpp:
# torch.nn.functional.ctc_loss in f64 on operand 0 of tests/sine_operands.h as log_probs [T=6, N=3,
# C=5] (PyTorch's own gradient formula, "lp_" cases) or as logits through log_softmax ("logits_"
# cases): padded and 1-D targets (a repeated label, an empty target), the three reductions, another
# blank, zero_infinity on an impossible alignment, an unbatched input; values and gradients of
# sum(y * cosine weights).
# Run with the benchmark baseline's torch: /usr/bin/python3 tests/torch_refs/ctc_loss.py > tests/ctc_loss_torch_values.h
import torch
import torch.nn.functional as F
from sine_operands import case_entries, print_header, print_map

torch.set_default_dtype(torch.float64)
padded = torch.tensor([[1, 1, 2, 3], [3, 2, 0, 0], [0, 0, 0, 0]])
concatenated = torch.tensor([1, 1, 2, 3, 3, 2])
il, tl = torch.tensor([6, 4, 3]), torch.tensor([4, 2, 0])
short = torch.tensor([6, 2, 3])  # sample 1: "3 2" in 2 frames, the fewest possible
impossible_il = torch.tensor([6, 1, 3])  # two labels in one frame: no alignment
cases = [
    ("lp_mean", [(6, 3, 5)], lambda x: F.ctc_loss(x[0], padded, il, tl)),
    ("lp_none", [(6, 3, 5)], lambda x: F.ctc_loss(x[0], padded, il, tl, reduction="none")),
    ("logits_mean", [(6, 3, 5)], lambda x: F.ctc_loss(x[0].log_softmax(2), padded, il, tl)),
    ("logits_sum_1d", [(6, 3, 5)], lambda x: F.ctc_loss(x[0].log_softmax(2), concatenated, il, tl, reduction="sum")),
    ("logits_none_blank4", [(6, 3, 5)],
     lambda x: F.ctc_loss(x[0].log_softmax(2), padded, short, tl, blank=4, reduction="none")),
    ("logits_zero_infinity", [(6, 3, 5)],
     lambda x: F.ctc_loss(x[0].log_softmax(2), padded, impossible_il, tl, reduction="none", zero_infinity=True)),
    ("logits_unbatched", [(6, 5)],
     lambda x: F.ctc_loss(x[0].log_softmax(1), torch.tensor([1, 1, 2]), torch.tensor(5), torch.tensor(3), reduction="sum")),
]
print_header("ctc_loss.py")
print_map("name.value, name.grad0.", "torch_ctc_loss_values", "std::vector<double>", case_entries(cases))
