# Writes tests/chained_scheduler_torch_values.h, the literals of tests/test_chained_scheduler.cpp:
# torch's ChainedScheduler on an SGD optimizer with two param groups (lr 0.1 and 0.3), each group's
# rate at construction and after each step, for chains of the multiplicative schedules.
# Run with the benchmark baseline's torch:
#   /usr/bin/python3 tests/torch_refs/chained_scheduler.py > tests/chained_scheduler_torch_values.h
import torch
from torch.optim import lr_scheduler as S
from sine_operands import print_header, print_map, vals

def case(key, steps, make):
    p1, p2 = torch.zeros(2, requires_grad=True), torch.zeros(2, requires_grad=True)
    opt = torch.optim.SGD([{"params": [p1]}, {"params": [p2], "lr": 0.3}], lr=0.1)
    sched = S.ChainedScheduler(make(opt))
    rates = []
    for s in range(steps + 1):
        if s:
            opt.step()
            sched.step()
        rates += [g["lr"] for g in opt.param_groups]
    return [(key, vals(torch.tensor(rates, dtype=torch.float64)))]

entries = []
entries += case("constant_exponential", 8, lambda o: [S.ConstantLR(o, factor=0.1, total_iters=2), S.ExponentialLR(o, gamma=0.9)])
entries += case("step_linear", 10, lambda o: [S.StepLR(o, step_size=3, gamma=0.5), S.LinearLR(o, start_factor=0.25, total_iters=4)])
entries += case("multistep_polynomial_multiplicative", 9,
                lambda o: [S.MultiStepLR(o, milestones=[2, 5], gamma=0.1), S.PolynomialLR(o, total_iters=6, power=2.0),
                           S.MultiplicativeLR(o, lr_lambda=lambda e: 0.95)])
print_header("chained_scheduler.py")
print_map("Each chain's rates, two groups per step.", "chained_scheduler_torch_values", "std::vector<double>", entries)
