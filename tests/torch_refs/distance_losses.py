# Prints the cases of tests/test_distance_losses.cpp: values and input gradients of the distance
# functions and margin/embedding losses, as torch.nn.functional computes them, on inputs that the
# test builds the same way: operand k's element j is sin(0.37 j + 0.1 k + 0.05) (scaled per case).
# Run with the benchmark baseline's torch: /usr/bin/python3 tests/torch_refs/distance_losses.py
import math
import torch
import torch.nn.functional as F

def operand(k, shape, scale=1.0):
    n = math.prod(shape)
    return (scale * torch.tensor([math.sin(0.37 * j + 0.1 * k + 0.05) for j in range(n)], dtype=torch.float64)).reshape(shape)

T = lambda v: torch.tensor(v, dtype=torch.float64)
y_pm = T([1.0, -1.0, 1.0, -1.0])
CASES = [
    ("normalize", [(4, 3)], lambda a: F.normalize(a)),
    ("normalize p1 dim0", [(4, 3)], lambda a: F.normalize(a, p=1.0, dim=0)),
    ("cosine_similarity", [(4, 3), (4, 3)], lambda a, b: F.cosine_similarity(a, b)),
    ("cosine_similarity dim0 broadcast", [(4, 3), (1, 3)], lambda a, b: F.cosine_similarity(a, b, dim=0)),
    ("pairwise_distance", [(4, 3), (4, 3)], lambda a, b: F.pairwise_distance(a, b)),
    ("pairwise_distance p1 keepdim", [(4, 3), (4, 3)], lambda a, b: F.pairwise_distance(a, b, p=1.0, keepdim=True)),
    ("cdist", [(4, 3), (5, 3)], lambda a, b: torch.cdist(a, b)),
    ("cdist p1 batched", [(2, 3, 2), (2, 4, 2)], lambda a, b: torch.cdist(a, b, p=1.0)),
    ("margin_ranking_loss", [(4,), (4,)], lambda a, b: F.margin_ranking_loss(a, b, y_pm, margin=0.2)),
    ("hinge_embedding_loss", [(4, 3)], lambda a: F.hinge_embedding_loss(a, T([[1, -1, 1], [-1, -1, 1], [1, 1, -1], [-1, 1, 1]]), margin=0.5)),
    ("soft_margin_loss sum", [(4, 3)], lambda a: F.soft_margin_loss(a, T([[1, -1, 1], [-1, -1, 1], [1, 1, -1], [-1, 1, 1]]), reduction="sum")),
    ("multilabel_soft_margin_loss", [(4, 3)], lambda a: F.multilabel_soft_margin_loss(a, T([[1, 0, 1], [0, 0, 1], [1, 1, 0], [0, 1, 1]]), weight=T([0.5, 1.0, 2.0]))),
    ("cosine_embedding_loss", [(4, 3), (4, 3)], lambda a, b: F.cosine_embedding_loss(a, b, y_pm, margin=-0.5)),
    ("triplet_margin_loss", [(4, 3), (4, 3), (4, 3)], lambda a, b, c: F.triplet_margin_loss(a, b, c, margin=1.5)),
    ("triplet_margin_loss swap p1 none", [(4, 3), (4, 3), (4, 3)], lambda a, b, c: F.triplet_margin_loss(a, b, c, margin=0.7, p=1.0, swap=True, reduction="none")),
    ("multi_margin_loss", [(4, 3)], lambda a: F.multi_margin_loss(a, torch.tensor([0, 2, 1, 2]))),
    ("multi_margin_loss p2 weight sum", [(4, 3)], lambda a: F.multi_margin_loss(a, torch.tensor([0, 2, 1, 2]), p=2, margin=0.5, weight=T([1.0, 2.0, 0.5]), reduction="sum")),
    ("poisson_nll_loss", [(4, 3)], lambda a: F.poisson_nll_loss(a, T([[0, 1, 2], [3, 0.5, 4], [1, 1, 0], [2, 5, 3]]))),
    ("poisson_nll_loss no log full", [(4, 3)], lambda a: F.poisson_nll_loss(a.abs() + 0.1, T([[0, 1, 2], [3, 0.5, 4], [1, 1, 0], [2, 5, 3]]), log_input=False, full=True)),
]

def vals(t):
    return "{" + ", ".join(repr(float(v)) for v in t.detach().flatten().tolist()) + "}"

print("// Printed by tests/torch_refs/distance_losses.py with torch", torch.__version__.split("a")[0])
print("const std::vector<Expected> kExpected = {")
for name, shapes, fn in CASES:
    xs = [operand(k, s).requires_grad_() for k, s in enumerate(shapes)]
    y = fn(*xs)
    w = torch.tensor([math.cos(0.21 * j) for j in range(y.numel())], dtype=torch.float64).reshape(y.shape)
    grads = torch.autograd.grad((y * w).sum(), xs)
    shp = "{" + ", ".join(str(d) for d in y.shape) + "}"
    print(f'    {{"{name}", {shp}, {vals(y)}, {{{", ".join(vals(g) for g in grads)}}}}},')
print("};")
