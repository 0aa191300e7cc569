# Writes tests/mha_extras_torch_values.h, the literals of the kdim/vdim, add_bias_kv and
# add_zero_attn cases of tests/test_transformer_decoder.cpp: torch.nn.MultiheadAttention in f64
# (training mode, dropout 0), parameter i set to 0.5 * operand 10 + i of tests/sine_operands.h:
# "kv": embed 4, 2 heads, kdim 3, vdim 5, add_bias_kv and add_zero_attn, query operand 0 [3, 2, 4],
# key operand 1 [5, 2, 3], value operand 2 [5, 2, 5], a key padding mask and a float attn_mask
# (operand 3 [3, 5]); "zero": same widths, add_zero_attn only, batch first, self-attention on
# operand 0 [2, 3, 4] with a bool attn_mask. The output, the averaged weights and the gradients of
# sum(output * cosine weights) + sum(weights * cosine weights) with respect to every input.
# Run with the benchmark baseline's torch: /usr/bin/python3 tests/torch_refs/mha_extras.py > tests/mha_extras_torch_values.h
import torch
from sine_operands import cosine_weights, operand, print_header, print_map, set_sine_parameters, vals

torch.set_default_dtype(torch.float64)
entries, names = [], []


def weighted(t):
    return (t * cosine_weights(t.shape)).sum()


mha = torch.nn.MultiheadAttention(4, 2, kdim=3, vdim=5, add_bias_kv=True, add_zero_attn=True)
names.append(("kv", set_sine_parameters(mha)))
q, k, v = operand(0, (3, 2, 4)).requires_grad_(), operand(1, (5, 2, 3)).requires_grad_(), operand(2, (5, 2, 5)).requires_grad_()
padding = torch.tensor([[False, False, False, True, False], [False, False, False, False, False]])
out, w = mha(q, k, v, key_padding_mask=padding, attn_mask=operand(3, (3, 5)))
grads = torch.autograd.grad(weighted(out) + weighted(w), [q, k, v])
entries += [("kv.value", vals(out)), ("kv.weights", vals(w))] + [(f"kv.grad{i}", vals(g)) for i, g in enumerate(grads)]

mha = torch.nn.MultiheadAttention(4, 2, add_zero_attn=True, batch_first=True)
names.append(("zero", set_sine_parameters(mha)))
x = operand(0, (2, 3, 4)).requires_grad_()
blocked = torch.tensor([[False, True, True], [False, False, True], [False, False, False]])
out, w = mha(x, x, x, attn_mask=blocked)
(g,) = torch.autograd.grad(weighted(out) + weighted(w), [x])
entries += [("zero.value", vals(out)), ("zero.weights", vals(w)), ("zero.grad0", vals(g))]
print_header("mha_extras.py")
print_map("key.value, key.weights, key.gradK (of input K).", "torch_mha_extras_values", "std::vector<double>", entries)
print_map("Each module's parameter names, in order, comma-separated.", "torch_mha_extras_names", "std::string", names)
