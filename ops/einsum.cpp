// einsum as torch.einsum: subscripts [a-zA-Z], one ellipsis per operand (broadcast across
// operands), repeated subscripts in an operand take its diagonal, implicit output (the ellipsis,
// then the subscripts that appear once, in ASCII order), size-1 dims broadcast. Operands are
// contracted left to right, each pair as one bmm (labels summed out early where only one side has
// them), so einsum follows bmm's autocast row and differentiates through the ops it is made of.
#include <algorithm>
#include <map>
#include <numeric>
#include <set>

#include "ops/common.h"

namespace minidl {

using namespace ops_detail;

namespace {
constexpr int kLetters = 52;  // 'A'-'Z' are 0-25, 'a'-'z' 26-51 (ASCII order); ellipsis dim k is 52 + k

char label_char(int l) { return static_cast<char>(l < 26 ? 'A' + l : 'a' + (l - 26)); }
std::string label_name(int l) { return l < kLetters ? std::string(1, label_char(l)) : "..."; }

// One side of the equation: each operand's letters, with -1 where its ellipsis stands.
struct Term {
  std::vector<int> letters;
  bool has_ellipsis = false;
};

// Parses eq[begin, end): letters, and at most one "...".
Term parse_term(const std::string& eq, size_t begin, size_t end, const std::string& who) {
  Term t;
  for (size_t pos = begin; pos < end; ++pos) {
    const char c = eq[pos];
    if (c == '.') {
      MINIDL_CHECK(pos + 3 <= end && eq.compare(pos, 3, "...") == 0 && !t.has_ellipsis, "einsum", "found '.' for ", who,
                   " that is not part of any ellipsis");
      t.has_ellipsis = true;
      t.letters.push_back(-1);
      pos += 2;
    } else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
      t.letters.push_back(c <= 'Z' ? c - 'A' : 26 + (c - 'a'));
    } else {
      MINIDL_FAIL("einsum", "invalid subscript given at index ", pos, " in the equation string, subscripts must be in [a-zA-Z]");
    }
  }
  return t;
}

// An operand with one dim per label in `order` (size 1 where it lacks the label) and which labels it has.
struct Aligned {
  Tensor t;
  std::vector<bool> has;  // indexed by position in `order`
};

// t with one dim per label position (ascending), size 1 where t has none; positions[d] is dim d's.
Aligned align(const Tensor& t, const std::vector<size_t>& positions, size_t label_count) {
  std::vector<std::pair<size_t, int64_t>> dims;
  for (size_t d = 0; d < positions.size(); ++d) dims.push_back({positions[d], static_cast<int64_t>(d)});
  std::sort(dims.begin(), dims.end());
  std::vector<int64_t> perm;
  Shape shape(label_count, 1);
  Aligned a{Tensor(), std::vector<bool>(label_count, false)};
  for (const auto& [p, d] : dims) {
    perm.push_back(d);
    shape[p] = t.size(d);
    a.has[p] = true;
  }
  a.t = t.permute(perm).reshape(shape);
  return a;
}
}  // namespace

