#include "difffuzz/check.h"

#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "common/finite_differences.h"
#include "eval/interpreter.h"
#include "ir/ir.h"
#include "jit/pipeline.h"

namespace fluxion::difffuzz {

namespace {

// The relative part of the gradient tolerance for generated programs (docs/reliability.md):
// looser than testing::kGradRel, for chains of a dozen ops whose rounding errors compound.
constexpr double kFuzzGradRel = 1e-5;

bool close(double got, double want, double rel, double abs) {
  if (std::isnan(want)) return std::isnan(got);
  return std::abs(got - want) <= rel * std::abs(want) + abs;
}

// "" when `got` is close to `want` in every element but those `excused` (when given) holds for.
std::string compare(const std::string& what, const std::vector<double>& got, const std::vector<double>& want,
                    double rel, double abs, const std::function<bool(size_t)>& excused = {}) {
  if (got.size() != want.size())
    return what + ": " + std::to_string(got.size()) + " values, expected " + std::to_string(want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (!close(got[i], want[i], rel, abs) && !(excused && excused(i))) {
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
    std::string name = label(what, r, where);
    if (got[r].dtype() != want[r].dtype())
      return name + ": " + dtype_name(got[r].dtype()) + ", expected " + dtype_name(want[r].dtype());
    // i32 and bool values must be equal; `rel` would let a large integer be off by a few.
    bool exact = !is_float(want[r].dtype());
    std::string e = compare(name, got[r].to_doubles(), want[r].to_doubles(), exact ? 0 : rel, exact ? 0 : abs);
    if (!e.empty()) return e;
  }
  return "";
}

using Loss = std::function<double(const std::vector<Array>&)>;

// The central differences of `f` with respect to the float inputs, which come first: one list
// of values per float input.
std::vector<std::vector<double>> float_differences(const std::vector<Array>& inputs, size_t floats, const Loss& f) {
  std::vector<std::vector<double>> fd = testing::central_differences(inputs, f);
  fd.resize(floats);
  return fd;
}

// Whether `f` (whose value is `value`) is smooth around element j of input i, where its central
// difference is `fd`: the difference over a tenth of the step agrees with it. A comparison, cast,
// argmax, cond or loop exit that flips within the step makes f jump there, and a difference
// across a jump says nothing about the derivative; where f is smooth, the two differences agree
// to O(h^2), far inside the gradient tolerance.
bool smooth_at(const std::vector<Array>& x, size_t i, size_t j, double fd, double value, const Loss& f) {
  double v = x[i].to_doubles()[j], h = testing::fd_step(v) / 10;
  double fine = testing::difference(f(testing::with_element(x, i, j, v + h)), f(testing::with_element(x, i, j, v - h)),
                                    (v + h) - (v - h));
  return close(fine, fd, kFuzzGradRel, testing::gradient_abs_tolerance(value));
}

// The same as compare_all for gradients against finite differences, one list of values per
// input; an element where the loss is not smooth (smooth_at) is not compared.
std::string compare_gradients(const std::string& what, const std::string& where, const std::vector<Array>& grads,
                              const std::vector<std::vector<double>>& fd, double abs,
                              const std::function<bool(size_t, size_t)>& smooth) {
  if (grads.size() != fd.size()) {
    return what + where + ": " + std::to_string(grads.size()) + " gradients, expected " + std::to_string(fd.size());
  }
  for (size_t i = 0; i < fd.size(); ++i) {
    std::string e = compare(label(what, i, where) + " vs finite differences", grads[i].to_doubles(), fd[i],
                            kFuzzGradRel, abs, [&](size_t j) { return !smooth(i, j); });
    if (!e.empty()) return e;
  }
  return "";
}

// a's elements followed by b's.
template <class T>
std::vector<T> joined(std::vector<T> a, const std::vector<T>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// v's first n elements and the rest: a program's float inputs and its others.
template <class T>
std::pair<std::vector<T>, std::vector<T>> split_at(const std::vector<T>& v, size_t n) {
  return {std::vector<T>(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(n)),
          std::vector<T>(v.begin() + static_cast<std::ptrdiff_t>(n), v.end())};
}

// "" when `c`, saved to a file and loaded back (compiled programs through fluxion::load, the
// interpreter's, which hold IR alone, through load_or_compile), gives bitwise its results on
// `inputs`; else what differs.
std::string check_round_trip(const Compiled& c, const std::vector<Array>& inputs, const std::string& what) {
  static std::atomic<int> files{0};
  std::filesystem::path path =
      std::filesystem::temp_directory_path() /
      ("fluxion_difffuzz_" + std::to_string(::getpid()) + "_" + std::to_string(files++) + ".fxa");
  std::string at = what + " on " + backend_name(c.backend()) + " saved and loaded";
  struct Remove {
    std::filesystem::path p;
    ~Remove() { std::filesystem::remove(p); }
  } remove{path};
  c.save(path.string());
  Compiled loaded = c.backend() == Backend::Interp ? load_or_compile(path.string()) : load(path.string());
  std::vector<Array> got = loaded.run(inputs), want = c.run(inputs);
  if (got.size() != want.size())
    return at + ": " + std::to_string(got.size()) + " results, expected " + std::to_string(want.size());
  for (size_t k = 0; k < want.size(); ++k) {
    int64_t bytes = want[k].size() * dtype_size(want[k].dtype());
    if (got[k].type() != want[k].type() ||
        std::memcmp(got[k].data(), want[k].data(), static_cast<size_t>(bytes)) != 0) {
      return label(at + ": result", k, " is not bitwise the compiled program's");
    }
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
  return array_of(examples[0].dtype(), v, batched);
}

// spec's loss as a function of its float inputs and its other inputs: value_and_grad and jvp
// differentiate it with respect to the first.
auto split_loss(const Spec& spec) {
  return [spec](const std::vector<Tensor>& f, const std::vector<Tensor>& o) { return trace(spec, joined(f, o))[0]; };
}

}  // namespace

Batch batch_of(const Spec& spec) {
  Batch b;
  b.input = spec.seed % spec.inputs.size();
  b.axis = static_cast<int64_t>((spec.seed / 7) % (spec.inputs[b.input].shape.size() + 1));
  b.inputs = make_inputs(spec.inputs, spec.seed);
  for (int64_t e = 0; e < Batch::kExamples; ++e) {
    b.examples.push_back(make_inputs({spec.inputs[b.input]}, spec.seed + 100 + static_cast<uint64_t>(e))[0]);
  }
  b.batched = b.inputs;
  b.batched[b.input] = stack_along(b.examples, b.axis);
  b.axes.assign(b.inputs.size(), std::nullopt);
  b.axes[b.input] = static_cast<int>(b.axis);
  return b;
}

std::string check_vmap(const Spec& spec, const std::vector<Backend>& backends) {
  constexpr int64_t kExamples = Batch::kExamples;
  size_t floats = spec.float_inputs();
  auto [which, axis, inputs, examples, batched, axes] = batch_of(spec);
  auto program = [spec, axes](const std::vector<Tensor>& in) {
    return vmap([spec](const std::vector<Tensor>& x) { return trace(spec, x); }, {BatchAxes(axes)})(in);
  };
  auto total = [program](const std::vector<Tensor>& in) { return sum(program(in)[0]); };
  // Gradients with respect to the float inputs only.
  auto loss = [total](const std::vector<Tensor>& f, const std::vector<Tensor>& o) { return total(joined(f, o)); };
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
    auto reference_loss = jit(total, Backend::Interp);
    Loss loss_at = [&](const std::vector<Array>& x) { return reference_loss(x).item(); };
    double f0 = loss_at(batched);
    std::vector<std::vector<double>> fd = float_differences(batched, floats, loss_at);
    auto smooth = [&](size_t i, size_t j) { return smooth_at(batched, i, j, fd[i][j], f0, loss_at); };
    auto [batched_floats, batched_others] = split_at(batched, floats);
    for (Backend b : backends) {
      std::string at = std::string(" on ") + backend_name(b);
      std::string err = compare_all("vmapped result", at, jit(program, b)(batched), want, 1e-9, 1e-12);
      if (err.empty()) {
        err = compare_gradients("vmapped gradient of input", at,
                                jit(value_and_grad(loss), b)(batched_floats, batched_others).second, fd,
                                testing::gradient_abs_tolerance(f0), smooth);
      }
      if (!err.empty()) return err;
    }
  } catch (const std::exception& e) {
    return std::string("exception under vmap: ") + e.what();
  }
  return "";
}

std::string check(const Spec& spec, const std::vector<Backend>& backends) {
  size_t floats = spec.float_inputs();
  std::vector<Array> inputs = make_inputs(spec.inputs, spec.seed);
  auto [float_inputs, other_inputs] = split_at(inputs, floats);
  auto program = [spec](const std::vector<Tensor>& in) { return trace(spec, in); };
  auto loss = split_loss(spec);
  auto tangent_of = [loss](const std::vector<Tensor>& f, const std::vector<Tensor>& o, const std::vector<Tensor>& t) {
    return jvp(loss, std::make_tuple(f, o), t).second;
  };
  try {
    auto reference = jit(program, Backend::Interp);
    std::vector<Array> want = reference(inputs);
    double f0 = want[0].item();
    if (!std::isfinite(f0)) return "";  // a program whose value overflows says nothing about the backends
    // Every backend runs the simplified program: the traced one, unsimplified, on the
    // interpreter checks the simplifier too.
    ir::Program traced = ir::parse(reference.lower(inputs).traced_ir());
    std::vector<Array> unsimplified = eval::run(traced, inputs);
    if (std::string e = compare_all("result", " after simplification", unsimplified, want, 1e-12, 1e-14); !e.empty()) {
      return e;
    }
    // Central differences of the interpreter's loss, per float input element and along one
    // direction: the derivative of s -> loss(inputs + s * direction) at s = 0.
    Loss loss_at = [&](const std::vector<Array>& x) { return reference(x)[0].item(); };
    std::vector<std::vector<double>> fd = float_differences(inputs, floats, loss_at);
    auto smooth = [&](size_t i, size_t j) { return smooth_at(inputs, i, j, fd[i][j], f0, loss_at); };
    std::vector<Array> direction = make_inputs(split_at(spec.inputs, floats).first, spec.seed + 1);
    Loss along = [&](const std::vector<Array>& s) {
      std::vector<Array> moved = inputs;
      for (size_t i = 0; i < floats; ++i) {
        std::vector<double> x = inputs[i].to_doubles(), t = direction[i].to_doubles();
        for (size_t j = 0; j < x.size(); ++j) x[j] += s[0].item() * t[j];
        moved[i] = Array(x, inputs[i].shape());
      }
      return loss_at(moved);
    };
    std::vector<Array> origin = {Array(std::vector<double>{0}, {})};
    double fd_direction = testing::central_differences(origin, along)[0][0];
    double grad_abs = testing::gradient_abs_tolerance(f0);

    for (Backend b : backends) {
      std::string at = std::string(" on ") + backend_name(b);
      if (std::string e = compare_all("result", at, jit(program, b)(inputs), want, 1e-9, 1e-12); !e.empty()) return e;
      if (std::string e = check_round_trip(jit(program, b).lower(inputs), inputs, "the program"); !e.empty()) return e;
      auto gradient = jit(value_and_grad(loss), b);
      std::vector<Array> gradient_inputs = joined(float_inputs, other_inputs);
      if (std::string e = check_round_trip(gradient.lower(float_inputs, other_inputs), gradient_inputs, "its gradient");
          !e.empty()) {
        return e;
      }
      auto [value, grads] = gradient(float_inputs, other_inputs);
      if (!close(value.item(), f0, 1e-9, 1e-12)) return "value_and_grad's value" + at + " differs from the primal";
      if (std::string e = compare_gradients("gradient of input", at, grads, fd, grad_abs, smooth); !e.empty()) {
        return e;
      }
      double tangent = jit(tangent_of, b)(float_inputs, other_inputs, direction).item();
      if (!close(tangent, fd_direction, kFuzzGradRel, grad_abs) && smooth_at(origin, 0, 0, fd_direction, f0, along))
        return "jvp" + at + " is " + std::to_string(tangent) + ", finite differences " + std::to_string(fd_direction);
    }
  } catch (const std::exception& e) {
    return std::string("exception: ") + e.what();
  }
  return "";
}

std::string failure_kind(const std::string& failure) {
  // An exception's message names the op after two more colons ("exception: fluxion: op 'x': ...").
  int colons = failure.rfind("exception", 0) == 0 ? 3 : 1;
  size_t end = 0;
  for (int c = 0; c < colons && end != std::string::npos; ++c) end = failure.find(':', c == 0 ? 0 : end + 1);
  end = std::min(end, failure.find(" is "));  // "jvp on cpu is 0.1, finite differences 0.2"
  std::string kind;
  for (char ch : failure.substr(0, end))
    if (!std::isdigit(static_cast<unsigned char>(ch))) kind += ch;
  return kind;
}

Spec shrink(const Spec& spec, const std::vector<Backend>& backends, const Check& check) {
  std::string failure = check(spec, backends);
  if (failure.empty()) return spec;
  std::string kind = failure_kind(failure);
  auto fails_alike = [&](const Spec& s) {
    std::string f = check(s, backends);
    return !f.empty() && failure_kind(f) == kind;
  };
  Spec best = spec;
  for (size_t n = 1; n < spec.length; ++n) {
    Spec shorter = spec;
    shorter.length = n;
    if (fails_alike(shorter)) {
      best = shorter;
      break;
    }
  }
  // Greedy: the first simplification that still fails is kept, and the search starts again
  // from it; each one lowers a measure (simplifications()), so this ends.
  for (bool changed = true; changed;) {
    changed = false;
    for (Spec& smaller : simplifications(best)) {
      if (!fails_alike(smaller)) continue;
      best = std::move(smaller);
      changed = true;
      break;
    }
  }
  return best;
}

std::string gradient_ir(const Spec& spec) {
  auto [floats, others] = split_at(make_inputs(spec.inputs, spec.seed), spec.float_inputs());
  return jit(value_and_grad(split_loss(spec)), Backend::Interp).lower(floats, others).traced_ir();
}

std::string report(const Spec& spec, const std::string& failure) {
  std::string ir;
  try {
    ir = gradient_ir(spec);
  } catch (const std::exception& e) {
    ir = std::string("(no IR: ") + e.what() + ")";
  }
  return "difffuzz seed " + std::to_string(spec.seed) + ", " + std::to_string(spec.live_steps()) + " steps:\n" +
         spec.describe() + "failure: " + failure + "\nIR (value_and_grad; replay(ir, " + std::to_string(spec.seed) +
         ", backends)):\n" + ir;
}

std::string replay(const std::string& ir_text, uint64_t input_seed, const std::vector<Backend>& backends) {
  ir::Program p = ir::parse(ir_text);
  std::vector<Array> inputs = make_inputs(p.body.param_types(), input_seed);
  std::vector<Array> want = driver::compile(p, Backend::Interp).executable->run(inputs);
  for (Backend b : backends) {
    std::string e = compare_all("result", std::string(" on ") + backend_name(b),
                                driver::compile(p, b).executable->run(inputs), want, 1e-9, 1e-12);
    if (!e.empty()) return e;
  }
  return "";
}

}  // namespace fluxion::difffuzz
