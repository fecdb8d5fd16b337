// The self-test's checks (checks.h). Each computes the same program on the Vulkan backend and
// on the interpreter (double precision inside) and compares every output element within a
// tolerance suited to f32 on a GPU.
#include "checks.h"

#include <fluxion/fluxion.h>
#include <fluxion/nn/layers.h>
#include <fluxion/nn/losses.h>
#include <fluxion/nn/optim.h>
#include <fluxion/nn/recurrent.h>
#include <fluxion/nn/trainer.h>

#include <cmath>
#include <cstdint>
#include <sstream>
#include <utility>

namespace fluxion::selftest {
namespace {

using nn_model = nn::Model;

// Deterministic inputs in [lo, hi).
Array inputs(Shape shape, double lo, double hi, uint32_t seed, DType dtype = DType::f32) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<double> v(static_cast<size_t>(n));
  uint64_t s = 0x9E3779B97F4A7C15ull * (seed + 1);
  for (double& x : v) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    x = lo + (hi - lo) * static_cast<double>(s >> 11) * 0x1p-53;
  }
  if (dtype == DType::f64) return Array(v, std::move(shape));
  return Array(std::vector<float>(v.begin(), v.end()), std::move(shape));
}

// "" when every element of `got` is within atol + rtol * |want| of `want`.
std::string compare(const std::vector<Array>& got, const std::vector<Array>& want, double rtol, double atol) {
  if (got.size() != want.size())
    return "output count " + std::to_string(got.size()) + " vs " + std::to_string(want.size());
  for (size_t k = 0; k < got.size(); ++k) {
    if (got[k].shape() != want[k].shape()) return "output " + std::to_string(k) + ": shape differs";
    std::vector<double> g = got[k].to_doubles(), w = want[k].to_doubles();
    for (size_t i = 0; i < g.size(); ++i) {
      bool same_nan = std::isnan(g[i]) && std::isnan(w[i]);
      if (!same_nan && !(std::abs(g[i] - w[i]) <= atol + rtol * std::abs(w[i]))) {
        std::ostringstream m;
        m.precision(9);
        m << "output " << k << " element " << i << ": " << g[i] << ", interpreter " << w[i];
        return m.str();
      }
    }
  }
  return "";
}

// Runs `outputs(backend)` on Vulkan and on the interpreter and compares.
std::string against_interpreter(const std::function<std::vector<Array>(Backend)>& outputs, double rtol = 1e-4,
                                double atol = 1e-5) {
  return compare(outputs(Backend::Vulkan), outputs(Backend::Interp), rtol, atol);
}

std::string expect(bool ok, const std::string& what) { return ok ? "" : what; }

Check op_check(std::string name, std::string what, std::function<std::vector<Array>(Backend)> outputs,
               double rtol = 1e-4) {
  return {std::move(name), std::move(what), [outputs, rtol] { return against_interpreter(outputs, rtol); }};
}

std::vector<Array> elementwise(Backend b) {
  auto f = jit(
      [](Tensor x, Tensor y) {
        Tensor a = exp(x) * 0.1 + log1p(y * y) + tanh(x * y) + sigmoid(x) + sqrt(abs(y)) + softplus(x) + erf(y);
        return a + maximum(x, y) - minimum(x, y) + where(gt(x, y), x, y) + atan2(x, y) + pow(abs(x) + 1.0, y);
      },
      b);
  return {f(inputs({64, 33}, -3, 3, 1), inputs({1, 33}, -2, 2, 2))};
}

std::vector<Array> integers(Backend b) {
  auto f = jit([](Tensor x, Tensor y) { return std::make_pair(x / y, maximum(x, y) * 3 - x); }, b);
  Array x(std::vector<int32_t>{7, -7, 7, -7, 0, INT32_MIN, 5, 100}, {8});
  Array y(std::vector<int32_t>{2, 2, -2, -2, 3, -1, 0, 7}, {8});
  auto [q, m] = f(x, y);
  return {q, m};
}

std::vector<Array> reductions(Backend b) {
  auto f = jit(
      [](Tensor x) {
        return std::make_tuple(sum(x, {1}), max(x, {1}), min(x, {0}), mean(x), argmax(x, 1), sum(tanh(x), {0}));
      },
      b);
  auto [s, mx, mn, m, am, st] = f(inputs({16, 5000}, -1, 1, 3));
  return {s, mx, mn, m, am, st};
}

std::vector<Array> matmuls(Backend b) {
  auto f = jit([](Tensor a, Tensor c, Tensor d, Tensor e) { return std::make_pair(matmul(a, c), matmul(d, e)); }, b);
  auto [big, small] =
      f(inputs({128, 96}, -1, 1, 4), inputs({96, 80}, -1, 1, 5), inputs({3, 7}, -1, 1, 6), inputs({7, 5}, -1, 1, 7));
  return {big, small};
}

