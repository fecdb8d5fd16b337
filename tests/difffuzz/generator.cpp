#include "difffuzz/generator.h"

#include <algorithm>
#include <iterator>
#include <optional>

namespace fluxion::difffuzz {

namespace {

// splitmix64: the same numbers on every platform and standard library.
class Rng {
 public:
  // The seed is mixed first: splitmix64 started at seed * gamma would give seed + 1 the stream of
  // seed shifted by one draw, and so nearly the same program.
  explicit Rng(uint64_t seed) : s_(mix(seed + 0x632be59bd9b4e019ull)) {}
  uint64_t next() { return mix(s_ += 0x9e3779b97f4a7c15ull); }
  int below(int64_t n) { return static_cast<int>(next() % static_cast<uint64_t>(n)); }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

 private:
  static uint64_t mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  uint64_t s_;
};

Shape random_shape(Rng& r, int max_rank) {
  Shape s(static_cast<size_t>(r.below(max_rank + 1)));
  for (int64_t& d : s) d = 1 + r.below(4);
  return s;
}

bool broadcastable(const Shape& a, const Shape& b) {
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    int64_t x = a[a.size() - 1 - i], y = b[b.size() - 1 - i];
    if (x != y && x != 1 && y != 1) return false;
  }
  return true;
}

Shape broadcast(const Shape& a, const Shape& b) {
  Shape out(std::max(a.size(), b.size()), 1);
  for (size_t i = 0; i < out.size(); ++i) {
    int64_t x = i < a.size() ? a[a.size() - 1 - i] : 1, y = i < b.size() ? b[b.size() - 1 - i] : 1;
    out[out.size() - 1 - i] = std::max(x, y);
  }
  return out;
}

Shape without_axis(Shape s, int axis) {
  s.erase(s.begin() + axis);
  return s;
}

// The value a constant operand holds: not 0, so that a shrunk program keeps its ops busy.
double constant_value(DType t) { return is_float(t) ? 0.5 : 1; }
const char* constant_text(DType t) { return is_float(t) ? "0.5" : t == DType::i32 ? "1" : "true"; }

// ---- Op families: each step of a family applies one op of its operand's dtype, by index.

template <class Fn>
struct Op {
  const char* name;
  Fn fn;
};
using UnaryOp = Op<Tensor (*)(const Tensor&)>;
using BinaryOp = Op<Tensor (*)(const Tensor&, const Tensor&)>;
using AxisOp = Op<Tensor (*)(const Tensor&, int64_t)>;

template <class O>
struct Family {
  std::vector<O> floats, i32, boolean;
  const std::vector<O>& of(DType t) const { return is_float(t) ? floats : t == DType::i32 ? i32 : boolean; }
};

// Ops that several dtypes share.
const UnaryOp kSquare = {"square", [](const Tensor& x) { return square(x); }};
const BinaryOp kAdd = {"add", [](const Tensor& a, const Tensor& b) { return a + b; }};
const BinaryOp kSub = {"sub", [](const Tensor& a, const Tensor& b) { return a - b; }};
const BinaryOp kMul = {"mul", [](const Tensor& a, const Tensor& b) { return a * b; }};
const BinaryOp kMaximum = {"maximum", [](const Tensor& a, const Tensor& b) { return maximum(a, b); }};
const AxisOp kSum = {"sum", [](const Tensor& x, int64_t axis) { return sum(x, axis); }};
const AxisOp kMax = {"max", [](const Tensor& x, int64_t axis) { return max(x, axis); }};
const AxisOp kMin = {"min", [](const Tensor& x, int64_t axis) { return min(x, axis); }};

// Float ops stay finite and smooth on any input (log of a square plus one, a division by one
// plus a square), so that finite differences check their derivatives.
const Family<UnaryOp> kUnary = {
    {{"tanh", [](const Tensor& x) { return tanh(x); }},
     {"sin", [](const Tensor& x) { return sin(x); }},
     {"sigmoid", [](const Tensor& x) { return sigmoid(x); }},
     {"softplus", [](const Tensor& x) { return softplus(x); }},
     {"exp(tanh)", [](const Tensor& x) { return exp(tanh(x)); }},
     kSquare,
     {"log1p(square)", [](const Tensor& x) { return log1p(square(x)); }}},
    {{"neg", [](const Tensor& x) { return neg(x); }},
     {"abs", [](const Tensor& x) { return abs(x); }},
     {"sign", [](const Tensor& x) { return sign(x); }},
     kSquare,
     {"relu", [](const Tensor& x) { return relu(x); }}},
    {{"not", [](const Tensor& x) { return logical_not(x); }}},
};

// Integer division truncates toward zero and gives 0 for a zero divisor (docs/ir.md): the
// generated i32 values hold zeros and negative numbers, so both are exercised.
const Family<BinaryOp> kBinary = {
    {kAdd,
     kSub,
     kMul,
     {"div(a, 1 + b^2)", [](const Tensor& a, const Tensor& b) { return a / (square(b) + 1.0); }},
     kMaximum},
    {kAdd,
     kSub,
     kMul,
     {"div", [](const Tensor& a, const Tensor& b) { return a / b; }},
     kMaximum,
     {"minimum", [](const Tensor& a, const Tensor& b) { return minimum(a, b); }}},
    {{"and", [](const Tensor& a, const Tensor& b) { return logical_and(a, b); }},
     {"or", [](const Tensor& a, const Tensor& b) { return logical_or(a, b); }}},
};

const std::vector<BinaryOp> kOrderings = {
    {"eq", [](const Tensor& a, const Tensor& b) { return eq(a, b); }},
    {"ne", [](const Tensor& a, const Tensor& b) { return ne(a, b); }},
    {"lt", [](const Tensor& a, const Tensor& b) { return lt(a, b); }},
    {"le", [](const Tensor& a, const Tensor& b) { return le(a, b); }},
    {"gt", [](const Tensor& a, const Tensor& b) { return gt(a, b); }},
    {"ge", [](const Tensor& a, const Tensor& b) { return ge(a, b); }},
};
// Bools compare for equality only.
const Family<BinaryOp> kCompare = {kOrderings, kOrderings, {kOrderings[0], kOrderings[1]}};

const Family<AxisOp> kReduce = {
    {kSum, {"mean", [](const Tensor& x, int64_t axis) { return mean(x, axis); }}, kMax, kMin},
    {kSum, kMax, kMin},
    {},
};

const std::vector<AxisOp> kArgReductions = {
    {"argmax", [](const Tensor& x, int64_t axis) { return argmax(x, axis); }},
    {"argmin", [](const Tensor& x, int64_t axis) { return argmin(x, axis); }},
};
const Family<AxisOp> kArgReduce = {kArgReductions, kArgReductions, {}};

// f(x, y) with its partial derivatives, for custom_vjp and custom_jvp: the rules given are the
// true derivatives, so finite differences check them.
struct Smooth2 {
  const char* name;
  Tensor (*f)(const Tensor&, const Tensor&);
  Tensor (*dx)(const Tensor&, const Tensor&);
  Tensor (*dy)(const Tensor&, const Tensor&);
};
const Smooth2 kCustom[] = {
    {"sin(x)*y", [](const Tensor& x, const Tensor& y) { return sin(x) * y; },
     [](const Tensor& x, const Tensor& y) { return cos(x) * y; },
     [](const Tensor& x, const Tensor&) { return sin(x); }},
    {"x*sigmoid(y)", [](const Tensor& x, const Tensor& y) { return x * sigmoid(y); },
     [](const Tensor&, const Tensor& y) { return sigmoid(y); },
     [](const Tensor& x, const Tensor& y) { return x * sigmoid(y) * (1.0 - sigmoid(y)); }},
    {"tanh(x*y)", [](const Tensor& x, const Tensor& y) { return tanh(x * y); },
     [](const Tensor& x, const Tensor& y) { return y * (1.0 - square(tanh(x * y))); },
     [](const Tensor& x, const Tensor& y) { return x * (1.0 - square(tanh(x * y))); }},
};
constexpr int kCustomFunctions = sizeof kCustom / sizeof kCustom[0];

// Cast targets, indexed by a Cast step's `op`; f64 stands for the program's float dtype.
constexpr DType kDTypes[] = {DType::f64, DType::i32, DType::boolean};

// The largest trip count of a generated while_loop, and its max_iters: the loop's own counter
// bounds it, so it never runs past max_iters whatever the data.
constexpr int64_t kWhileMaxIters = 6;

// ---- Planning: each rule says which values its first operand may be (fits), and its plan fills a
// step whose first operand is chosen among those, returning the result's type (or nothing when
// another operand the step needs does not exist).

bool any_value(const TensorType&) { return true; }
bool has_axis(const TensorType& t) { return t.rank() >= 1; }
bool numeric_with_axis(const TensorType& t) { return t.rank() >= 1 && is_numeric(t.dtype); }
bool rank_at_least_2(const TensorType& t) { return t.rank() >= 2; }
bool sliceable(const TensorType& t) {
  return std::any_of(t.shape.begin(), t.shape.end(), [](int64_t d) { return d >= 2; });
}
bool rank_at_most_3(const TensorType& t) { return t.rank() <= 3; }
bool image(const TensorType& t) { return is_float(t.dtype) && t.rank() == 4 && t.shape[2] >= 2 && t.shape[3] >= 2; }
// Loops, cond and the custom functions compute in floats.
bool float_value(const TensorType& t) { return is_float(t.dtype); }
bool float_with_axis(const TensorType& t) { return float_value(t) && t.rank() >= 1; }

// What generate() keeps while it plans steps: the random stream and the program so far.
struct Builder {
  explicit Builder(uint64_t seed) : r(seed) { s.seed = seed; }
  Rng r;
  Spec s;

