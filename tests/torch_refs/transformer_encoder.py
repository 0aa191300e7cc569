# Writes tests/transformer_encoder_torch_values.h, the literals of tests/test_transformer_encoder.cpp:
# torch.nn.TransformerEncoder (2 post-norm layers of d_model 4, 2 heads, feed-forward 8, dropout 0,
# batch_first, a final LayerNorm; and 3 pre-norm layers without one) in f64, training mode, each
# parameter i set to 0.5 * operand 10 + i of tests/sine_operands.h, on input operand 0 [2, 3, 4]
# with a key padding mask: the output, the input's gradient of sum(y * cosine weights), and the
# parameter names in order.
# Run with the benchmark baseline's torch: /usr/bin/python3 tests/torch_refs/transformer_encoder.py > tests/transformer_encoder_torch_values.h
import torch
from sine_operands import cosine_weights, operand, print_header, print_map, set_sine_parameters, vals

torch.set_default_dtype(torch.float64)
entries, names = [], []
for key, norm_first, layers, final_norm in [("post2", False, 2, True), ("pre3", True, 3, False)]:
    layer = torch.nn.TransformerEncoderLayer(4, 2, dim_feedforward=8, dropout=0.0, batch_first=True, norm_first=norm_first)
    enc = torch.nn.TransformerEncoder(layer, layers, norm=torch.nn.LayerNorm(4) if final_norm else None,
                                      enable_nested_tensor=False)
    names.append((key, set_sine_parameters(enc)))
    x = operand(0, (2, 3, 4)).requires_grad_()
    padding = torch.tensor([[False, False, True], [False, False, False]])
    y = enc(x, src_key_padding_mask=padding)
    (g,) = torch.autograd.grad((y * cosine_weights(y.shape)).sum(), [x])
    entries += [(f"{key}.value", vals(y)), (f"{key}.grad0", vals(g))]
print_header("transformer_encoder.py")
print_map("key.value, key.grad0 (of the input).", "torch_transformer_encoder_values", "std::vector<double>", entries)
print_map("Each encoder's parameter names, in order, comma-separated.", "torch_transformer_encoder_names", "std::string", names)