std::vector<Array> convolutions(Backend b) {
  auto f = jit(
      [](Tensor x, Tensor w, Tensor wide) {
        Tensor y = max_pool2d(relu(conv2d(x, w, {.padding = {1}})), {.window = {2, 2}});
        Tensor z = conv2d(y, wide, {.stride = {2, 2}, .padding = {1}});
        return std::make_pair(avg_pool2d(y, {.window = {3, 3}, .stride = {1, 1}, .padding = {1}}), z);
      },
      b);
  auto [p, z] =
      f(inputs({2, 3, 12, 12}, -1, 1, 8), inputs({16, 3, 3, 3}, -0.5, 0.5, 9), inputs({32, 16, 3, 3}, -0.2, 0.2, 10));
  return {p, z};
}

std::vector<Array> views(Backend b) {
  auto f = jit(
      [](Tensor x, Tensor idx) {
        Tensor t = transpose(x) * 2.0;
        Tensor s = slice(x, {1, 2}, {5, 9});
        Tensor c = concat({pad(s, {{1, 0}, {0, 0}}), s * 3.0}, 0);
        return std::make_tuple(t, c, take(x, idx, 1), reshape(x, {4, 3, 10}));
      },
      b);
  auto [t, c, g, r] = f(inputs({12, 10}, -1, 1, 11), Array(std::vector<int32_t>{9, 0, 3, 3}, {4}));
  return {t, c, g, r};
}

std::vector<Array> random_numbers(Backend b) {
  auto f = jit(
      [](Tensor x) {
        Tensor k = random::key(1234);
        return std::make_pair(random::uniform(k, {1000}) + x, random::normal(random::fold_in(k, 7), {257}));
      },
      b);
  auto [u, n] = f(Array::scalar(0.0f));
  return {u, n};
}

Tensor mlp_loss(Tensor w1, Tensor w2, Tensor x, Tensor y) {
  return nn::softmax_cross_entropy(matmul(tanh(matmul(x, w1)), w2), y);
}

std::vector<Array> mlp_gradient(Backend b) {
  auto f = jit(value_and_grad(mlp_loss, {0, 1}), b);
  auto [v, g] = f(inputs({20, 32}, -0.3, 0.3, 12), inputs({32, 10}, -0.3, 0.3, 13), inputs({16, 20}, -1, 1, 14),
                  Array(std::vector<int32_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1, 2, 3, 4, 5}, {16}));
  return {v, g[0], g[1]};
}

std::vector<Array> conv_gradient(Backend b) {
  auto f = jit(value_and_grad(
                   [](Tensor w, Tensor x) {
                     return sum(tanh(max_pool2d(conv2d(x, w, {.stride = {1, 1}, .padding = {1}}), {.window = {2, 2}})));
                   },
                   {0, 1}),
               b);
  auto [v, g] = f(inputs({4, 2, 3, 3}, -0.5, 0.5, 15), inputs({2, 2, 8, 8}, -1, 1, 16));
  return {v, g[0], g[1]};
}

std::vector<Array> forward_mode(Backend b) {
  auto f = jit([](Tensor w, Tensor x,
                  Tensor t) { return jvp([&](Tensor v) { return sum(tanh(matmul(x, v))); }, std::make_tuple(w), {t}); },
               b);
  auto [v, d] = f(inputs({6, 4}, -1, 1, 17), inputs({5, 6}, -1, 1, 18), inputs({6, 4}, -1, 1, 19));
  return {v, d};
}

std::vector<Array> fori(Backend b) {
  auto f = jit(
      [](Tensor w, Tensor x) {
        return fori_loop(
            0, 100, [&](Tensor, Tensor s) { return tanh(matmul(w, s)) + x; }, x);
      },
      b);
  return {f(inputs({8, 8}, -0.3, 0.3, 20), inputs({8, 1}, -1, 1, 21))};
}

std::vector<Array> while_with_data_dependent_end(Backend b) {
  auto f = jit(
      [](Tensor x) {
        auto [n, y] =
            while_loop([](const std::pair<Tensor, Tensor>& s) { return sum(s.second) < 1000.0; },
                       [](const std::pair<Tensor, Tensor>& s) { return std::make_pair(s.first + 1, s.second * 1.5); },
                       std::make_pair(scalar(0, DType::i32), x), 200);
        return std::make_pair(n, y);
      },
      b);
  auto [n, y] = f(inputs({10}, 0.5, 1.5, 22));
  return {n, y};
}

