# Writes tests/swa_torch_values.h, the literals of tests/test_swa_utils.cpp, from torch's
# torch.optim.swa_utils: SWALR's rates step by step; AveragedModel's average of a Linear(3, 2) ->
# BatchNorm1d(2) model (f64) whose parameters take operands 1..4 of tests/sine_operands.h in turn
# (the batch norm's buffers fed by a train-mode forward of operand 10 + k after each), with the
# default mean, with torch 2.1's EMA (get_ema_avg_fn(0.75), written out: 1.13 lacks it) and with
# use_buffers (without it only the parameters: torch 2.x copies the buffers from the model, which
# the test checks directly); and update_bn over three batches of operands 20..22 ([5, 3]).
# Run with the benchmark baseline's torch: /usr/bin/python3 tests/torch_refs/swa_utils.py > tests/swa_torch_values.h
import torch
from torch.optim.swa_utils import SWALR, AveragedModel, update_bn
from sine_operands import operand, print_header, print_map, vals

torch.set_default_dtype(torch.float64)
entries = []

def swalr_case(key, swa_lr, anneal_epochs, strategy, steps=12):
    p1, p2 = torch.zeros(2, requires_grad=True), torch.zeros(2, requires_grad=True)
    opt = torch.optim.SGD([{"params": [p1], "lr": 0.1}, {"params": [p2], "lr": 0.3}], lr=0.1)
    sched = SWALR(opt, swa_lr=swa_lr, anneal_epochs=anneal_epochs, anneal_strategy=strategy)
    rates = [g["lr"] for g in opt.param_groups]
    for _ in range(steps):
        opt.step()
        sched.step()
        rates += [g["lr"] for g in opt.param_groups]
    entries.append((key, vals(torch.tensor(rates))))

swalr_case("swalr.cos5", [0.05, 0.02], 5, "cos")
swalr_case("swalr.linear3", 0.01, 3, "linear")
swalr_case("swalr.none", 0.04, 0, "cos")

def model():
    return torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.BatchNorm1d(2))

def set_state(m, k):
    with torch.no_grad():
        for i, p in enumerate(m.parameters()):
            p.copy_(operand(k, p.shape) * (1 + i))
    m.train()
    m(operand(10 + k, (4, 3)))

def ema(decay):
    def fn(averaged, current, num_averaged):
        return decay * averaged + (1 - decay) * current
    return fn

def average_case(key, **kwargs):
    m = model()
    avg = AveragedModel(m, **kwargs)
    for k in range(1, 5):
        set_state(m, k)
        avg.update_parameters(m)
    for name, t in avg.state_dict().items():
        # Without use_buffers, 1.13 leaves the copy's buffers as they were at construction; 2.x
        # copies the model's (the test checks that against the model itself).
        if kwargs.get("use_buffers") or not any(b in name for b in ("running_", "num_batches")):
            entries.append((f"{key}.{name}", vals(t.to(torch.float64))))

average_case("mean")
average_case("ema", avg_fn=ema(0.75))
average_case("buffers", use_buffers=True)

m = model()
set_state(m, 1)
m.eval()
update_bn([operand(20 + b, (5, 3)) for b in range(3)], m)
entries.append(("update_bn.training", vals(torch.tensor([float(m.training)]))))
for name, t in m.state_dict().items():
    entries.append((f"update_bn.{name}", vals(t.to(torch.float64))))

print_header("swa_utils.py")
print_map("Each case's values, by name (see the script).", "swa_torch_values", "std::vector<double>", entries)
