# Writes tests/packed_sequence_torch_values.h, the literals of tests/test_packed_sequence.cpp:
# torch.nn.utils.rnn in f64 on operands of tests/sine_operands.h: pack_padded_sequence of an
# unsorted batch (lengths 2, 4, 3) and back; a 2-layer bidirectional LSTM(2, 3) on it with given
# h0 and c0; a batch-first GRU(2, 3) on a sorted batch (lengths 4, 2, 1); pad_sequence. Parameters
# i set to 0.5 * operand 10 + i; values, and gradients of sum(padded output * cosine weights) +
# sum(h_n * cosine weights) (+ the same of c_n) with respect to the input and h0.
# Run with the benchmark baseline's torch: /usr/bin/python3 tests/torch_refs/packed_sequence.py > tests/packed_sequence_torch_values.h
import torch
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence, pad_sequence
from sine_operands import cosine_weights, operand, print_header, print_map, set_sine_parameters, vals

torch.set_default_dtype(torch.float64)
entries = []


def weighted(t):
    return (t * cosine_weights(t.shape)).sum()


x = operand(0, (4, 3, 2)).requires_grad_()
packed = pack_padded_sequence(x, torch.tensor([2, 4, 3]), enforce_sorted=False)
entries += [("pack.data", vals(packed.data)), ("pack.batch_sizes", vals(packed.batch_sizes.double())),
            ("pack.sorted_indices", vals(packed.sorted_indices.double())),
            ("pack.unsorted_indices", vals(packed.unsorted_indices.double()))]
padded, lengths = pad_packed_sequence(packed, padding_value=-1.0, total_length=5)
entries += [("pad.value", vals(padded)), ("pad.lengths", vals(lengths.double()))]

lstm = torch.nn.LSTM(2, 3, num_layers=2, bidirectional=True)
set_sine_parameters(lstm)
h0 = operand(1, (4, 3, 3)).requires_grad_()
c0 = operand(2, (4, 3, 3))
out, (h_n, c_n) = lstm(packed, (h0, c0))
out_padded, _ = pad_packed_sequence(out)
gx, gh = torch.autograd.grad(weighted(out_padded) + weighted(h_n) + weighted(c_n), [x, h0])
entries += [("lstm.output", vals(out_padded)), ("lstm.h_n", vals(h_n)), ("lstm.c_n", vals(c_n)),
            ("lstm.packed_data", vals(out.data)), ("lstm.grad_input", vals(gx)), ("lstm.grad_h0", vals(gh))]

gru = torch.nn.GRU(2, 3, batch_first=True)
set_sine_parameters(gru)
xb = operand(3, (3, 4, 2)).requires_grad_()
out, h_n = gru(pack_padded_sequence(xb, [4, 2, 1], batch_first=True))
out_padded, _ = pad_packed_sequence(out, batch_first=True)
(gx,) = torch.autograd.grad(weighted(out_padded) + weighted(h_n), [xb])
entries += [("gru.output", vals(out_padded)), ("gru.h_n", vals(h_n)), ("gru.grad_input", vals(gx))]

seqs = [operand(4, (3, 2)), operand(5, (1, 2)), operand(6, (2, 2))]
entries += [("pad_sequence.value", vals(pad_sequence(seqs, batch_first=True, padding_value=-1.0)))]
print_header("packed_sequence.py")
print_map("key: values (index tensors as doubles).", "torch_packed_sequence_values", "std::vector<double>", entries)
