#include "difffuzz/check.h"

#include <cmath>
#include <cstdio>

#include "common/finite_differences.h"
#include "driver/pipeline.h"
#include "jit/eval/interpreter.h"
#include "jit/ir/ir.h"

namespace fluxion::difffuzz {

namespace {

bool close(double got, double want, double rel, double abs) {
  if (std::isnan(want)) return std::isnan(got);
  return std::abs(got - want) <= rel * std::abs(want) + abs;
}

std::string compare(const std::string& what, const std::vector<double>& got, const std::vector<double>& want,
                    double rel, double abs) {
  if (got.size() != want.size())
    return what + ": " + std::to_string(got.size()) + " values, expected " + std::to_string(want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (!close(got[i], want[i], rel, abs)) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "%s: element %zu is %.17g, expected %.17g", what.c_str(), i, got[i], want[i]);
      return buf;
    }
  }
  return "";
}

// "<what> <index><where>", the name of one array in a difference report.
std::string label(const std::string& what, size_t index, const std::string& where) {
  std::string s = what;
  s += ' ';
  s += std::to_string(index);
  s += where;
  return s;
}

// "" when every array of `got` is close to `want`'s, else the first difference, as
// "<what> <index><where>: ...".
std::string compare_all(const std::string& what, const std::string& where, const std::vector<Array>& got,
                        const std::vector<Array>& want, double rel, double abs) {
  if (got.size() != want.size()) {
    return what + where + ": " + std::to_string(got.size()) + " arrays, expected " + std::to_string(want.size());
  }
  for (size_t r = 0; r < want.size(); ++r) {
    std::string e = compare(label(what, r, where), got[r].to_doubles(), want[r].to_doubles(), rel, abs);
    if (!e.empty()) return e;
  }
  return "";
}

// The same for gradients against finite differences, one list of values per input.
std::string compare_gradients(const std::string& what, const std::string& where, const std::vector<Array>& grads,
                              const std::vector<std::vector<double>>& fd, double rel, double abs) {
  if (grads.size() != fd.size()) {
    return what + where + ": " + std::to_string(grads.size()) + " gradients, expected " + std::to_string(fd.size());
  }
  for (size_t i = 0; i < fd.size(); ++i) {
    std::string e = compare(label(what, i, where) + " vs finite differences", grads[i].to_doubles(), fd[i], rel, abs);
    if (!e.empty()) return e;
  }
  return "";
}

// Example e's value (of `example` shape) stacked into a batch along `axis`.
Array stack_along(const std::vector<Array>& examples, int64_t axis) {
  Shape s = examples[0].shape();
  Shape batched = s;
  batched.insert(batched.begin() + axis, static_cast<int64_t>(examples.size()));
  std::vector<int64_t> strides = row_major_strides(s);
  std::vector<double> v(static_cast<size_t>(numel(batched)));
  std::vector<std::vector<double>> values;
  for (const Array& a : examples) values.push_back(a.to_doubles());
  std::vector<int64_t> idx(batched.size(), 0);
  for (double& out : v) {
    int64_t at = 0;
    for (size_t d = 0, k = 0; d < idx.size(); ++d) {
      if (static_cast<int64_t>(d) != axis) at += idx[d] * strides[k++];
    }
    out = values[static_cast<size_t>(idx[static_cast<size_t>(axis)])][static_cast<size_t>(at)];
    for (size_t d = idx.size(); d-- > 0;) {
      if (++idx[d] < batched[d]) break;
      idx[d] = 0;
    }
  }
  return Array(v, batched);
}

}  // namespace

