# Writes tests/cnn_extras_torch_values.h, the literals of tests/test_cnn_extras.cpp: channel_shuffle,
# local_response_norm, lp_pool1d/2d and max_unpool1d/2d (after max pooling, overlapping windows
# included) on the inputs of tests/sine_operands.h (f64), the gradients of sum(y * cosine weights)
# with respect to every input, and the modules' reprs.
# Run with the benchmark baseline's torch: /usr/bin/python3 tests/torch_refs/cnn_extras.py > tests/cnn_extras_torch_values.h
import torch, torch.nn.functional as F
from sine_operands import case_entries, print_header, print_map
pos = lambda t: t.abs() + 0.1   # lp pooling of positive values (a negative window sum has no real root)

def unpool2d(x, k, s, **kw):
    y, i = F.max_pool2d(x, k, s, return_indices=True)
    return F.max_unpool2d(y, i, k, s, **kw)

def unpool1d(x, k, s, **kw):
    y, i = F.max_pool1d(x, k, s, return_indices=True)
    return F.max_unpool1d(y, i, k, s, **kw)

def shuffle(x, g):
    # torch 1.13's channel_shuffle has no derivative (2.x has): its values, with the gradient of the
    # same rearrangement written as view + transpose (as 2.x's math kernel).
    n, c = x.shape[:2]
    y = x.reshape(n, g, c // g, *x.shape[2:]).transpose(1, 2).reshape(x.shape)
    assert torch.equal(y, F.channel_shuffle(x.detach(), g))
    return y

cases = [
    ("channel_shuffle 3d", [(2, 6, 2)], lambda x: shuffle(x[0], 3)),
    ("channel_shuffle 4d", [(1, 4, 2, 2)], lambda x: shuffle(x[0], 2)),
    ("local_response_norm 3d", [(2, 5, 3)], lambda x: F.local_response_norm(x[0], 3)),
    ("local_response_norm 4d", [(2, 6, 2, 2)], lambda x: F.local_response_norm(x[0], 4, alpha=0.1, beta=0.6, k=2.0)),
    ("local_response_norm 5d size1", [(1, 3, 2, 2, 2)], lambda x: F.local_response_norm(x[0], 1, alpha=0.5)),
    ("lp_pool2d p2", [(1, 2, 4, 5)], lambda x: F.lp_pool2d(pos(x[0]), 2, 2)),
    ("lp_pool2d p3 rect stride1", [(1, 2, 4, 5)], lambda x: F.lp_pool2d(pos(x[0]), 3, (2, 3), stride=1)),
    ("lp_pool2d p1.5 ceil", [(1, 1, 6, 7)], lambda x: F.lp_pool2d(pos(x[0]), 1.5, 3, stride=2, ceil_mode=True)),
    ("lp_pool1d p2", [(2, 3, 8)], lambda x: F.lp_pool1d(pos(x[0]), 2, 3, stride=2)),
    ("max_unpool2d overlapping", [(1, 2, 5, 5)], lambda x: unpool2d(x[0], 3, 2)),
    ("max_unpool2d output_size", [(2, 1, 4, 4)], lambda x: unpool2d(x[0], 2, 2, output_size=(5, 5))),
    ("max_unpool1d output_size", [(2, 3, 6)], lambda x: unpool1d(x[0], 2, 2, output_size=[7])),
]
print_header("cnn_extras.py")
entries = case_entries(cases, with_shape=True)
print_map("name.value, name.shape, name.gradK (of input K).", "torch_cnn_extras_values", "std::vector<double>", entries)
modules = [("channel_shuffle", torch.nn.ChannelShuffle(3)), ("lrn", torch.nn.LocalResponseNorm(3)),
           ("lp_pool2d", torch.nn.LPPool2d(2, 3, stride=2)), ("lp_pool1d", torch.nn.LPPool1d(1.5, 2)),
           ("max_unpool2d", torch.nn.MaxUnpool2d(2)), ("max_unpool1d", torch.nn.MaxUnpool1d(3, stride=2, padding=1))]
print_map("Each module's repr.", "torch_cnn_extras_reprs", "std::string", [(k, f'"{m}"') for k, m in modules])
