# Writes tests/recurrent_torch_values.h, the literals of tests/test_recurrent.cpp: torch.nn's LSTM, GRU, RNN and their cells in f64
# with every parameter set to operand 10 + i * 0.5 (in registration order), on the inputs of
# tests/sine_operands.h; the loss is the sum of each output times cosine weights of its shape.
# Run with the benchmark baseline's torch: /usr/bin/python3 tests/torch_refs/recurrent.py > tests/recurrent_torch_values.h
import torch, math
from sine_operands import cosine_weights, operand, print_header, print_map, vals
def set_params(m):
    with torch.no_grad():
        for i, p in enumerate(m.parameters()): p.copy_(operand(10 + i, p.shape) * 0.5)
    return m
def flat_outputs(m, out):
    """A module's outputs as one list: output, h_n (, c_n) for the sequences; h (, c) for the cells."""
    if isinstance(m, torch.nn.RNNCellBase): return list(out) if isinstance(out, tuple) else [out]
    return [out[0]] + (list(out[1]) if isinstance(out[1], tuple) else [out[1]])
def run(name, m, x, state, grads_of):
    x = x.requires_grad_()
    out = m(x, state) if state is not None else m(x)
    outs = flat_outputs(m, out)
    loss = sum((o * cosine_weights(o.shape)).sum() for o in outs)
    extra = [dict(m.named_parameters())[n] for n in grads_of]
    ins = [x] + ([s for s in (state if isinstance(state, tuple) else (state,))] if state is not None else [])
    g = torch.autograd.grad(loss, ins + extra)
    reprs.append((name, str(m)))
    entries.extend((f"{name}.out{i}", vals(o)) for i, o in enumerate(outs))
    entries.extend((f"{name}.grad{i}", vals(t)) for i, t in enumerate(g))
reprs, entries = [], []
torch.set_default_dtype(torch.float64)
L, N, I, H = 4, 2, 3, 3
lstm = set_params(torch.nn.LSTM(I, H, num_layers=2, bidirectional=True))
h0, c0 = operand(1, (4, N, H)).requires_grad_(), operand(2, (4, N, H)).requires_grad_()
run("lstm", lstm, operand(0, (L, N, I)), (h0, c0), ["weight_hh_l1_reverse", "bias_ih_l0"])
# proj_size: hidden 4, projected to 2; h0 [4, N, 2], c0 [4, N, 4].
lstm_proj = set_params(torch.nn.LSTM(I, 4, num_layers=2, bidirectional=True, batch_first=True, proj_size=2))
hp, cp = operand(11, (4, N, 2)).requires_grad_(), operand(12, (4, N, 4)).requires_grad_()
run("lstm proj", lstm_proj, operand(9, (N, L, I)), (hp, cp), ["weight_hr_l1_reverse", "weight_hh_l0"])
gru = set_params(torch.nn.GRU(I, H, batch_first=True, bidirectional=True))
run("gru", gru, operand(3, (N, L, I)), None, ["weight_ih_l0_reverse", "bias_hh_l0"])
rnn = set_params(torch.nn.RNN(I, H, num_layers=2, nonlinearity="relu", bias=False))
run("rnn_relu unbatched", rnn, operand(4, (L, I)), operand(5, (2, H)).requires_grad_(), ["weight_hh_l0"])
for cls in [torch.nn.RNNCell, torch.nn.LSTMCell, torch.nn.GRUCell]:
    cell = set_params(cls(I, H))
    hx = operand(7, (N, H)).requires_grad_()
    state = (hx, operand(8, (N, H)).requires_grad_()) if cls is torch.nn.LSTMCell else hx
    run(cls.__name__, cell, operand(6, (N, I)), state, ["weight_hh", "bias_ih"])
print_header("recurrent.py")
print_map("name.outK: the module's K-th output; name.gradK: the gradient of the input, the states, then the named "
          "parameters.", "torch_recurrent_values", "std::vector<double>", entries)
reprs += [("rnn_options", str(torch.nn.RNN(3, 4, nonlinearity="relu", bias=False, batch_first=True, dropout=0.5, num_layers=2))),
          ("rnn_cell_options", str(torch.nn.RNNCell(3, 4, nonlinearity="relu", bias=False))),
          ("gru_bidirectional", str(torch.nn.GRU(3, 4, bidirectional=True))),
          ("lstm_proj_options", str(torch.nn.LSTM(3, 4, proj_size=2, num_layers=2)))]
print_map("Each module's repr.", "torch_recurrent_reprs", "std::string", [(k, f'"{v}"') for k, v in reprs])
