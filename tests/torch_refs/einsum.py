# Prints the einsum cases of tests/test_einsum.cpp: each equation, its operands' shapes, the result's
# shape and values and the gradients of (result * weights).sum(), as torch computes them.
# Operand k's element j is sin(0.37 j + 0.1 k + 0.05); the weights are cos(0.21 j).
# Run with the benchmark baseline's torch: /usr/bin/python3 tests/torch_refs/einsum.py
import math
import torch

CASES = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("bij,bjk->bik", [(2, 2, 3), (2, 3, 2)]),
    ("ii->i", [(3, 3)]),
    ("ii", [(3, 3)]),
    ("ij->ji", [(2, 3)]),
    ("ij->", [(2, 3)]),
    ("ji", [(2, 3)]),
    ("...ij,...jk", [(5, 2, 3), (3, 4)]),
    ("i,i->", [(4,), (4,)]),
    ("i,j->ij", [(2,), (3,)]),
    ("bhqd,bhkd->bhqk", [(1, 2, 3, 4), (1, 2, 5, 4)]),
    ("ijk,jil->kl", [(2, 3, 2), (3, 2, 4)]),
    ("ij,jk,kl->il", [(2, 3), (3, 2), (2, 2)]),
    ("iij->j", [(2, 2, 3)]),
    ("ba...", [(5, 2, 3)]),
    ("ij,ij->ij", [(2, 3), (1, 3)]),
    ("i,i,i->i", [(3,), (3,), (3,)]),
    ("bn,anm,bm->ba", [(2, 3), (4, 3, 2), (2, 2)]),
    ("Ab,bA", [(2, 3), (3, 2)]),
    ("i...j->j...i", [(2, 1, 3, 2)]),
    ("ij,kl->ijkl", [(2, 2), (1, 2)]),
    ("bij,jk->bk", [(2, 3, 2), (2, 2)]),
]

def fmt(v):
    return repr(float(v))

def operand(k, shape):
    n = math.prod(shape)
    return torch.tensor([math.sin(0.37 * j + 0.1 * k + 0.05) for j in range(n)], dtype=torch.float64).reshape(shape)

print("// Printed by tests/torch_refs/einsum.py with torch", torch.__version__.split("a")[0])
print("const std::vector<EinsumCase> kCases = {")
for eq, shapes in CASES:
    xs = [operand(k, s).requires_grad_() for k, s in enumerate(shapes)]
    y = torch.einsum(eq, *xs)
    w = torch.tensor([math.cos(0.21 * j) for j in range(y.numel())], dtype=torch.float64).reshape(y.shape)
    grads = torch.autograd.grad((y * w).sum(), xs)
    shp = lambda s: "{" + ", ".join(str(d) for d in s) + "}"
    vals = lambda t: "{" + ", ".join(fmt(v) for v in t.detach().flatten().tolist()) + "}"
    print(f'    {{"{eq}", {{{", ".join(shp(s) for s in shapes)}}}, {shp(y.shape)}, {vals(y)},')
    print(f'     {{{", ".join(vals(g) for g in grads)}}}}},')
print("};")
