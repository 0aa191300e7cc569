# Writes tests/cyclic_lr_torch_values.h, the literals of tests/test_cyclic_lr.cpp: torch's CyclicLR
# on an SGD optimizer with two param groups (momentum 0.5 at first), each group's rate and
# momentum at construction and after each step, for every mode, uneven halves, no momentum
# cycling and a user scale function of the step.
# Run with the benchmark baseline's torch: /usr/bin/python3 tests/torch_refs/cyclic_lr.py > tests/cyclic_lr_torch_values.h
import torch
from sine_operands import print_header, print_map, vals

def case(key, steps, **kwargs):
    p1, p2 = torch.zeros(2, requires_grad=True), torch.zeros(2, requires_grad=True)
    opt = torch.optim.SGD([{"params": [p1]}, {"params": [p2], "lr": 0.3}], lr=0.1, momentum=0.5)
    sched = torch.optim.lr_scheduler.CyclicLR(opt, **kwargs)
    rates, momenta = [], []
    for s in range(steps + 1):
        if s:
            opt.step()
            sched.step()
        rates += [g["lr"] for g in opt.param_groups]
        momenta += [g["momentum"] for g in opt.param_groups]
    return [(key + ".lr", vals(torch.tensor(rates, dtype=torch.float64))),
            (key + ".momentum", vals(torch.tensor(momenta, dtype=torch.float64)))]

entries = []
entries += case("triangular", 15, base_lr=[0.01, 0.02], max_lr=[0.1, 0.2], step_size_up=4, step_size_down=2)
entries += case("triangular2", 14, base_lr=0.001, max_lr=0.01, step_size_up=3, mode="triangular2", cycle_momentum=False)
entries += case("exp_range", 12, base_lr=0.05, max_lr=0.5, step_size_up=2, mode="exp_range", gamma=0.9,
                base_momentum=0.7, max_momentum=0.95)
entries += case("custom", 10, base_lr=0.01, max_lr=0.03, step_size_up=2, scale_fn=lambda x: 1 / (1 + 0.1 * x),
                scale_mode="iterations")
print_header("cyclic_lr.py")
print_map("Each case's rates and momenta, two groups per step.", "cyclic_lr_torch_values", "std::vector<double>", entries)