std::vector<Array> lstm_scan_gradient(Backend b) {
  nn::RecurrentOptions o{.input = 5, .hidden = 8, .layers = 1, .batch_first = true, .last_only = true};
  nn_model model = nn::LSTM(o);
  std::vector<Array> params = model.init(3);
  auto loss = [model](const std::vector<Tensor>& p, Tensor x) { return sum(tanh(model(p, x))); };
  auto f = jit(value_and_grad(loss, {0}), b);
  auto [v, g] = f(params, inputs({4, 12, 5}, -1, 1, 23));
  std::vector<Array> out{v};
  out.insert(out.end(), g.begin(), g.end());
  return out;
}

// Steps of nn::Trainer on the Vulkan backend agree with the interpreter's, and once warm a
// step makes one submission and no device allocation.
std::string training(const nn_model& model, Shape x_shape) {
  auto loss = [](const Tensor& out, const Tensor& y) { return nn::softmax_cross_entropy(out, y); };
  Array x = inputs(x_shape, 0, 1, 24);
  Array y(std::vector<int32_t>{0, 1, 2, 3, 4, 5, 6, 7}, {8});
  std::vector<double> losses[2];
  Backend backends[2] = {Backend::Vulkan, Backend::Interp};
  std::string steady;
  for (int k = 0; k < 2; ++k) {
    nn::Trainer trainer(model, loss, nn::adam({.lr = 1e-2}), backends[k]);
    nn::TrainState s = trainer.init(0);
    Array last;
    for (int i = 0; i < 6; ++i) {
      if (k == 0 && i == 3) reset_counters();
      last = trainer.step(s, x, y);
      if (k == 1 || i < 3) losses[k].push_back(last.item());
    }
    if (k == 0) {
      RuntimeCounters c = counters();
      if (c.submissions != 3 || c.device_allocations != 0) {
        steady = "3 warm steps made " + std::to_string(c.submissions) + " submissions and " +
                 std::to_string(c.device_allocations) + " device allocations (expected 3 and 0)";
      }
    }
  }
  for (size_t i = 0; i < losses[0].size(); ++i) {
    if (std::abs(losses[0][i] - losses[1][i]) > 1e-4 * (1 + std::abs(losses[1][i]))) {
      return "step " + std::to_string(i) + " loss " + std::to_string(losses[0][i]) + ", interpreter " +
             std::to_string(losses[1][i]);
    }
  }
  return steady;
}

std::string float64_support() {
  VulkanDeviceInfo d = vulkan_device();
  auto f = jit([](Tensor x) { return exp(x) + log(x); }, Backend::Vulkan);
  Array x = inputs({100}, 0.5, 2, 25, DType::f64);
  if (!d.capabilities.float64) {
    try {
      f(x);
      return "an f64 program ran on a device without shaderFloat64";
    } catch (const Error& e) {
      return expect(std::string(e.what()).find("shaderFloat64") != std::string::npos,
                    std::string("unclear refusal: ") + e.what());
    }
  }
  auto g = jit([](Tensor x) { return exp(x) + log(x); }, Backend::Interp);
  return compare({f(x)}, {g(x)}, 1e-13, 1e-14);
}

// An f16 product allowed to sum in f16: its tiles sum in f16 where the device has shaderFloat16
// (and say so), in f32 where not or on cooperative matrices; either way within the f16 sums'
// bound of the exact result.
std::string f16_sums() {
  const int64_t m = 64, k = 512, n = 64;
  auto half = jit([](Tensor x) { return cast(x, DType::f16); }, Backend::Interp);
  Array a = half(inputs({m, k}, -1, 1, 30)), b = half(inputs({k, n}, -1, 1, 31));
  auto f = jit(
      [](Tensor x, Tensor y) {
        F16Sums allow;
        return matmul(x, y);
      },
      Backend::Vulkan);
  // Cooperative matrices, where on, take the product (summing in f32 on the matrix units).
  VulkanCapabilities caps = vulkan_device().capabilities;
  bool in_f16 = caps.float16 && !caps.cooperative_matrix;
  std::string listing = f.lower(a, b).kernels();
  if ((listing.find("f16 sums") != std::string::npos) != in_f16) {
    return std::string(in_f16 ? "no product sums in f16 where one should" : "a product sums in f16 where none should") +
           ":\n" + listing;
  }
  // The exact sums, and the sums of the terms' magnitudes, in f64 on the interpreter.
  auto exact = jit(
      [](Tensor x, Tensor y) {
        Tensor x64 = cast(x, DType::f64), y64 = cast(y, DType::f64);
        return std::make_pair(matmul(x64, y64), matmul(abs(x64), abs(y64)));
      },
      Backend::Interp);
  auto [want, magnitude] = exact(a, b);
  std::vector<double> got = f(a, b).to_doubles(), w = want.to_doubles(), mag = magnitude.to_doubles();
  for (size_t i = 0; i < got.size(); ++i) {
    double bound = static_cast<double>(k) * 0x1p-11 * mag[i] + 0x1p-11 * std::abs(w[i]);
    if (std::abs(got[i] - w[i]) > bound) {
      return "element " + std::to_string(i) + " is " + std::to_string(got[i]) + ", exactly " + std::to_string(w[i]) +
             " (bound " + std::to_string(bound) + ")";
    }
  }
  return "";
}

