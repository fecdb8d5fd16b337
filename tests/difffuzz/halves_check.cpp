// The differential fuzzer's oracle for f16 and bf16 programs (check.h, check_halves). A 16-bit
// program cannot equal its f64 twin, and how far it may be depends on the program: a difference
// of two close values loses every bit the rounding left. So each element's tolerance comes from
// the program itself, by first-order rounding analysis done by sampling: the f64 program is run
// again with every step's result (and every term of the loss) multiplied by 1 + u * e, e uniform
// in [-1, 1), u the 16-bit unit roundoff, which is the error rounding to 16 bits makes at each
// step; the spread of those runs around the f64 result says how much the program amplifies
// such errors at that element.
#include <cmath>
#include <cstdio>
#include <optional>

#include "difffuzz/check.h"

namespace fluxion::difffuzz {

namespace {

// Runs of the perturbed f64 program; the spread is the largest of their differences.
constexpr int kPerturbations = 4;
// The tolerance: kSpread times the spread (a few samples of a random error may all fall short
// of the actual one), plus kUnits units of roundoff of the value (the result's own rounding, and
// the several roundings inside one step: softplus, a loop body), plus one unit of the array's
// largest value (where a value cancels to near zero, its error is the terms', not its own).
constexpr double kSpread = 8, kUnits = 4;

double unit_roundoff(DType t) { return t == DType::f16 ? 0x1p-11 : 0x1p-8; }

// One evaluation: the program's results, the loss as value_and_grad computes it, then the
// gradients of the loss.
struct Values {
  std::vector<std::vector<double>> arrays;
  std::vector<DType> dtypes;
};

Values values_of(const std::vector<Array>& results, const Array& value, const std::vector<Array>& grads) {
  Values v;
  for (const std::vector<Array>& list : {results, {value}, grads}) {
    for (const Array& a : list) {
      v.arrays.push_back(a.to_doubles());
      v.dtypes.push_back(a.dtype());
    }
  }
  return v;
}

// The name of array r of Values with `results` results.
std::string array_name(size_t r, size_t results) {
  if (r < results) return "result " + std::to_string(r);
  if (r == results) return "value_and_grad's value";
  return "gradient of input " + std::to_string(r - results - 1);
}

std::vector<Array> widened(const std::vector<Array>& inputs) {
  std::vector<Array> out;
  for (const Array& a : inputs) out.push_back(is_float(a.dtype()) ? Array(a.to_doubles(), a.shape()) : a);
  return out;
}

// Per element of every array: the tolerance around the f64 result `exact`, from the perturbed
// runs. Integer elements (comparisons, argmax, casts of floats) are exact unless a perturbation
// moved them too.
std::vector<std::vector<double>> tolerances(const Values& exact, const std::vector<Values>& perturbed, double unit) {
  std::vector<std::vector<double>> tol(exact.arrays.size());
  for (size_t r = 0; r < exact.arrays.size(); ++r) {
    const std::vector<double>& x = exact.arrays[r];
    double largest = 0;
    for (double e : x)
      if (std::isfinite(e)) largest = std::max(largest, std::abs(e));
    bool floats = is_float(exact.dtypes[r]);
    for (size_t i = 0; i < x.size(); ++i) {
      double spread = 0;
      for (const Values& p : perturbed) spread = std::max(spread, std::abs(p.arrays[r][i] - x[i]));
      tol[r].push_back(kSpread * spread + (floats ? unit * (kUnits * std::abs(x[i]) + largest) : 0));
    }
  }
  return tol;
}

bool within(double got, double want, double tol) {
  if (std::isnan(want)) return std::isnan(got);
  if (std::isinf(want)) return got == want;
  return std::abs(got - want) <= tol;
}

// "" when every element of `got` is within its tolerance of the f64 result or of the
// interpreter's 16-bit one (which the tolerance model may not describe: a comparison that the
// 16-bit rounding flips and no perturbation did), and has the interpreter's dtype.
std::string compare(const std::string& where, const Values& got, const Values& exact, const Values& interpreted,
                    const std::vector<std::vector<double>>& tol, size_t results) {
  if (got.arrays.size() != interpreted.arrays.size()) {
    return where + ": " + std::to_string(got.arrays.size()) + " arrays, expected " +
           std::to_string(interpreted.arrays.size());
  }
  for (size_t r = 0; r < got.arrays.size(); ++r) {
    std::string name = array_name(r, results) + where;
    if (got.dtypes[r] != interpreted.dtypes[r])
      return name + ": " + dtype_name(got.dtypes[r]) + ", expected " + dtype_name(interpreted.dtypes[r]);
    for (size_t i = 0; i < got.arrays[r].size(); ++i) {
      double g = got.arrays[r][i], x = exact.arrays[r][i], t = tol[r][i];
      if (within(g, x, t) || within(g, interpreted.arrays[r][i], t)) continue;
      char buf[200];
      std::snprintf(buf, sizeof buf,
                    "%s: element %zu is %.9g, f64 gives %.17g (tolerance %.3g), %s on the interpreter %.9g",
                    name.c_str(), i, g, x, t, dtype_name(interpreted.dtypes[r]), interpreted.arrays[r][i]);
      return buf;
    }
  }
  return "";
}

using Axes = std::vector<std::optional<int>>;

// check_halves on `inputs`, of the program vmapped over `axes` when there are any (the loss
// then the sum of the examples'). "" when every backend agrees.
std::string check_on(const Spec& spec, const std::vector<Array>& inputs, const Axes& axes,
                     const std::vector<Backend>& backends) {
  Spec wide = in_dtype(spec, DType::f64);
  double unit = unit_roundoff(spec.floats);
  size_t floats = spec.float_inputs();
  std::vector<Array> wide_inputs = widened(inputs);
  // Values and gradients of `s` (perturbed by `noise`) on backend b.
  auto evaluate = [&](const Spec& s, const std::vector<Array>& in, Backend b, std::optional<Perturbation> noise) {
    auto one = [s, noise](const std::vector<Tensor>& x) { return trace(s, x, noise ? &*noise : nullptr); };
    auto program = [one, axes](const std::vector<Tensor>& x) {
      return axes.empty() ? one(x) : vmap(one, {BatchAxes(axes)})(x);
    };
    auto loss = [program](const std::vector<Tensor>& f, const std::vector<Tensor>& o) {
      std::vector<Tensor> all = f;
      all.insert(all.end(), o.begin(), o.end());
      return sum(program(all)[0]);
    };
    std::vector<Array> f(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(floats));
    std::vector<Array> o(in.begin() + static_cast<std::ptrdiff_t>(floats), in.end());
    auto [value, grads] = jit(value_and_grad(loss), b)(f, o);
    return values_of(jit(program, b)(in), value, grads);
  };
  std::string what = std::string(" in ") + dtype_name(spec.floats) + (axes.empty() ? "" : " vmapped");
  try {
    Values exact = evaluate(wide, wide_inputs, Backend::Interp, std::nullopt);
    Values interpreted = evaluate(spec, inputs, Backend::Interp, std::nullopt);
    size_t results = exact.arrays.size() - floats - 1;
    // A program that overflows (f16 ends at 65504) says nothing about the backends.
    if (!std::isfinite(exact.arrays[results][0]) || !std::isfinite(interpreted.arrays[results][0])) return "";
    std::vector<Values> perturbed;
    for (int k = 0; k < kPerturbations; ++k) {
      Perturbation noise{unit, spec.seed * kPerturbations + static_cast<uint64_t>(k)};
      perturbed.push_back(evaluate(wide, wide_inputs, Backend::Interp, noise));
    }
    std::vector<std::vector<double>> tol = tolerances(exact, perturbed, unit);
    for (Backend b : backends) {
      std::string e = compare(what + " on " + backend_name(b), evaluate(spec, inputs, b, std::nullopt), exact,
                              interpreted, tol, results);
      if (!e.empty()) return e;
    }
  } catch (const std::exception& e) {
    return "exception" + what + ": " + e.what();
  }
  return "";
}

}  // namespace

std::string check_halves(const Spec& spec, const std::vector<Backend>& backends) {
  Batch batch = batch_of(spec);
  std::string e = check_on(spec, batch.inputs, {}, backends);
  return e.empty() ? check_on(spec, batch.batched, batch.axes, backends) : e;
}

}  // namespace fluxion::difffuzz