std::string check_vmap(const Spec& spec, const std::vector<Backend>& backends) {
  constexpr int64_t kExamples = 3;
  size_t which = spec.seed % spec.inputs.size();
  int64_t axis = static_cast<int64_t>((spec.seed / 7) % (spec.inputs[which].size() + 1));
  std::vector<Array> inputs = make_inputs(spec.inputs, spec.seed), examples;
  for (int64_t e = 0; e < kExamples; ++e) {
    examples.push_back(make_inputs({spec.inputs[which]}, spec.seed + 100 + static_cast<uint64_t>(e))[0]);
  }
  std::vector<Array> batched = inputs;
  batched[which] = stack_along(examples, axis);
  std::vector<std::optional<int>> axes(inputs.size(), std::nullopt);
  axes[which] = static_cast<int>(axis);
  auto program = [spec, axes](const std::vector<Tensor>& in) {
    return vmap([spec](const std::vector<Tensor>& x) { return trace(spec, x); }, {BatchAxes(axes)})(in);
  };
  auto loss = [program](const std::vector<Tensor>& in) { return sum(program(in)[0]); };
  try {
    auto reference = jit(program, Backend::Interp);
    std::vector<Array> want = reference(batched);
    auto single = jit([spec](const std::vector<Tensor>& x) { return trace(spec, x); }, Backend::Interp);
    for (int64_t e = 0; e < kExamples; ++e) {
      std::vector<Array> alone = inputs;
      alone[which] = examples[static_cast<size_t>(e)];
      std::vector<Array> one = single(alone);
      if (!std::isfinite(one[0].item())) return "";
      for (size_t r = 0; r < one.size(); ++r) {
        std::vector<double> all = want[r].to_doubles(), mine = one[r].to_doubles();
        std::vector<double> slice(all.begin() + e * static_cast<long>(mine.size()),
                                  all.begin() + (e + 1) * static_cast<long>(mine.size()));
        std::string err =
            compare("vmapped result " + std::to_string(r) + " of example " + std::to_string(e) + " vs a single call",
                    slice, mine, 1e-12, 1e-14);
        if (!err.empty()) return err;
      }
    }
    auto reference_loss = jit(loss, Backend::Interp);
    double f0 = reference_loss(batched).item();
    std::vector<std::vector<double>> fd =
        testing::central_differences(batched, [&](const std::vector<Array>& x) { return reference_loss(x).item(); });
    for (Backend b : backends) {
      std::string at = std::string(" on ") + backend_name(b);
      std::string err = compare_all("vmapped result", at, jit(program, b)(batched), want, 1e-9, 1e-12);
      if (err.empty()) {
        err = compare_gradients("vmapped gradient of input", at, jit(value_and_grad(loss), b)(batched).second, fd, 1e-5,
                                testing::gradient_abs_tolerance(f0));
      }
      if (!err.empty()) return err;
    }
  } catch (const std::exception& e) {
    return std::string("exception under vmap: ") + e.what();
  }
  return "";
}