Tensor einsum(const std::string& equation, const std::vector<Tensor>& operands) {
  MINIDL_CHECK(!operands.empty(), "einsum", "must provide at least one operand");
  std::string eq;
  for (char c : equation)
    if (c != ' ') eq.push_back(c);
  const size_t arrow = eq.find("->");
  const size_t lhs_end = arrow == std::string::npos ? eq.size() : arrow;

  // ---- the input terms, their ellipsis dims and diagonals
  std::vector<Term> terms;
  for (size_t begin = 0;;) {
    const size_t comma = std::min(eq.find(',', begin), lhs_end);
    terms.push_back(parse_term(eq, begin, comma, "operand " + std::to_string(terms.size())));
    if (comma == lhs_end) break;
    begin = comma + 1;
  }
  MINIDL_CHECK(terms.size() <= operands.size(), "einsum", "fewer operands were provided than specified in the equation");
  MINIDL_CHECK(terms.size() >= operands.size(), "einsum", "more operands were provided than specified in the equation");

  int64_t ellipsis_dims = 0;
  std::vector<Tensor> xs;
  std::vector<std::vector<int>> labels;  // per operand, one label per dim
  for (size_t i = 0; i < operands.size(); ++i) {
    const Tensor& x = operands[i];
    check_defined(x, "einsum", "operands");
    const Term& t = terms[i];
    const int64_t named = static_cast<int64_t>(t.letters.size()) - (t.has_ellipsis ? 1 : 0);
    MINIDL_CHECK(t.has_ellipsis ? named <= x.dim() : named == x.dim(), "einsum", "the number of subscripts in the equation (",
                 named, t.has_ellipsis ? ") is more than the number of dimensions (" : ") does not match the number of dimensions (",
                 x.dim(), ") for operand ", i, t.has_ellipsis ? "" : " and no ellipsis was given");
    if (t.has_ellipsis) ellipsis_dims = std::max(ellipsis_dims, x.dim() - named);
  }
  for (size_t i = 0; i < operands.size(); ++i) {
    const Term& t = terms[i];
    Tensor x = operands[i];
    const int64_t named = static_cast<int64_t>(t.letters.size()) - (t.has_ellipsis ? 1 : 0);
    std::vector<int> ls;
    for (int l : t.letters) {
      if (l >= 0) {
        ls.push_back(l);
        continue;
      }
      const int64_t mine = x.dim() - named;  // right-aligned against the widest ellipsis
      for (int64_t k = 0; k < mine; ++k) ls.push_back(kLetters + static_cast<int>(ellipsis_dims - mine + k));
    }
    // A repeated subscript takes the diagonal of its two dims (moved last), until none repeats.
    for (bool repeated = true; repeated;) {
      repeated = false;
      for (size_t a = 0; a < ls.size() && !repeated; ++a)
        for (size_t b = a + 1; b < ls.size() && !repeated; ++b)
          if (ls[a] == ls[b]) {
            MINIDL_CHECK(x.size(a) == x.size(b), "einsum", "subscript ", label_char(ls[a]), " is repeated for operand ", i,
                         " but the sizes don't match, ", x.size(b), " != ", x.size(a));
            x = diagonal(x, 0, static_cast<int64_t>(a), static_cast<int64_t>(b));
            const int l = ls[a];
            ls.erase(ls.begin() + b);
            ls.erase(ls.begin() + a);
            ls.push_back(l);
            repeated = true;
          }
    }
    xs.push_back(x);
    labels.push_back(ls);
  }

  // ---- the output labels
  std::map<int, int> uses;
  for (const auto& ls : labels)
    for (int l : std::set<int>(ls.begin(), ls.end())) ++uses[l];
  std::vector<int> out_labels;
  if (arrow == std::string::npos) {
    for (int64_t k = 0; k < ellipsis_dims; ++k) out_labels.push_back(kLetters + static_cast<int>(k));
    for (const auto& [l, n] : uses)
      if (l < kLetters && n == 1) {
        // Once in one operand, and not twice within it (a diagonal is not an output).
        size_t count = 0;
        for (const Term& t : terms) count += static_cast<size_t>(std::count(t.letters.begin(), t.letters.end(), l));
        if (count == 1) out_labels.push_back(l);
      }
  } else {
    const Term out = parse_term(eq, arrow + 2, eq.size(), "the output");
    std::set<int> seen;
    for (int l : out.letters) {
      if (l < 0) {
        for (int64_t k = 0; k < ellipsis_dims; ++k) out_labels.push_back(kLetters + static_cast<int>(k));
        continue;
      }
      MINIDL_CHECK(uses.count(l), "einsum", "output subscript ", label_char(l), " does not appear in the equation for any input operand");
      MINIDL_CHECK(seen.insert(l).second, "einsum", "output subscript ", label_char(l), " appears more than once in the output");
      out_labels.push_back(l);
    }
  }

  // ---- every operand on one dim per label (ascending label order), sizes broadcast
  std::vector<int> order;
  for (const auto& [l, n] : uses) order.push_back(l);
  std::sort(order.begin(), order.end());
  const size_t L = order.size();
  auto position = [&](int l) { return static_cast<size_t>(std::find(order.begin(), order.end(), l) - order.begin()); };
  std::vector<int64_t> size(L, 1);
  std::vector<Aligned> aligned;
  for (size_t i = 0; i < xs.size(); ++i) {
    std::vector<size_t> positions;
    for (size_t d = 0; d < labels[i].size(); ++d) {
      const size_t p = position(labels[i][d]);
      const int64_t n = xs[i].size(static_cast<int64_t>(d));
      MINIDL_CHECK(size[p] == 1 || n == 1 || size[p] == n, "einsum", "subscript ", label_name(order[p]), " has size ", n,
                   " for operand ", i, " which does not broadcast with previously seen size ", size[p]);
      if (n != 1) size[p] = n;
      positions.push_back(p);
    }
    aligned.push_back(align(xs[i], positions, L));
  }

  // Labels that the output or an operand after `i` still needs.
  auto needed_after = [&](size_t i) {
    std::vector<bool> need(L, false);
    for (int l : out_labels) need[position(l)] = true;
    for (size_t j = i + 1; j < aligned.size(); ++j)
      for (size_t p = 0; p < L; ++p) need[p] = need[p] || aligned[j].has[p];
    return need;
  };
  // Sums `a` over the labels it has that nothing needs and `other` lacks.
  auto sum_unshared = [&](Aligned& a, const std::vector<bool>& other_has, const std::vector<bool>& need) {
    std::vector<int64_t> dims;
    for (size_t p = 0; p < L; ++p)
      if (a.has[p] && !other_has[p] && !need[p]) {
        dims.push_back(static_cast<int64_t>(p));
        a.has[p] = false;
      }
    if (!dims.empty()) a.t = sum(a.t, dims, true);
  };

  // ---- contraction, left to right, each pair as one bmm
  Aligned acc = aligned[0];
  for (size_t i = 1; i < aligned.size(); ++i) {
    Aligned b = aligned[i];
    const std::vector<bool> need = needed_after(i);
    sum_unshared(acc, b.has, need);
    sum_unshared(b, acc.has, need);
    std::vector<int64_t> batch, left, contract, right, rest;
    for (size_t p = 0; p < L; ++p) {
      const auto d = static_cast<int64_t>(p);
      if (acc.has[p] && b.has[p]) (need[p] ? batch : contract).push_back(d);
      else if (acc.has[p]) left.push_back(d);
      else if (b.has[p]) right.push_back(d);
      else rest.push_back(d);
    }
    auto product = [&](const std::vector<int64_t>& dims) {
      int64_t n = 1;
      for (int64_t d : dims) n *= size[d];
      return n;
    };
    auto concat = [](std::initializer_list<const std::vector<int64_t>*> parts) {
      std::vector<int64_t> all;
      for (const auto* p : parts) all.insert(all.end(), p->begin(), p->end());
      return all;
    };
    // A label may be 1 on one side or in one operand (broadcast): each side's labels expanded to
    // their full size.
    auto expanded = [&](const Aligned& a) {
      Shape s = a.t.shape();
      for (size_t p = 0; p < L; ++p)
        if (a.has[p]) s[p] = size[p];
      return a.t.expand(s);
    };
    const int64_t nb = product(batch), nl = product(left), nc = product(contract), nr = product(right);
    const std::vector<int64_t> perm_a = concat({&batch, &left, &contract, &right, &rest});
    const std::vector<int64_t> perm_b = concat({&batch, &contract, &right, &left, &rest});
    // One dtype for bmm: an integer side summed early is i64 (as sum gives), so the pair promotes, as
    // PyTorch's product of the two does.
    const DType t = result_type(acc.t, b.t);
    const Tensor a3 = cast(expanded(acc).permute(perm_a).reshape({nb, nl, nc}), t);
    const Tensor b3 = cast(expanded(b).permute(perm_b).reshape({nb, nc, nr}), t);
    // The product's dims are batch, left, right: back to one dim per label.
    const std::vector<int64_t> result_dims = concat({&batch, &left, &right});
    Shape shape;
    for (int64_t d : result_dims) shape.push_back(size[d]);
    acc = align(bmm(a3, b3).reshape(shape), std::vector<size_t>(result_dims.begin(), result_dims.end()), L);
  }

  // ---- what the output does not name is summed (only labels the result has: summing a placeholder
  // dim would turn an integer result into i64); then the output's order
  std::vector<bool> in_out(L, false);
  for (int l : out_labels) in_out[position(l)] = true;
  std::vector<int64_t> summed, dropped;
  for (size_t p = 0; p < L; ++p)
    if (!in_out[p]) (acc.has[p] ? summed : dropped).push_back(static_cast<int64_t>(p));
  Tensor result = summed.empty() ? acc.t : sum(acc.t, summed, true);
  Shape out_shape;
  std::vector<int64_t> perm;
  for (int l : out_labels) {
    perm.push_back(static_cast<int64_t>(position(l)));
    out_shape.push_back(size[position(l)]);
  }
  for (int64_t d : summed) perm.push_back(d);
  for (int64_t d : dropped) perm.push_back(d);
  // A label the output keeps but no operand had at full size stays broadcast: expand to its size.
  Shape expanded_shape = result.shape();
  for (int l : out_labels) expanded_shape[position(l)] = size[position(l)];
  return result.expand(expanded_shape).permute(perm).reshape(out_shape);
}