  int add_input(TensorType t) {
    s.source.push_back(static_cast<int>(s.inputs.size()));
    s.inputs.push_back(t);
    s.pool.push_back(std::move(t));
    return static_cast<int>(s.pool.size()) - 1;
  }
  const TensorType& type(const Operand& o) const { return s.pool[static_cast<size_t>(o.value)]; }
  // The pool values that `fits`.
  template <class Fits>
  std::vector<int> fitting(Fits fits) const {
    std::vector<int> out;
    for (size_t j = 0; j < s.pool.size(); ++j)
      if (fits(s.pool[j])) out.push_back(static_cast<int>(j));
    return out;
  }
  // One of `values` (not empty), at random.
  Operand choose(const std::vector<int>& values) {
    return Operand{values[static_cast<size_t>(r.below(static_cast<int64_t>(values.size())))]};
  }
  // A random pool value that `fits`, or nothing when none does.
  template <class Fits>
  std::optional<Operand> pick(Fits fits) {
    std::vector<int> values = fitting(fits);
    if (values.empty()) return std::nullopt;
    return choose(values);
  }
  // A value of `t`'s dtype that broadcasts with `t`'s shape: the operand `t` was derived from is one.
  Operand partner(const TensorType& t) {
    return choose(fitting([&](const TensorType& u) { return u.dtype == t.dtype && broadcastable(u.shape, t.shape); }));
  }
};

using Planned = std::optional<TensorType>;

template <class O>
TensorType plan_family(Builder& g, Step& st, const Family<O>& family, int operands, std::optional<DType> result) {
  TensorType a = g.type(st.in[0]);
  st.op = g.r.below(static_cast<int64_t>(family.of(a.dtype).size()));
  if (operands == 2) {
    st.in.push_back(g.partner(a));
    a.shape = broadcast(a.shape, g.type(st.in[1]).shape);
  }
  if (result) a.dtype = *result;
  return a;
}

Planned plan_unary(Builder& g, Step& st) { return plan_family(g, st, kUnary, 1, std::nullopt); }
Planned plan_binary(Builder& g, Step& st) { return plan_family(g, st, kBinary, 2, std::nullopt); }
Planned plan_compare(Builder& g, Step& st) { return plan_family(g, st, kCompare, 2, DType::boolean); }

Planned plan_along_axis(Builder& g, Step& st, const Family<AxisOp>& family, std::optional<DType> result) {
  TensorType out = plan_family(g, st, family, 1, result);
  st.axis = g.r.below(out.rank());
  out.shape = without_axis(out.shape, st.axis);
  return out;
}

Planned plan_reduce(Builder& g, Step& st) { return plan_along_axis(g, st, kReduce, std::nullopt); }
Planned plan_arg_reduce(Builder& g, Step& st) { return plan_along_axis(g, st, kArgReduce, DType::i32); }

Planned plan_select(Builder& g, Step& st) {
  TensorType a = g.type(st.in[0]);
  std::optional<Operand> c =
      g.pick([&](const TensorType& t) { return t.dtype == DType::boolean && broadcastable(t.shape, a.shape); });
  if (!c) return std::nullopt;
  a.shape = broadcast(a.shape, g.type(*c).shape);
  Operand b = g.partner(a);
  st.in = {*c, st.in[0], b};
  a.shape = broadcast(a.shape, g.type(b).shape);
  return a;
}

Planned plan_cast(Builder& g, Step& st) {
  TensorType a = g.type(st.in[0]);
  int from = static_cast<int>(std::find(std::begin(kDTypes), std::end(kDTypes), a.dtype) - std::begin(kDTypes));
  st.op = (from + 1 + g.r.below(2)) % 3;
  a.dtype = kDTypes[st.op];
  return a;
}

Planned plan_matmul(Builder& g, Step& st) {
  TensorType a = g.type(st.in[0]);
  int64_t n = 1 + g.r.below(4);
  st.in.push_back(Operand{g.add_input({a.dtype, {a.shape.back(), n}})});
  a.shape.back() = n;  // [..., k] x [k, n]: [..., n]
  return a;
}

Planned plan_transpose(Builder& g, Step& st) {
  TensorType a = g.type(st.in[0]);
  std::reverse(a.shape.begin(), a.shape.end());
  return a;
}

Planned plan_flatten(Builder& g, Step& st) {
  TensorType a = g.type(st.in[0]);
  a.shape = {a.numel()};
  return a;
}

Planned plan_slice(Builder& g, Step& st) {
  TensorType a = g.type(st.in[0]);
  std::vector<int> axes;
  for (size_t d = 0; d < a.shape.size(); ++d)
    if (a.shape[d] >= 2) axes.push_back(static_cast<int>(d));
  st.axis = axes[static_cast<size_t>(g.r.below(static_cast<int64_t>(axes.size())))];
  a.shape[static_cast<size_t>(st.axis)] -= 1;
  return a;
}

Planned plan_expand_broadcast(Builder& g, Step& st) {
  TensorType a = g.type(st.in[0]);
  st.count = 2 + g.r.below(2);
  a.shape.insert(a.shape.begin(), st.count);
  return a;
}

Planned plan_conv(Builder& g, Step& st) {
  TensorType a = g.type(st.in[0]);
  int64_t o = 1 + g.r.below(3), kh = 1 + g.r.below(std::min<int64_t>(3, a.shape[2])),
          kw = 1 + g.r.below(std::min<int64_t>(3, a.shape[3]));
  st.count = g.r.below(2);  // padding
  st.in.push_back(Operand{g.add_input({DType::f64, {o, a.shape[1], kh, kw}})});
  a.shape = {a.shape[0], o, a.shape[2] + 2 * st.count - kh + 1, a.shape[3] + 2 * st.count - kw + 1};
  return a;
}

Planned plan_same_type(Builder& g, Step& st) { return g.type(st.in[0]); }

Planned plan_loop(Builder& g, Step& st) {
  st.count = 1 + g.r.below(4);
  return plan_same_type(g, st);
}

// The trip count is data-dependent twice over: the loop stops when its carry grows past a
// bound, and after `count` steps or, with a second operand, after the sum of an i32 value
// (clamped into [0, kWhileMaxIters]) steps.
Planned plan_while(Builder& g, Step& st) {
  st.count = 1 + g.r.below(kWhileMaxIters);
  if (g.r.below(2) == 0) {
    if (std::optional<Operand> limit = g.pick([](const TensorType& t) { return t.dtype == DType::i32; }))
      st.in.push_back(*limit);
  }
  return plan_same_type(g, st);
}

Planned plan_custom(Builder& g, Step& st) {
  TensorType a = g.type(st.in[0]);
  st.op = g.r.below(kCustomFunctions);
  st.in.push_back(g.choose(g.fitting([&](const TensorType& t) { return t == a; })));
  return a;
}

// Gather, take and scatter_add read a new i32 input as their indices, folded into range by
// in_range() in the program.
Planned plan_gather(Builder& g, Step& st) {
  TensorType a = g.type(st.in[0]);
  st.axis = g.r.below(a.rank());
  a.shape[static_cast<size_t>(st.axis)] = 1 + g.r.below(4);
  st.in.push_back(Operand{g.add_input({DType::i32, a.shape})});
  return a;
}

Planned plan_take(Builder& g, Step& st) {
  TensorType a = g.type(st.in[0]);
  st.axis = g.r.below(a.rank());
  // Index ranks 0 to 2, keeping the result's rank at most 4.
  Shape indices = random_shape(g.r, static_cast<int>(std::min<int64_t>(2, 5 - a.rank())));
  st.in.push_back(Operand{g.add_input({DType::i32, indices})});
  a.shape.erase(a.shape.begin() + st.axis);
  a.shape.insert(a.shape.begin() + st.axis, indices.begin(), indices.end());
  return a;
}

Planned plan_scatter_add(Builder& g, Step& st) {
  TensorType a = g.type(st.in[0]);
  st.axis = g.r.below(a.rank());
  st.count = 1 + g.r.below(5);
  st.in.push_back(Operand{g.add_input({DType::i32, {a.shape[static_cast<size_t>(st.axis)]}})});
  a.shape[static_cast<size_t>(st.axis)] = st.count;
  return a;
}

// ---- Tracing: each rule's apply records the step on its operands' Tensors.

// A step's operands, and the program's float dtype (what a cast to float gives).
struct Args : std::vector<Tensor> {
  DType floats = DType::f64;
};

template <class O>
const O& op_of(const Family<O>& family, const Step& st, const Tensor& operand) {
  return family.of(operand.dtype())[static_cast<size_t>(st.op)];
}

Tensor apply_unary(const Step& st, const Args& x) { return op_of(kUnary, st, x[0]).fn(x[0]); }
Tensor apply_binary(const Step& st, const Args& x) { return op_of(kBinary, st, x[0]).fn(x[0], x[1]); }
Tensor apply_compare(const Step& st, const Args& x) { return op_of(kCompare, st, x[0]).fn(x[0], x[1]); }
Tensor apply_reduce(const Step& st, const Args& x) { return op_of(kReduce, st, x[0]).fn(x[0], st.axis); }
Tensor apply_arg_reduce(const Step& st, const Args& x) { return op_of(kArgReduce, st, x[0]).fn(x[0], st.axis); }
Tensor apply_select(const Step&, const Args& x) { return where(x[0], x[1], x[2]); }

// A float cast to i32 is scaled first, so that it gives more than the truncations to 0 of
// values in (-1, 1). An i32 cast to f64 is clamped into [-16, 16] first: an edge value of an i32
// input (2^31) would make a float whose sin, or whose cancellation in a sum, a backend computes
// only to within the argument's scale (docs/testing.md's tolerances), not to 1e-9 of the result.
constexpr int kFloatScale = 4, kIntClamp = 16;

Tensor apply_cast(const Step& st, const Args& x) {
  DType from = x[0].dtype(), to = is_float(kDTypes[st.op]) ? x.floats : kDTypes[st.op];
  if (is_float(from) && to == DType::i32) return cast(x[0] * static_cast<double>(kFloatScale), to);
  if (from == DType::i32 && is_float(to)) {
    return cast(minimum(maximum(x[0], static_cast<double>(-kIntClamp)), static_cast<double>(kIntClamp)), to);
  }
  return cast(x[0], to);
}

Tensor apply_matmul(const Step&, const Args& x) { return matmul(x[0], x[1]); }
Tensor apply_transpose(const Step&, const Args& x) { return transpose(x[0]); }
Tensor apply_flatten(const Step&, const Args& x) { return flatten(x[0]); }
Tensor apply_slice(const Step& st, const Args& x) { return slice_axis(x[0], st.axis, 1, x[0].dim(st.axis)); }

Tensor apply_expand_broadcast(const Step& st, const Args& x) {
  Shape to = x[0].shape();
  to.insert(to.begin(), st.count);
  return broadcast_to(expand_dims(x[0], 0), to);
}

Tensor apply_conv(const Step& st, const Args& x) { return conv2d(x[0], x[1], {.padding = {st.count, st.count}}); }

Tensor apply_loop(const Step& st, const Args& x) {
  return fori_loop(
      0, st.count, [](const Tensor& i, const Tensor& c) { return c * 0.8 + sin(c) * 0.3 + cast(i, c.dtype()) * 0.05; },
      x[0]);
}

Tensor apply_scan(const Step&, const Args& x) {
  const Tensor& a = x[0];
  Tensor init = reshape(zeros_like(slice_axis(a, 0, 0, 1)), Shape(a.shape().begin() + 1, a.shape().end()));
  return scan([](const Tensor& c, const Tensor& xs) { return std::make_pair(tanh(c + xs), c * xs + xs); }, init, a)
      .second;
}

Tensor apply_cond(const Step&, const Args& x) {
  const Tensor& a = x[0];
  return cond(
      sum(a) > 0.0, [&] { return tanh(a); }, [&] { return a * 0.5; });
}

Tensor apply_while(const Step& st, const Args& x) {
  using Carry = std::pair<Tensor, Tensor>;  // (steps taken, value)
  Tensor limit = x.size() > 1 ? minimum(maximum(sum(x[1]), 0.0), static_cast<double>(kWhileMaxIters))
                              : scalar(static_cast<double>(st.count), DType::i32);
  Carry out =
      while_loop([&](const Carry& c) { return logical_and(c.first < limit, max(abs(c.second)) < 2.0); },
                 [](const Carry& c) { return Carry(c.first + 1.0, c.second * 1.5 + sin(c.second) * 0.3 + 0.1); },
                 Carry(scalar(0, DType::i32), x[0]), kWhileMaxIters);
  return out.second + cast(out.first, x[0].dtype()) * 0.1;
}

Tensor apply_custom_vjp(const Step& st, const Args& x) {
  const Smooth2& fn = kCustom[st.op];
  auto f = custom_vjp([&fn](const Tensor& a, const Tensor& b) { return fn.f(a, b); },
                      [&fn](const Tensor& a, const Tensor& b, const Tensor&, const Tensor& g) {
                        return std::vector<Tensor>{g * fn.dx(a, b), g * fn.dy(a, b)};
                      });
  return f(x[0], x[1]);
}

Tensor apply_custom_jvp(const Step& st, const Args& x) {
  const Smooth2& fn = kCustom[st.op];
  auto f = custom_jvp([&fn](const Tensor& a, const Tensor& b) { return fn.f(a, b); },
                      [&fn](const Tensor& a, const Tensor& b, const Tensor& ta, const Tensor& tb) {
                        return fn.dx(a, b) * ta + fn.dy(a, b) * tb;
                      });
  return f(x[0], x[1]);
}

// v mod n, in [0, n) whatever v holds (a generated input, an edge value such as INT32_MIN, or,
// after shrinking, a constant or another i32 value), so that no read relies on clamping. The
// truncating remainder is in (-n, n); adding n and taking it again makes it non-negative, and
// nothing overflows.
Tensor in_range(const Tensor& v, int64_t n) {
  auto remainder = [n](const Tensor& x) { return x - (x / static_cast<double>(n)) * static_cast<double>(n); };
  return remainder(remainder(v) + static_cast<double>(n));
}

Tensor apply_gather(const Step& st, const Args& x) { return gather(x[0], in_range(x[1], x[0].dim(st.axis)), st.axis); }
Tensor apply_take(const Step& st, const Args& x) { return take(x[0], in_range(x[1], x[0].dim(st.axis)), st.axis); }
Tensor apply_scatter_add(const Step& st, const Args& x) {
  return scatter_add(x[0], in_range(x[1], st.count), st.count, st.axis);
}

// ---- Describing: each rule's describe names the step, given its operands' names.

using Names = std::vector<std::string>;

template <class O>
std::string family_name(const Family<O>& family, const Step& st, const Spec& s) {
  return family.of(s.pool[static_cast<size_t>(st.in[0].value)].dtype)[static_cast<size_t>(st.op)].name;
}

std::string axis_text(const Step& st) { return " axis " + std::to_string(st.axis); }

std::string describe_unary(const Spec& s, const Step& st, const Names& x) {
  return family_name(kUnary, st, s) + " " + x[0];
}
std::string describe_binary(const Spec& s, const Step& st, const Names& x) {
  return family_name(kBinary, st, s) + " " + x[0] + ", " + x[1];
}
std::string describe_compare(const Spec& s, const Step& st, const Names& x) {
  return family_name(kCompare, st, s) + " " + x[0] + ", " + x[1];
}
std::string describe_reduce(const Spec& s, const Step& st, const Names& x) {
  return family_name(kReduce, st, s) + " " + x[0] + axis_text(st);
}
std::string describe_arg_reduce(const Spec& s, const Step& st, const Names& x) {
  return family_name(kArgReduce, st, s) + " " + x[0] + axis_text(st);
}
std::string describe_select(const Spec&, const Step&, const Names& x) {
  return "where " + x[0] + " ? " + x[1] + " : " + x[2];
}
std::string describe_cast(const Spec& s, const Step& st, const Names& x) {
  DType from = s.pool[static_cast<size_t>(st.in[0].value)].dtype, to = s.pool[static_cast<size_t>(st.result)].dtype;
  std::string clamp = std::to_string(kIntClamp);
  std::string what = is_float(from) && to == DType::i32   ? std::to_string(kFloatScale) + " * " + x[0]
                     : from == DType::i32 && is_float(to) ? "clamp(" + x[0] + ", -" + clamp + ", " + clamp + ")"
                                                          : x[0];
  return std::string("cast to ") + dtype_name(to) + " " + what;
}
std::string describe_matmul(const Spec&, const Step&, const Names& x) { return "matmul " + x[0] + ", " + x[1]; }
std::string describe_transpose(const Spec&, const Step&, const Names& x) { return "transpose " + x[0]; }
std::string describe_flatten(const Spec&, const Step&, const Names& x) { return "flatten " + x[0]; }
std::string describe_slice(const Spec&, const Step& st, const Names& x) {
  return "slice [1:] of " + x[0] + axis_text(st);
}
std::string describe_expand_broadcast(const Spec&, const Step& st, const Names& x) {
  return "broadcast " + x[0] + " x" + std::to_string(st.count);
}
std::string describe_conv(const Spec&, const Step& st, const Names& x) {
  return "conv2d " + x[0] + ", " + x[1] + " padding " + std::to_string(st.count);
}
std::string describe_loop(const Spec&, const Step& st, const Names& x) {
  return "fori_loop x" + std::to_string(st.count) + " on " + x[0];
}
std::string describe_scan(const Spec&, const Step&, const Names& x) { return "scan over " + x[0]; }
std::string describe_cond(const Spec&, const Step&, const Names& x) { return "cond on sum(" + x[0] + ") > 0"; }
std::string describe_while(const Spec&, const Step& st, const Names& x) {
  std::string limit = x.size() > 1 ? "sum(" + x[1] + ")" : std::to_string(st.count);
  return "while_loop on " + x[0] + " until max|x| >= 2 or " + limit + " steps";
}
std::string describe_custom_vjp(const Spec&, const Step& st, const Names& x) {
  return std::string("custom_vjp ") + kCustom[st.op].name + " of " + x[0] + ", " + x[1];
}
std::string describe_custom_jvp(const Spec&, const Step& st, const Names& x) {
  return std::string("custom_jvp ") + kCustom[st.op].name + " of " + x[0] + ", " + x[1];
}
std::string describe_gather(const Spec&, const Step& st, const Names& x) {
  return "gather " + x[0] + " at " + x[1] + axis_text(st);
}
std::string describe_take(const Spec&, const Step& st, const Names& x) {
  return "take " + x[0] + " at " + x[1] + axis_text(st);
}
std::string describe_scatter_add(const Spec&, const Step& st, const Names& x) {
  return "scatter_add " + x[0] + " at " + x[1] + " into " + std::to_string(st.count) + " rows" + axis_text(st);
}

struct Rule {
  bool (*fits)(const TensorType&);
  Planned (*plan)(Builder&, Step&);
  Tensor (*apply)(const Step&, const Args&);
  std::string (*describe)(const Spec&, const Step&, const Names&);
};

// Indexed by StepKind.
const Rule kRules[kStepKinds] = {
    {any_value, plan_unary, apply_unary, describe_unary},
    {any_value, plan_binary, apply_binary, describe_binary},
    {numeric_with_axis, plan_reduce, apply_reduce, describe_reduce},
    {numeric_with_axis, plan_matmul, apply_matmul, describe_matmul},
    {rank_at_least_2, plan_transpose, apply_transpose, describe_transpose},
    {rank_at_least_2, plan_flatten, apply_flatten, describe_flatten},
    {sliceable, plan_slice, apply_slice, describe_slice},
    {rank_at_most_3, plan_expand_broadcast, apply_expand_broadcast, describe_expand_broadcast},
    {image, plan_conv, apply_conv, describe_conv},
    {float_value, plan_loop, apply_loop, describe_loop},
    {float_with_axis, plan_same_type, apply_scan, describe_scan},
    {float_value, plan_same_type, apply_cond, describe_cond},
    {any_value, plan_compare, apply_compare, describe_compare},
    {any_value, plan_select, apply_select, describe_select},
    {any_value, plan_cast, apply_cast, describe_cast},
    {numeric_with_axis, plan_arg_reduce, apply_arg_reduce, describe_arg_reduce},
    {has_axis, plan_gather, apply_gather, describe_gather},
    {has_axis, plan_take, apply_take, describe_take},
    {numeric_with_axis, plan_scatter_add, apply_scatter_add, describe_scatter_add},
    {float_value, plan_while, apply_while, describe_while},
    {float_value, plan_custom, apply_custom_vjp, describe_custom_vjp},
    {float_value, plan_custom, apply_custom_jvp, describe_custom_jvp},
};

const Rule& rule(StepKind k) { return kRules[static_cast<int>(k)]; }

// The first input is f64 (the loss's fallback); half the others are i32 or bool.
DType input_dtype(Rng& r, bool first) {
  int pick = first ? 0 : r.below(10);
  return pick < 5 ? DType::f64 : pick < 8 ? DType::i32 : DType::boolean;
}

// Moves the float inputs before the others, keeping their order, so that a program's inputs
// split into the differentiated ones and the rest at float_inputs().
void floats_first(Spec& s) {
  std::vector<int> order(s.inputs.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  std::stable_partition(order.begin(), order.end(),
                        [&](int i) { return is_float(s.inputs[static_cast<size_t>(i)].dtype); });
  std::vector<int> position(order.size());
  std::vector<TensorType> inputs;
  for (size_t k = 0; k < order.size(); ++k) {
    position[static_cast<size_t>(order[k])] = static_cast<int>(k);
    inputs.push_back(s.inputs[static_cast<size_t>(order[k])]);
  }
  s.inputs = std::move(inputs);
  for (int& src : s.source)
    if (src >= 0) src = position[static_cast<size_t>(src)];
}

// Which pool values the live steps read (as values, not as constants).
std::vector<bool> read_values(const Spec& s) {
  std::vector<bool> read(s.pool.size());
  for (size_t k = 0; k < s.length; ++k) {
    if (!s.live(k)) continue;
    for (const Operand& o : s.steps[k].in)
      if (!o.constant) read[static_cast<size_t>(o.value)] = true;
  }
  return read;
}

}  // namespace

size_t Spec::live_steps() const {
  size_t n = 0;
  for (size_t k = 0; k < length; ++k) n += live(k);
  return n;
}

size_t Spec::float_inputs() const {
  return static_cast<size_t>(
      std::count_if(inputs.begin(), inputs.end(), [](const TensorType& t) { return is_float(t.dtype); }));
}

std::vector<int> Spec::sinks() const {
  std::vector<bool> read = read_values(*this);
  std::vector<int> out;
  for (size_t k = 0; k < length; ++k) {
    int r = steps[k].result;
    if (live(k) && !read[static_cast<size_t>(r)]) out.push_back(r);
  }
  return out;
}

Spec generate(uint64_t seed, int max_steps) {
  Builder g(seed);
  int n_inputs = 1 + g.r.below(3);
  for (int i = 0; i < n_inputs; ++i) {
    DType t = input_dtype(g.r, i == 0);
    g.add_input({t, random_shape(g.r, 3)});
  }
  if (g.r.below(4) == 0) {
    g.add_input({DType::f64, {1 + g.r.below(2), 1 + g.r.below(2), 3 + g.r.below(3), 3 + g.r.below(3)}});
  }
  int n_steps = 1 + g.r.below(max_steps);
  for (int k = 0; k < n_steps; ++k) {
    Step st;
    Planned out;
    // The kind first, then its first operand among the values it fits, so that every kind is
    // as likely whatever the pool holds. Every value fits a unary step: after 20 misfits, one.
    for (int attempt = 0; !out; ++attempt) {
      st = Step{};
      st.kind = attempt >= 20 ? StepKind::Unary : static_cast<StepKind>(g.r.below(kStepKinds));
      std::optional<Operand> a = g.pick(rule(st.kind).fits);
      if (!a) continue;
      st.in = {*a};
      out = rule(st.kind).plan(g, st);
    }
    st.result = static_cast<int>(g.s.pool.size());
    g.s.pool.push_back(*out);
    g.s.source.push_back(-1);
    g.s.steps.push_back(st);
  }
  g.s.length = g.s.steps.size();
  floats_first(g.s);
  return g.s;
}

namespace {

// `x` times 1 + size * u, u uniform in [-1, 1) per element, drawn from (seed, key).
Tensor perturbed(const Tensor& x, const Perturbation& p, uint64_t key) {
  Rng r(p.seed * 0x9e3779b97f4a7c15ull + key);
  std::vector<double> factor(static_cast<size_t>(numel(x.shape())));
  for (double& f : factor) f = 1 + p.size * (2 * r.uniform() - 1);
  return x * constant(Array(factor, x.shape()));
}

}  // namespace

Spec in_dtype(const Spec& spec, DType floats) {
  Spec out = spec;
  out.floats = floats;
  for (std::vector<TensorType>* types : {&out.inputs, &out.pool})
    for (TensorType& t : *types)
      if (is_float(t.dtype)) t.dtype = floats;
  return out;
}

std::vector<Tensor> trace(const Spec& spec, const std::vector<Tensor>& inputs, const Perturbation* noise) {
  auto rounding = [&](const Tensor& x, uint64_t key) {
    return noise && is_float(x.dtype()) ? perturbed(x, *noise, key) : x;
  };
  std::vector<Tensor> v(spec.pool.size());
  for (size_t i = 0; i < spec.pool.size(); ++i)
    if (spec.source[i] >= 0) v[i] = inputs[static_cast<size_t>(spec.source[i])];
  for (size_t k = 0; k < spec.length; ++k) {
    if (!spec.live(k)) continue;
    const Step& st = spec.steps[k];
    Args x;
    x.floats = spec.floats;
    for (const Operand& o : st.in) {
      const TensorType& t = spec.pool[static_cast<size_t>(o.value)];
      x.push_back(o.constant ? full(t.shape, constant_value(t.dtype), t.dtype) : v[static_cast<size_t>(o.value)]);
    }
    v[static_cast<size_t>(st.result)] = rounding(rule(st.kind).apply(st, x), k);
  }
  // The loss's terms are perturbed too: where they cancel, their rounding is most of its error.
  auto loss_term = [&](const Tensor& s, int key) {
    return sum(rounding(sin(s), spec.steps.size() + static_cast<uint64_t>(key)));
  };
  std::vector<Tensor> out = {Tensor()};
  for (int r : spec.sinks()) {
    const Tensor& s = v[static_cast<size_t>(r)];
    if (is_float(s.dtype())) out[0] = out[0].valid() ? out[0] + loss_term(s, r) : loss_term(s, r);
    out.push_back(s);
  }
  if (!out[0].valid()) out[0] = loss_term(inputs[0], -1);
  return out;
}

Array array_of(DType dtype, const std::vector<double>& values, const Shape& shape) {
  switch (dtype) {
    case DType::i32: return Array(std::vector<int32_t>(values.begin(), values.end()), shape);
    case DType::boolean: {
      std::vector<bool> b;
      for (double x : values) b.push_back(x != 0);
      return Array(b, shape);
    }
    case DType::f16: return Array(std::vector<Half>(values.begin(), values.end()), shape);
    case DType::bf16: return Array(std::vector<BFloat16>(values.begin(), values.end()), shape);
    default: return Array(values, shape);
  }
}

// An i32 input element: mostly small, so that arithmetic stays exact, and one in 8 an edge of
// wrapping arithmetic (INT32_MIN / -1, squares past 2^31, sums that wrap).
double i32_element(Rng& r) {
  constexpr double kEdges[] = {-2147483648.0, 2147483647.0, -1, 65536, -65536, 46341};
  return r.below(8) == 0 ? kEdges[r.below(static_cast<int64_t>(std::size(kEdges)))] : r.below(16) - 8;
}

std::vector<Array> make_inputs(const std::vector<TensorType>& types, uint64_t seed) {
  Rng r(seed ^ 0x5bd1e995ull);
  std::vector<Array> out;
  for (const TensorType& t : types) {
    std::vector<double> v(static_cast<size_t>(t.numel()));
    for (double& x : v) {
      x = t.dtype == DType::i32 ? i32_element(r) : t.dtype == DType::boolean ? r.below(2) : 2 * r.uniform() - 1;
    }
    out.push_back(array_of(t.dtype, v, t.shape));
  }
  return out;
}

std::string Spec::describe() const {
  auto name = [&](int i) { return "%" + std::to_string(i); };
  auto type = [&](int i) { return pool[static_cast<size_t>(i)].str(); };
  // Only the inputs that live steps read, and input 0 (the loss's fallback): a shrunk program
  // keeps every input as a parameter, most of them unread.
  std::vector<bool> read = read_values(*this);
  std::string out;
  size_t unread = 0;
  for (size_t i = 0; i < pool.size(); ++i) {
    if (source[i] < 0) continue;
    if (!read[i] && source[i] != 0) {
      ++unread;
      continue;
    }
    out += name(static_cast<int>(i)) + " = input " + std::to_string(source[i]) + " " + type(static_cast<int>(i)) + "\n";
  }
  if (unread) out += "(" + std::to_string(unread) + " more inputs, unread)\n";
  for (size_t k = 0; k < length; ++k) {
    if (!live(k)) continue;
    const Step& st = steps[k];
    Names x;
    for (const Operand& o : st.in) {
      const TensorType& t = pool[static_cast<size_t>(o.value)];
      x.push_back(o.constant ? "full(" + t.str() + ", " + constant_text(t.dtype) + ")" : name(o.value));
    }
    out += name(st.result) + " = " + rule(st.kind).describe(*this, st, x) + " : " + type(st.result) + "\n";
  }
  return out;
}

namespace {

// `spec` without step k, whose uses read `instead` (nothing when the step is unread).
Spec bypassed(const Spec& spec, size_t k, const Operand& instead) {
  Spec s = spec;
  s.steps[k].removed = true;
  for (size_t j = k + 1; j < s.length; ++j) {
    for (Operand& o : s.steps[j].in)
      if (!o.constant && o.value == spec.steps[k].result) o = instead;
  }
  return s;
}

// The earliest value of pool value u's type that a step may read instead of u: an input or a
// live step's result, before u. Nothing when u is the earliest.
std::optional<int> earliest_like(const Spec& s, int u) {
  std::vector<int> made(s.pool.size(), -1);  // pool value -> the step that writes it
  for (size_t k = 0; k < s.steps.size(); ++k) made[static_cast<size_t>(s.steps[k].result)] = static_cast<int>(k);
  for (int w = 0; w < u; ++w) {
    bool available = s.source[static_cast<size_t>(w)] >= 0 || s.live(static_cast<size_t>(made[static_cast<size_t>(w)]));
    if (available && s.pool[static_cast<size_t>(w)] == s.pool[static_cast<size_t>(u)]) return w;
  }
  return std::nullopt;
}

}  // namespace

// Every variant lowers (live steps, operands that are values, the sum of those values' indices):
// a bypass removes a step, a constant replaces a value, an earlier value a later one.
std::vector<Spec> simplifications(const Spec& spec) {
  std::vector<Spec> out;
  std::vector<bool> read = read_values(spec);
  for (size_t k = spec.length; k-- > 0;) {
    if (!spec.live(k)) continue;
    const Step& st = spec.steps[k];
    if (!read[static_cast<size_t>(st.result)]) {
      out.push_back(bypassed(spec, k, {}));
      continue;
    }
    for (const Operand& o : st.in)
      if (spec.pool[static_cast<size_t>(o.value)] == spec.pool[static_cast<size_t>(st.result)])
        out.push_back(bypassed(spec, k, o));
  }
  for (size_t k = 0; k < spec.length; ++k) {
    if (!spec.live(k)) continue;
    for (size_t i = 0; i < spec.steps[k].in.size(); ++i) {
      const Operand& o = spec.steps[k].in[i];
      if (o.constant) continue;
      if (std::optional<int> w = earliest_like(spec, o.value)) {
        out.push_back(spec);
        out.back().steps[k].in[i].value = *w;
      }
      out.push_back(spec);
      out.back().steps[k].in[i].constant = true;
    }
  }
  return out;
}

}  // namespace fluxion::difffuzz
