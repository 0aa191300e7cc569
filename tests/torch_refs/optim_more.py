# Writes tests/optim_more_torch_values.h, the literals of tests/test_optim_more.cpp: a parameter of
# 5 f64 values (operand 0 of tests/sine_operands.h) updated 8 times with the gradients operand 1 + step,
# after every step. Adadelta, Adamax, RAdam (L2 weight decay), Rprop and ASGD are torch 1.13's own optimizers;
# NAdam and the decoupled weight decay of NAdam and RAdam follow torch 2.x's single-tensor code,
# written out below, because 1.13 lacks the option and its NAdam multiplies mu twice into the next
# mu product (fixed in 2.x). As in torch, NAdam's mu product is a 0-dim f32 tensor.
# Run with the benchmark baseline's torch: /usr/bin/python3 tests/torch_refs/optim_more.py > tests/optim_more_torch_values.h
import math, torch
from sine_operands import operand, print_header, print_map, vals
STEPS, N = 8, 5

def nadam_2x(p, grads, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, momentum_decay=4e-3, decoupled=False):
    b1, b2 = betas
    exp_avg, exp_avg_sq, mu_product = torch.zeros_like(p), torch.zeros_like(p), torch.ones((), dtype=torch.float32)
    out = []
    for step, grad in enumerate(grads, 1):
        if weight_decay != 0:
            if decoupled: p.mul_(1 - lr * weight_decay)
            else: grad = grad.add(p, alpha=weight_decay)
        bias_correction2 = 1 - b2 ** step
        mu = b1 * (1. - 0.5 * (0.96 ** (step * momentum_decay)))
        mu_next = b1 * (1. - 0.5 * (0.96 ** ((step + 1) * momentum_decay)))
        mu_product *= mu
        exp_avg.lerp_(grad, 1 - b1)
        exp_avg_sq.mul_(b2).addcmul_(grad, grad, value=1 - b2)
        denom = exp_avg_sq.div(bias_correction2).sqrt().add(eps)
        mu_product_next = mu_product.item() * mu_next
        p.addcdiv_(grad, denom, value=(-lr * (1. - mu) / (1. - mu_product.item())))
        p.addcdiv_(exp_avg, denom, value=(-lr * mu_next) / (1. - mu_product_next))
        out.append(p.clone())
    return out

def radam_2x_decoupled(p, grads, lr, betas, eps, weight_decay):
    b1, b2 = betas
    exp_avg, exp_avg_sq = torch.zeros_like(p), torch.zeros_like(p)
    out = []
    for step, grad in enumerate(grads, 1):
        p.mul_(1 - lr * weight_decay)
        exp_avg.lerp_(grad, 1 - b1)
        exp_avg_sq.mul_(b2).addcmul_(grad, grad, value=1 - b2)
        bias_correction1, bias_correction2 = 1 - b1 ** step, 1 - b2 ** step
        bias_corrected_exp_avg = exp_avg / bias_correction1
        rho_inf = 2 / (1 - b2) - 1
        rho_t = rho_inf - 2 * step * (b2 ** step) / bias_correction2
        if rho_t > 5.0:
            rect = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
            adaptive_lr = math.sqrt(bias_correction2) / exp_avg_sq.sqrt().add_(eps)
            p.add_(bias_corrected_exp_avg * lr * adaptive_lr * rect, alpha=-1.0)
        else:
            p.add_(bias_corrected_exp_avg * lr, alpha=-1.0)
        out.append(p.clone())
    return out

def torch_run(make):
    p = operand(0, (N,)).requires_grad_()
    opt = make([p])
    out = []
    for s in range(STEPS):
        p.grad = operand(1 + s, (N,))
        opt.step()
        out.append(p.detach().clone())
    return out

grads = [operand(1 + s, (N,)) for s in range(STEPS)]
cases = [
    ("adadelta", torch_run(lambda ps: torch.optim.Adadelta(ps))),
    ("adadelta lr0.5 rho0.8 wd0.1 maximize", torch_run(lambda ps: torch.optim.Adadelta(ps, lr=0.5, rho=0.8, weight_decay=0.1, maximize=True))),
    ("adamax", torch_run(lambda ps: torch.optim.Adamax(ps))),
    ("adamax lr0.05 betas0.8,0.9 wd0.1 maximize", torch_run(lambda ps: torch.optim.Adamax(ps, lr=0.05, betas=(0.8, 0.9), weight_decay=0.1, maximize=True))),
    ("radam", torch_run(lambda ps: torch.optim.RAdam(ps))),
    ("radam lr0.01 betas0.8,0.99 wd0.1", torch_run(lambda ps: torch.optim.RAdam(ps, lr=0.01, betas=(0.8, 0.99), weight_decay=0.1))),
    ("radam decoupled lr0.01 betas0.8,0.99 wd0.1", radam_2x_decoupled(operand(0, (N,)), grads, 0.01, (0.8, 0.99), 1e-8, 0.1)),
    ("nadam", nadam_2x(operand(0, (N,)), grads)),
    ("nadam lr0.01 md0.1 wd0.1", nadam_2x(operand(0, (N,)), grads, lr=0.01, weight_decay=0.1, momentum_decay=0.1)),
    ("nadam decoupled lr0.01 wd0.1", nadam_2x(operand(0, (N,)), grads, lr=0.01, weight_decay=0.1, decoupled=True)),
    ("rprop", torch_run(lambda ps: torch.optim.Rprop(ps))),
    ("rprop lr0.1 etas0.3,1.5 steps0.01,0.2 maximize", torch_run(lambda ps: torch.optim.Rprop(ps, lr=0.1, etas=(0.3, 1.5), step_sizes=(0.01, 0.2), maximize=True))),
    ("asgd", torch_run(lambda ps: torch.optim.ASGD(ps))),
    ("asgd lr0.05 lambd0.01 alpha0.5 t0_2 wd0.1", torch_run(lambda ps: torch.optim.ASGD(ps, lr=0.05, lambd=0.01, alpha=0.5, t0=2, weight_decay=0.1))),
]

# ASGD's average of the iterates ("ax") after the 8 steps, with averaging from step 2 on.
p = operand(0, (N,)).requires_grad_()
asgd = torch.optim.ASGD([p], lr=0.05, lambd=0.01, alpha=0.5, t0=2, weight_decay=0.1)
for s in range(STEPS):
    p.grad = operand(1 + s, (N,))
    asgd.step()
state = asgd.state[p]
print_header("optim_more.py")
print_map("Per case, the parameter after each of the 8 steps, concatenated.", "torch_optim_more_values",
          "std::vector<double>", [(name, vals(torch.cat(ps))) for name, ps in cases])
print_map("ASGD's state after those 8 steps (the last case): ax, eta and mu.", "torch_asgd_state_values",
          "std::vector<double>", [(k, vals(state[k].to(torch.float64).reshape(-1))) for k in ("ax", "eta", "mu")])
