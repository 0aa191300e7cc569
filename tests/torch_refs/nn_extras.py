# Writes tests/nn_extras_torch_values.h, the literals of tests/test_nn_extras.cpp: gaussian_nll_loss,
# bilinear, softmin and Softmax2d on the inputs of tests/sine_operands.h (f64), the gradients of
# sum(y * cosine weights) with respect to every input, and the modules' reprs.
# Run with the benchmark baseline's torch: /usr/bin/python3 tests/torch_refs/nn_extras.py > tests/nn_extras_torch_values.h
import torch, torch.nn.functional as F
from sine_operands import case_entries, operand, print_header, print_map
var = lambda k, s: operand(k, s).abs() + 0.05   # positive variances; operand 2 has entries near 0 for the clamp
cases = [
    ("gaussian_nll_loss", [(4, 3), (4, 3), None], lambda x: F.gaussian_nll_loss(x[0], x[1], x[2].abs() + 0.05)),
    ("gaussian_nll_loss full sum homoscedastic", [(4, 3), (4, 3), (4,)], lambda x: F.gaussian_nll_loss(x[0], x[1], x[2].abs() + 0.05, full=True, reduction="sum")),
    ("gaussian_nll_loss last dim 1 none eps", [(4, 3), (4, 3), (4, 1)], lambda x: F.gaussian_nll_loss(x[0], x[1], x[2].abs(), eps=0.1, reduction="none")),
    ("bilinear", [(2, 3, 4), (2, 3, 5), (6, 4, 5), (6,)], lambda x: F.bilinear(x[0], x[1], x[2], x[3])),
    ("bilinear no bias", [(4,), (5,), (2, 4, 5)], lambda x: F.bilinear(x[0].unsqueeze(0), x[1].unsqueeze(0), x[2]).squeeze(0)),
    ("softmin", [(3, 4)], lambda x: F.softmin(x[0], dim=1)),
    ("softmax2d", [(2, 3, 2, 2)], lambda x: torch.nn.Softmax2d()(x[0])),
]
print_header("nn_extras.py")
entries = case_entries(cases)
print_map("name.value, name.gradK (of input K).", "torch_nn_extras_values", "std::vector<double>", entries)
modules = [("bilinear", torch.nn.Bilinear(3, 4, 5)), ("bilinear no bias", torch.nn.Bilinear(3, 4, 5, bias=False)),
           ("softmin", torch.nn.Softmin(dim=1)), ("softmax2d", torch.nn.Softmax2d()), ("gaussian", torch.nn.GaussianNLLLoss(full=True))]
print_map("Each module's repr.", "torch_nn_extras_reprs", "std::string", [(k, f'"{m}"') for k, m in modules])