std::string check(const Spec& spec, const std::vector<Backend>& backends) {
  std::vector<Array> inputs = make_inputs(spec.inputs, spec.seed);
  auto program = [spec](const std::vector<Tensor>& in) { return trace(spec, in); };
  auto loss = [spec](const std::vector<Tensor>& in) { return trace(spec, in)[0]; };
  try {
    auto reference = jit(program, Backend::Interp);
    std::vector<Array> want = reference(inputs);
    double f0 = want[0].item();
    if (!std::isfinite(f0)) return "";  // a program whose value overflows says nothing about the backends
    // Every backend runs the simplified program: the traced one, unsimplified, on the
    // interpreter checks the simplifier too.
    ir::Program traced = ir::parse(reference.lower(inputs).traced_ir());
    std::vector<Array> unsimplified = interp::run(traced, inputs);
    if (std::string e = compare_all("result", " after simplification", unsimplified, want, 1e-12, 1e-14); !e.empty()) {
      return e;
    }
    // Central differences of the interpreter's loss, per input element and along one direction:
    // the derivative of s -> loss(inputs + s * direction) at s = 0.
    auto loss_at = [&](const std::vector<Array>& x) { return reference(x)[0].item(); };
    std::vector<std::vector<double>> fd = testing::central_differences(inputs, loss_at);
    std::vector<Array> direction = make_inputs(spec.inputs, spec.seed + 1);
    auto along = [&](const std::vector<Array>& s) {
      std::vector<Array> moved;
      for (size_t i = 0; i < inputs.size(); ++i) {
        std::vector<double> x = inputs[i].to_doubles(), t = direction[i].to_doubles();
        for (size_t j = 0; j < x.size(); ++j) x[j] += s[0].item() * t[j];
        moved.emplace_back(x, inputs[i].shape());
      }
      return loss_at(moved);
    };
    double fd_direction = testing::central_differences({Array(std::vector<double>{0}, {})}, along)[0][0];
    // The relative part is docs/reliability.md's for generated programs, looser than kGradRel.
    double grad_rel = 1e-5, grad_abs = testing::gradient_abs_tolerance(f0);

    for (Backend b : backends) {
      std::string at = std::string(" on ") + backend_name(b);
      if (std::string e = compare_all("result", at, jit(program, b)(inputs), want, 1e-9, 1e-12); !e.empty()) return e;
      auto [value, grads] = jit(value_and_grad(loss), b)(inputs);
      if (!close(value.item(), f0, 1e-9, 1e-12)) return "value_and_grad's value" + at + " differs from the primal";
      if (std::string e = compare_gradients("gradient of input", at, grads, fd, grad_rel, grad_abs); !e.empty()) {
        return e;
      }
      auto tangent = jit(
          [spec](const std::vector<Tensor>& in, const std::vector<Tensor>& t) {
            return jvp([&](const std::vector<Tensor>& x) { return trace(spec, x)[0]; }, std::make_tuple(in), t).second;
          },
          b)(inputs, direction);
      if (!close(tangent.item(), fd_direction, grad_rel, grad_abs))
        return "jvp" + at + " is " + std::to_string(tangent.item()) + ", finite differences " +
               std::to_string(fd_direction);
    }
  } catch (const std::exception& e) {
    return std::string("exception: ") + e.what();
  }
  return "";
}

Spec shrink(const Spec& spec, const std::vector<Backend>& backends, Check check) {
  Spec best = spec;
  for (size_t n = 1; n < spec.length; ++n) {
    Spec shorter = spec;
    shorter.length = n;
    if (!check(shorter, backends).empty()) {
      best = shorter;
      break;
    }
  }
  return best;
}

std::string gradient_ir(const Spec& spec) {
  auto loss = [spec](const std::vector<Tensor>& in) { return trace(spec, in)[0]; };
  return jit(value_and_grad(loss), Backend::Interp).lower(make_inputs(spec.inputs, spec.seed)).traced_ir();
}

std::string report(const Spec& spec, const std::string& failure) {
  std::string ir;
  try {
    ir = gradient_ir(spec);
  } catch (const std::exception& e) {
    ir = std::string("(no IR: ") + e.what() + ")";
  }
  return "difffuzz seed " + std::to_string(spec.seed) + ", " + std::to_string(spec.length) + " steps:\n" +
         spec.describe() + "failure: " + failure + "\nIR (value_and_grad; replay(ir, " + std::to_string(spec.seed) +
         ", backends)):\n" + ir;
}

std::string replay(const std::string& ir_text, uint64_t input_seed, const std::vector<Backend>& backends) {
  ir::Program p = ir::parse(ir_text);
  std::vector<Shape> shapes;
  for (const TensorType& t : p.body.param_types()) shapes.push_back(t.shape);
  std::vector<Array> inputs = make_inputs(shapes, input_seed);
  std::vector<Array> want = compiler::compile(p, Backend::Interp).executable->run(inputs);
  for (Backend b : backends) {
    std::string e = compare_all("result", std::string(" on ") + backend_name(b),
                                compiler::compile(p, b).executable->run(inputs), want, 1e-9, 1e-12);
    if (!e.empty()) return e;
  }
  return "";
}

}  // namespace fluxion::difffuzz