std::string timestamps() {
  VulkanDeviceInfo d = vulkan_device();
  set_profiling(true);
  reset_kernel_times();
  auto f = jit([](Tensor a, Tensor b) { return sum(tanh(matmul(a, b))); }, Backend::Vulkan);
  Array a = inputs({256, 256}, -1, 1, 26), b = inputs({256, 256}, -1, 1, 27);
  f(a, b);
  f(a, b);
  std::vector<KernelTime> times = kernel_times();
  std::string table = kernel_time_table();
  set_profiling(false);
  reset_kernel_times();
  if (!d.capabilities.timestamps) {
    return expect(times.empty() && table.find("not timed") != std::string::npos,
                  "no timestamps, but the profiler did not say so");
  }
  double total = 0;
  for (const KernelTime& t : times) total += t.total_us;
  return expect(!times.empty() && total > 0 && total < 60e6, "kernel times missing or implausible: " + table);
}

std::string one_submission_per_call() {
  auto f = jit(
      [](Tensor w, Tensor x) {
        return fori_loop(
            0, 50, [&](Tensor, Tensor s) { return tanh(matmul(w, s)); }, x);
      },
      Backend::Vulkan);
  Array w = inputs({8, 8}, -0.3, 0.3, 28), x = inputs({8, 1}, -1, 1, 29);
  f(w, x);
  reset_counters();
  f(w, x);
  return expect(counters().submissions == 1,
                "a call of a 50-step loop made " + std::to_string(counters().submissions) + " submissions");
}

}  // namespace

std::vector<Check> checks() {
  std::vector<Check> c;
  c.push_back(op_check("ops.elementwise", "exp, log1p, tanh, sigmoid, erf, pow, max/min, where with broadcasting",
                       elementwise));
  c.push_back(op_check("ops.integers", "i32 division (by zero, INT_MIN / -1) and arithmetic", integers, 0));
  c.push_back(op_check("ops.reductions", "sum, max, min, mean, argmax over 5000-long rows and columns", reductions));
  c.push_back(op_check("ops.matmul", "tiled 128x96x80 and small 3x7x5 products", matmuls));
  c.push_back(op_check("ops.conv_pool", "conv2d (direct and tiled, strided), max and average pooling", convolutions));
  c.push_back(op_check("ops.views", "transpose, slice, pad, concat, take, reshape", views));
  c.push_back(
      op_check("ops.random", "uniform and normal numbers (Philox streams equal to the CPU's)", random_numbers, 1e-5));
  c.push_back({"ops.float64", "f64 exp and log to 1e-13, or a clear refusal without shaderFloat64", float64_support});
  c.push_back(
      {"ops.f16_sums", "an f16 product allowed to sum in f16: in f16 with shaderFloat16, within its bound", f16_sums});
  c.push_back(op_check("autodiff.mlp", "value and gradient of an MLP's cross-entropy", mlp_gradient));
  c.push_back(op_check("autodiff.conv", "gradients through conv2d, max pooling and tanh", conv_gradient, 1e-3));
  c.push_back(op_check("autodiff.jvp", "forward mode through a matmul", forward_mode));
  c.push_back(op_check("loops.fori", "a 100-step loop with a matmul inside", fori, 1e-3));
  c.push_back(op_check("loops.while", "a while loop with a data-dependent end", while_with_data_dependent_end));
  c.push_back(op_check("loops.lstm_gradient", "an LSTM's scan and its gradient", lstm_scan_gradient, 1e-3));
  c.push_back({"loops.one_submission", "a 50-step loop is one submission per call", one_submission_per_call});
  c.push_back({"models.mlp_training", "MLP training steps: losses, one submission, no allocation once warm", [] {
                 return training(nn::Sequential{nn::Flatten(), nn::Dense(784, 32), nn::Tanh(), nn::Dense(32, 10)},
                                 {8, 1, 28, 28});
               }});
  c.push_back({"models.lstm_training", "LSTM training steps: losses, one submission, no allocation once warm", [] {
                 nn::RecurrentOptions o{.input = 28, .hidden = 16, .layers = 1, .batch_first = true, .last_only = true};
                 return training(nn::Sequential{nn::Reshape({28, 28}), nn::LSTM(o), nn::Dense(16, 10)}, {8, 1, 28, 28});
               }});
  c.push_back({"profiling.timestamps", "kernel timestamps read back, or the profiler says there are none", timestamps});
  return c;
}

}  // namespace fluxion::selftest
