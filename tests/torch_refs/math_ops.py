# Prints the block of reference values in tests/test_math_ops.cpp: inputs, values, gradients and
# second derivatives of the element-wise math ops and activations, as torch computes them. Run with
# the benchmark baseline's torch (python3-torch, 1.13): /usr/bin/python3 tests/torch_refs/math_ops.py
import torch, math, torch.nn.functional as F
nan, inf = float('nan'), float('inf')
def fmt(v):
    if math.isnan(v): return "kNaN"
    if math.isinf(v): return "kInf" if v > 0 else "-kInf"
    return repr(float(v))
def vec(t): return "{" + ", ".join(fmt(v) for v in t.double().flatten().tolist()) + "}"
X = [nan, inf, -inf, 0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 2.5, -2.5, 0.999, -0.999, 1e-8, 30.0, -30.0, 100.0, -100.0, 1.5, -3.0, 3.0, 0.25]
ops = ["sin","cos","tan","asin","acos","atan","sinh","cosh","asinh","acosh","atanh","log1p","expm1","log2","log10","exp2","erf","erfc","erfinv","reciprocal","square","floor","ceil","round","trunc","frac"]
acts = {"hardswish":F.hardswish,"hardsigmoid":F.hardsigmoid,"mish":F.mish,"logsigmoid":F.logsigmoid,"selu":F.selu,"celu 0.7":lambda x: F.celu(x, 0.7),"softsign":F.softsign,"tanhshrink":F.tanhshrink,"softshrink 0.5":lambda x: F.softshrink(x, 0.5),"hardshrink 0.5":lambda x: F.hardshrink(x, 0.5),"threshold 0.5 -7":lambda x: F.threshold(x, 0.5, -7.0)}
allf = [(o, getattr(torch,o)) for o in ops] + list(acts.items())
out = []
out.append("// Inputs and what torch " + torch.__version__.split("a")[0] + " printed for them (tests/torch_refs/math_ops.py writes this block).")
out.append("const Vec kX = " + vec(torch.tensor(X, dtype=torch.float64)) + ";")
for dt, name in [(torch.float64, "F64"), (torch.float32, "F32")]:
    x = torch.tensor(X, dtype=dt)
    out.append(f"const std::vector<Row> k{name}Values = {{")
    for n, f in allf: out.append(f'    {{"{n}", {vec(f(x))}}},')
    out.append("};")
G = [-4.0, -3.0, -2.0, -0.5, 0.0, 0.5, 0.7, 1.0, 2.9, 3.0, 4.0, 25.0, -25.0]
out.append("// d/dx of f(x).sum() at kG (f64): the kinks of the piecewise activations included.")
out.append("const Vec kG = " + vec(torch.tensor(G, dtype=torch.float64)) + ";")
out.append("const std::vector<Row> kGradients = {")
for n, f in allf:
    if n in ("asin","acos","acosh","atanh","log1p","log2","log10","erfinv","ceil","trunc"): continue
    x = torch.tensor(G, dtype=torch.float64, requires_grad=True)
    (g,) = torch.autograd.grad(f(x).sum(), x)
    out.append(f'    {{"{n}", {vec(g)}}},')
out.append("};")
S = [-0.9, -0.3, 0.2, 0.6]
out.append("// Second derivatives (grad of the gradient's sum) at kS.")
out.append("const Vec kS = " + vec(torch.tensor(S, dtype=torch.float64)) + ";")
out.append("const std::vector<Row> kSecond = {")
for n, f in allf:
    # (torch 1.13 has no second derivative of hardsigmoid)
    if n in ("acosh","floor","ceil","round","trunc","frac","square","hardsigmoid"): continue
    x = torch.tensor(S, dtype=torch.float64, requires_grad=True)
    (g,) = torch.autograd.grad(f(x).sum(), x, create_graph=True)
    (gg,) = torch.autograd.grad(g.sum(), x)
    out.append(f'    {{"{n}", {vec(gg)}}},')
out.append("};")
x = torch.linspace(-2, 2, 12, dtype=torch.float64).reshape(2,6).requires_grad_()
w = torch.arange(6, dtype=torch.float64).reshape(2,3)
y = F.glu(x, 1); (g,) = torch.autograd.grad((y*w).sum(), x)
out.append("// glu(linspace(-2, 2, 12).reshape(2, 6), 1), and the gradient of (y * arange(6).reshape(2, 3)).sum().")
out.append("const Vec kGluIn = " + vec(x.detach()) + ";")
out.append("const Vec kGluOut = " + vec(y.detach()) + ";")
out.append("const Vec kGluGrad = " + vec(g) + ";")
print("\n".join(out))