Tensor bilinear(const Tensor& x1, const Tensor& x2, const Tensor& weight, const Tensor& bias) {
  const char* op = "bilinear";
  check_defined(x1, op, "input1");
  check_defined(x2, op, "input2");
  check_defined(weight, op, "weight");
  MINIDL_CHECK(x1.dim() >= 1 && x1.dim() == x2.dim(), op, "input1 and input2 must have the same number of dimensions, got ",
               x1.meta_str(), " and ", x2.meta_str());
  MINIDL_CHECK(weight.dim() == 3, op, "expected a 3-D weight [out, in1, in2], got ", weight.meta_str());
  MINIDL_CHECK(x1.size(-1) == weight.size(1), op, "input1 size does not match weight size: got ", x1.size(-1),
               " but expected ", weight.size(1));
  MINIDL_CHECK(x2.size(-1) == weight.size(2), op, "input2 size does not match weight size: got ", x2.size(-1),
               " but expected ", weight.size(2));
  for (int64_t d = 0; d + 1 < x1.dim(); ++d)
    MINIDL_CHECK(x1.size(d) == x2.size(d), op, "input batch dimensions must agree, got ", x1.meta_str(), " and ",
                 x2.meta_str());
  if (bias.defined())
    MINIDL_CHECK(bias.dim() == 1 && bias.size(0) == weight.size(0), op, "bias size does not match weight size: got ",
                 bias.meta_str(), " but expected [", weight.size(0), "]");
  // Leading dims flattened into one batch: [B, in1], [B, in2] -> [B, out].
  const Shape lead(x1.shape().begin(), x1.shape().end() - 1);
  const Tensor a = x1.reshape({-1, x1.size(-1)}), b = x2.reshape({-1, x2.size(-1)});
  Tensor y = einsum("bi,oij,bj->bo", {a, weight, b});
  if (bias.defined()) y = add(y, bias);
  Shape out = lead;
  out.push_back(weight.size(0));
  return y.reshape(out);
}

}  // namespace minidl
