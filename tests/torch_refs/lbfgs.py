# Writes tests/lbfgs_torch_values.h, the literals of tests/test_lbfgs.cpp: torch.optim.LBFGS in f64
# on a smooth coupled objective of two parameters (p1 [2] from 0.5 * operand 0, p2 [3] from operand 1
# of tests/sine_operands.h): a Rosenbrock term in p1, least squares in p2 (M = operand 20 [4, 3],
# c = operand 21 [4]), a quartic and a coupling term. Three steps per case; after each the returned
# loss, both parameters flattened, and (func_evals, n_iter) of the state.
# Run with the benchmark baseline's torch: /usr/bin/python3 tests/torch_refs/lbfgs.py > tests/lbfgs_torch_values.h
import torch
from sine_operands import operand, print_header, print_map, vals

torch.set_default_dtype(torch.float64)
M, c = operand(20, (4, 3)), operand(21, (4,))


def objective(p1, p2):
    return ((1 - p1[0]) ** 2 + 5 * (p1[1] - p1[0] ** 2) ** 2 + ((M @ p2 - c) ** 2).sum()
            + 0.1 * (p2 ** 4).sum() + 0.3 * p1[0] * p2.sum())


entries = []
for key, options in [("plain", dict(lr=0.5, max_iter=5, history_size=3)),
                     ("wolfe", dict(lr=1, max_iter=10, line_search_fn="strong_wolfe")),
                     ("wolfe_short", dict(lr=1, max_iter=4, max_eval=6, history_size=2, line_search_fn="strong_wolfe")),
                     ("defaults", dict())]:
    p1 = (0.5 * operand(0, (2,))).requires_grad_()
    p2 = operand(1, (3,)).requires_grad_()
    opt = torch.optim.LBFGS([p1, p2], **options)

    def closure():
        opt.zero_grad()
        loss = objective(p1, p2)
        loss.backward()
        return loss

    for k in range(3):
        loss = opt.step(closure)
        state = opt.state[p1]
        entries += [(f"{key}.step{k}.loss", vals(loss.reshape(1))),
                    (f"{key}.step{k}.params", vals(torch.cat([p1.detach(), p2.detach()]))),
                    (f"{key}.step{k}.counts", vals(torch.tensor([float(state['func_evals']), float(state['n_iter'])])))]
print_header("lbfgs.py")
print_map("case.stepK.loss (returned by step), .params (p1 then p2), .counts (func_evals, n_iter).",
          "torch_lbfgs_values", "std::vector<double>", entries)
