# Writes tests/transformer_decoder_torch_values.h, the literals of tests/test_transformer_decoder.cpp,
# from torch.nn in f64 (training mode, dropout 0), each parameter i set to 0.5 * operand 10 + i of
# tests/sine_operands.h:
# - TransformerDecoder: 2 post-norm layers of d_model 4, 2 heads, feed-forward 8, batch_first, a
#   final LayerNorm ("post2"); 1 pre-norm GELU layer without one ("pre1"); tgt operand 0 [2, 3, 4],
#   memory operand 1 [2, 5, 4], the causal float tgt_mask and a memory key padding mask;
# - Transformer: d_model 4, 2 heads, 1 encoder and 2 decoder layers, feed-forward 8, sequence first;
#   src operand 0 [5, 2, 4], tgt operand 1 [3, 2, 4], a src key padding mask (also the memory's)
#   and the causal tgt_mask;
# - MultiheadAttention(4, 2) with need_weights, query operand 0 [3, 2, 4], key operand 1 and value
#   operand 2 [5, 2, 4], a key padding mask: the output and the weights averaged ("avg") and per
#   head ("heads"), and the query's gradient of sum(weights * cosine weights) (per head);
# the outputs, the gradients of sum(y * cosine weights) with respect to each input, parameter names.
# Run with the benchmark baseline's torch: /usr/bin/python3 tests/torch_refs/transformer_decoder.py > tests/transformer_decoder_torch_values.h
import torch
from sine_operands import cosine_weights, operand, print_header, print_map, set_sine_parameters, vals

torch.set_default_dtype(torch.float64)
entries, names = [], []


def outputs(key, y, inputs):
    gs = torch.autograd.grad((y * cosine_weights(y.shape)).sum(), inputs)
    return [(f"{key}.value", vals(y))] + [(f"{key}.grad{k}", vals(g)) for k, g in enumerate(gs)]


for key, norm_first, layers, final_norm, activation in [("post2", False, 2, True, "relu"), ("pre1", True, 1, False, "gelu")]:
    layer = torch.nn.TransformerDecoderLayer(4, 2, dim_feedforward=8, dropout=0.0, batch_first=True, norm_first=norm_first,
                                             activation=activation)
    dec = torch.nn.TransformerDecoder(layer, layers, norm=torch.nn.LayerNorm(4) if final_norm else None)
    names.append((key, set_sine_parameters(dec)))
    tgt = operand(0, (2, 3, 4)).requires_grad_()
    memory = operand(1, (2, 5, 4)).requires_grad_()
    memory_padding = torch.tensor([[False, False, False, True, True], [False, False, False, False, False]])
    y = dec(tgt, memory, tgt_mask=torch.nn.Transformer.generate_square_subsequent_mask(3),
            memory_key_padding_mask=memory_padding)
    entries += outputs(key, y, [tgt, memory])

model = torch.nn.Transformer(d_model=4, nhead=2, num_encoder_layers=1, num_decoder_layers=2, dim_feedforward=8, dropout=0.0)
names.append(("seq2seq", set_sine_parameters(model)))
src = operand(0, (5, 2, 4)).requires_grad_()
tgt = operand(1, (3, 2, 4)).requires_grad_()
src_padding = torch.tensor([[False, False, False, False, True], [False, False, False, False, False]])
y = model(src, tgt, tgt_mask=model.generate_square_subsequent_mask(3), src_key_padding_mask=src_padding,
          memory_key_padding_mask=src_padding)
entries += outputs("seq2seq", y, [src, tgt])

mha = torch.nn.MultiheadAttention(4, 2)
names.append(("mha", set_sine_parameters(mha)))
key_padding = torch.tensor([[False, True, False, False, False], [False, False, False, False, True]])
for key, average in [("avg", True), ("heads", False)]:
    q = operand(0, (3, 2, 4)).requires_grad_()
    k, v = operand(1, (5, 2, 4)), operand(2, (5, 2, 4))
    out, weights = mha(q, k, v, key_padding_mask=key_padding, need_weights=True, average_attn_weights=average)
    (g,) = torch.autograd.grad((weights * cosine_weights(weights.shape)).sum(), [q])
    entries += [(f"{key}.value", vals(out)), (f"{key}.weights", vals(weights)),
                (f"{key}.weights_shape", vals(torch.tensor(list(weights.shape), dtype=torch.float64))),
                (f"{key}.weights_grad0", vals(g))]
print_header("transformer_decoder.py")
print_map("key.value, key.gradK (of input K), key.weights, key.weights_shape, key.weights_grad0.",
          "torch_transformer_decoder_values", "std::vector<double>", entries)
print_map("Each module's parameter names, in order, comma-separated.", "torch_transformer_decoder_names", "std::string", names)
