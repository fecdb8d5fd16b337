#include "difffuzz/generator.h"

#include <algorithm>

namespace fluxion::difffuzz {

namespace {

// splitmix64: the same numbers on every platform and standard library.
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull) {}
  uint64_t next() {
    uint64_t z = (s_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  int below(int n) { return static_cast<int>(next() % static_cast<uint64_t>(n)); }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

 private:
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

constexpr int kUnaryOps = 7, kBinaryOps = 4, kReduceOps = 3;
const char* kUnaryNames[kUnaryOps] = {"tanh", "sin", "sigmoid", "softplus", "exp(tanh)", "square", "log1p(square)"};
const char* kBinaryNames[kBinaryOps] = {"add", "sub", "mul", "div(a, 1 + b^2)"};
const char* kReduceNames[kReduceOps] = {"sum", "mean", "max"};

Tensor unary(int op, const Tensor& x) {
  switch (op) {
    case 0: return tanh(x);
    case 1: return sin(x);
    case 2: return sigmoid(x);
    case 3: return softplus(x);
    case 4: return exp(tanh(x));
    case 5: return square(x);
    default: return log1p(square(x));
  }
}

Tensor binary(int op, const Tensor& a, const Tensor& b) {
  switch (op) {
    case 0: return a + b;
    case 1: return a - b;
    case 2: return a * b;
    default: return a / (square(b) + 1.0);
  }
}

}  // namespace

Spec generate(uint64_t seed, int max_steps) {
  Rng r(seed);
  Spec s;
  s.seed = seed;
  auto add_input = [&](Shape shape) {
    s.source.push_back(static_cast<int>(s.inputs.size()));
    s.inputs.push_back(shape);
    s.pool.push_back(std::move(shape));
    return static_cast<int>(s.pool.size()) - 1;
  };
  int n_inputs = 1 + r.below(2);
  for (int i = 0; i < n_inputs; ++i) add_input(random_shape(r, 3));
  if (r.below(4) == 0) add_input({1 + r.below(2), 1 + r.below(2), 3 + r.below(3), 3 + r.below(3)});
  int n_steps = 1 + r.below(max_steps);
  for (int k = 0; k < n_steps; ++k) {
    Step st;
    Shape out;
    for (int attempt = 0;; ++attempt) {
      st = Step{};
      st.a = r.below(static_cast<int>(s.pool.size()));
      const Shape a = s.pool[static_cast<size_t>(st.a)];
      int rank = static_cast<int>(a.size());
      st.kind = attempt >= 20 ? StepKind::Unary : static_cast<StepKind>(r.below(12));
      bool ok = true;
      switch (st.kind) {
        case StepKind::Unary: st.op = r.below(kUnaryOps); out = a; break;
        case StepKind::Binary: {
          std::vector<int> fits;
          for (size_t j = 0; j < s.pool.size(); ++j)
            if (broadcastable(a, s.pool[j])) fits.push_back(static_cast<int>(j));
          st.b = fits[static_cast<size_t>(r.below(static_cast<int>(fits.size())))];
          st.op = r.below(kBinaryOps);
          out = broadcast(a, s.pool[static_cast<size_t>(st.b)]);
          break;
        }
        case StepKind::Reduce:
          ok = rank >= 1;
          if (!ok) break;
          st.op = r.below(kReduceOps);
          st.axis = r.below(rank);
          out = a;
          out.erase(out.begin() + st.axis);
          break;
        case StepKind::MatMul: {
          ok = rank >= 1;
          if (!ok) break;
          int64_t n = 1 + r.below(4);
          st.b = add_input({a.back(), n});
          out = a;
          if (rank == 1) out.pop_back();
          else out.back() = n;
          if (rank == 1) out.push_back(n);
          break;
        }
        case StepKind::Transpose:
          ok = rank >= 2;
          out = Shape(a.rbegin(), a.rend());
          break;
        case StepKind::Flatten:
          ok = rank >= 2;
          out = {numel(a)};
          break;
        case StepKind::Slice:
          ok = rank >= 1;
          if (!ok) break;
          st.axis = r.below(rank);
          ok = a[static_cast<size_t>(st.axis)] >= 2;
          out = a;
          if (ok) out[static_cast<size_t>(st.axis)] -= 1;
          break;
        case StepKind::ExpandBroadcast:
          ok = rank <= 3;
          st.count = 2 + r.below(2);
          out = a;
          out.insert(out.begin(), st.count);
          break;
        case StepKind::Conv: {
          ok = rank == 4 && a[2] >= 2 && a[3] >= 2;
          if (!ok) break;
          int64_t o = 1 + r.below(3), kh = 1 + r.below(static_cast<int>(std::min<int64_t>(3, a[2]))),
                  kw = 1 + r.below(static_cast<int>(std::min<int64_t>(3, a[3])));
          st.count = r.below(2);  // padding
          st.b = add_input({o, a[1], kh, kw});
          out = {a[0], o, a[2] + 2 * st.count - kh + 1, a[3] + 2 * st.count - kw + 1};
          break;
        }
        case StepKind::Loop: st.count = 1 + r.below(4); out = a; break;
        case StepKind::Scan: ok = rank >= 1; out = a; break;
        case StepKind::Cond: out = a; break;
      }
      if (ok) break;
    }
    st.result = static_cast<int>(s.pool.size());
    s.pool.push_back(out);
    s.source.push_back(-1);
    s.steps.push_back(st);
  }
  s.length = s.steps.size();
  return s;
}

std::vector<Tensor> trace(const Spec& spec, const std::vector<Tensor>& inputs) {
  std::vector<Tensor> v(spec.pool.size());
  for (size_t i = 0; i < spec.pool.size(); ++i)
    if (spec.source[i] >= 0) v[i] = inputs[static_cast<size_t>(spec.source[i])];
  Tensor last = inputs[0];
  for (size_t k = 0; k < spec.length; ++k) {
    const Step& st = spec.steps[k];
    const Tensor& a = v[static_cast<size_t>(st.a)];
    const Tensor& b = v[static_cast<size_t>(st.b)];
    Tensor out;
    switch (st.kind) {
      case StepKind::Unary: out = unary(st.op, a); break;
      case StepKind::Binary: out = binary(st.op, a, b); break;
      case StepKind::Reduce:
        out = st.op == 0 ? sum(a, st.axis) : st.op == 1 ? mean(a, st.axis) : max(a, st.axis);
        break;
      case StepKind::MatMul: out = matmul(a, b); break;
      case StepKind::Transpose: out = transpose(a); break;
      case StepKind::Flatten: out = flatten(a); break;
      case StepKind::Slice: out = slice_axis(a, st.axis, 1, a.dim(st.axis)); break;
      case StepKind::ExpandBroadcast: {
        Shape to = a.shape();
        to.insert(to.begin(), st.count);
        out = broadcast_to(expand_dims(a, 0), to);
        break;
      }
      case StepKind::Conv: out = conv2d(a, b, {.padding = {st.count, st.count}}); break;
      case StepKind::Loop:
        out = fori_loop(
            0, st.count,
            [](const Tensor& i, const Tensor& c) { return c * 0.8 + sin(c) * 0.3 + cast(i, DType::f64) * 0.05; }, a);
        break;
      case StepKind::Scan: {
        Tensor init = zeros_like(slice_axis(a, 0, 0, 1));
        init = reshape(init, Shape(a.shape().begin() + 1, a.shape().end()));
        out = scan([](const Tensor& c, const Tensor& x) { return std::make_pair(tanh(c + x), c * x + x); }, init, a).second;
        break;
      }
      case StepKind::Cond:
        out = cond(sum(a) > 0.0, [&] { return tanh(a); }, [&] { return a * 0.5; });
        break;
    }
    v[static_cast<size_t>(st.result)] = out;
    last = out;
  }
  return {sum(sin(last)), last};
}

std::vector<Array> make_inputs(const std::vector<Shape>& shapes, uint64_t seed) {
  Rng r(seed ^ 0x5bd1e995ull);
  std::vector<Array> out;
  for (const Shape& s : shapes) {
    std::vector<double> v(static_cast<size_t>(numel(s)));
    for (double& x : v) x = 2 * r.uniform() - 1;
    out.emplace_back(v, s);
  }
  return out;
}

std::string Spec::describe() const {
  auto name = [&](int i) { return "%" + std::to_string(i); };
  std::string out;
  for (size_t i = 0; i < pool.size(); ++i)
    if (source[i] >= 0) out += name(static_cast<int>(i)) + " = input " + std::to_string(source[i]) + " f64" + shape_str(pool[i]) + "\n";
  for (size_t k = 0; k < length; ++k) {
    const Step& st = steps[k];
    std::string what;
    switch (st.kind) {
      case StepKind::Unary: what = std::string(kUnaryNames[st.op]) + " " + name(st.a); break;
      case StepKind::Binary: what = std::string(kBinaryNames[st.op]) + " " + name(st.a) + ", " + name(st.b); break;
      case StepKind::Reduce: what = std::string(kReduceNames[st.op]) + " " + name(st.a) + " axis " + std::to_string(st.axis); break;
      case StepKind::MatMul: what = "matmul " + name(st.a) + ", " + name(st.b); break;
      case StepKind::Transpose: what = "transpose " + name(st.a); break;
      case StepKind::Flatten: what = "flatten " + name(st.a); break;
      case StepKind::Slice: what = "slice [1:] of " + name(st.a) + " axis " + std::to_string(st.axis); break;
      case StepKind::ExpandBroadcast: what = "broadcast " + name(st.a) + " x" + std::to_string(st.count); break;
      case StepKind::Conv: what = "conv2d " + name(st.a) + ", " + name(st.b) + " padding " + std::to_string(st.count); break;
      case StepKind::Loop: what = "fori_loop x" + std::to_string(st.count) + " on " + name(st.a); break;
      case StepKind::Scan: what = "scan over " + name(st.a); break;
      case StepKind::Cond: what = "cond on sum(" + name(st.a) + ") > 0"; break;
    }
    out += name(st.result) + " = " + what + " f64" + shape_str(pool[static_cast<size_t>(st.result)]) + "\n";
  }
  return out;
}

}  // namespace fluxion::difffuzz
