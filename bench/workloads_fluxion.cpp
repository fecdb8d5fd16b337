// Fluxion: each workload written once in the DSL and compiled with fx::jit for the backend named
// on the command line; gradients through fx::value_and_grad, loops through fx::scan. A cell's
// first call traces and compiles (timed as compile_ms); a fresh jit object of the same program
// then times a compile-cache hit (cache_hit_us, on gradient rows).
#include <fluxion/fluxion.h>
#include <fluxion/runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <tuple>
#include <type_traits>

#include "common/stacked_lstm.h"
#include "workloads.h"

namespace bench {
namespace {

namespace fx = fluxion;
using fx::Array;
using fx::Tensor;

Array to_fx(const Buf& b) { return Array(b.v, b.shape); }
Array to_fx(const Buf& b, std::vector<int64_t> shape) { return Array(b.v, std::move(shape)); }

double loss_of(const Array& out) { return out.item(); }
template <class G>
double loss_of(const std::pair<Array, G>& out) {
  return out.first.item();
}

double grad_norm_of(const std::pair<Array, std::vector<Array>>& out) {
  double s = 0;
  for (const Array& g : out.second)
    for (double v : g.to_doubles()) s += v * v;
  return std::sqrt(s);
}

enum class Kind { Primal, Grad, Step };

// a, moved into the Vulkan backend's device memory: the result of a program stays there.
void place_on_device(Array& a) {
  static auto place = fx::jit([](Tensor x) { return x * 1.0f; }, fx::Backend::Vulkan);
  a = place(a);
}
void place_on_device(std::vector<Array>& v) {
  for (Array& a : v) place_on_device(a);
}

// A cell for the jit object that `make` returns, called on `args`: a loss (Primal), a loss and
// its gradients (Grad), or a training step whose first argument is the parameters and whose
// result is the loss and the updated parameters, fed back after every call (Step). Non-primal
// cells time a cache hit with `cache_samples` fresh jit objects. Every cell also runs the
// program through Compiled::run_into with outputs allocated once; a step's updated parameters
// are written in place of its inputs there.
template <class Make, class... A>
Case fx_case(Make make, Kind kind, int cache_samples, bool device_inputs, A... args) {
  using J = decltype(make());
  using Out = decltype(std::declval<const J&>()(args...));
  struct St {
    J jit;
    std::tuple<A...> args;
    Out out;
  };
  if (device_inputs) (place_on_device(args), ...);
  auto st = std::make_shared<St>(St{make(), {std::move(args)...}, {}});
  Case c;

  fx::reset_counters();
  double t0 = now_us();
  st->out = std::apply(st->jit, st->args);  // traces and compiles; Error when the backend cannot
  c.compile_ms = (now_us() - t0) / 1000;
  c.first_call_done = true;
  fx::RuntimeCounters k = fx::counters();
  if (k.disk_cache_hits > 0 || (k.cache_hits > 0 && k.compiles == 0)) c.compile_cached = true;
  else if (k.compiles > 0) c.compile_cached = false;

  std::vector<double> hits;
  fx::reset_counters();
  for (int i = 0; kind != Kind::Primal && i < cache_samples; ++i) {
    J fresh = make();
    double s = now_us();
    std::apply(fresh, st->args);
    hits.push_back(now_us() - s);
  }
  if (!hits.empty()) {  // recorded only when the counters confirm that every call hit the cache
    k = fx::counters();
    if (k.compiles == 0 && k.cache_hits >= hits.size()) {
      std::sort(hits.begin(), hits.end());
      c.cache_hit_us = hits[hits.size() / 2];
    } else {
      std::fprintf(stderr, "[fresh jit objects: %llu compiles, %llu cache hits; no cache_hit_us] ",
                   static_cast<unsigned long long>(k.compiles), static_cast<unsigned long long>(k.cache_hits));
    }
  }
  auto feedback = [kind](St& t) {
    if constexpr (requires { std::get<0>(t.args) = t.out.second; }) {
      if (kind == Kind::Step) std::get<0>(t.args) = t.out.second;
    }
  };
  feedback(*st);
  c.run = [st, feedback] {
    st->out = std::apply(st->jit, st->args);
    feedback(*st);
  };
  c.value = [st] { return loss_of(st->out); };
  if constexpr (!std::is_same_v<Out, Array>) {
    if (kind == Kind::Grad) c.grad_norm = [st] { return grad_norm_of(st->out); };
  }

  struct Pre {
    fx::Compiled program;
    std::vector<Array> in, out;
  };
  auto pre = std::make_shared<Pre>();
  pre->program = std::apply([&](const auto&... a) { return st->jit.lower(a...); }, st->args);
  std::apply([&](const auto&... a) { (fx::tree::flatten<Array>(a, pre->in), ...); }, st->args);
  for (Array& a : pre->in) a = a.clone();
  for (const fx::TensorType& t : pre->program.output_types()) pre->out.emplace_back(t.dtype, t.shape);
  if (kind == Kind::Step) {  // outputs [loss, params...], inputs [params..., data]
    for (size_t i = 1; i < pre->out.size(); ++i) pre->out[i] = pre->in[i - 1];
  }
  c.run_preallocated = [pre] { pre->program.run_into(pre->in, pre->out); };

  c.reset_counters = [] { fx::reset_counters(); };
  c.roundtrips = [] { return static_cast<double>(fx::counters().native_calls); };
  c.kernel_launches = [] { return static_cast<double>(fx::counters().kernel_launches); };
  return c;
}

struct Builder {
  fx::Backend backend;
  std::string system;
  int cache_samples;
  bool device_inputs;
  std::vector<CaseSpec> out;

  // Adds the primal (jit(f)) and the gradient (jit(value_and_grad(f, wrt))) cells of f.
  template <class F, class... MakeArgs>
  void both(const char* w, F f, std::vector<int> wrt, MakeArgs... make_args) {
    fx::Backend b = backend;
    int samples = cache_samples;
    bool device = device_inputs;
    out.push_back({w, system, "primal",
                   [=] { return fx_case([=] { return fx::jit(f, b); }, Kind::Primal, 0, device, make_args()...); }});
    out.push_back({w, system, "grad", [=] {
                     return fx_case([=] { return fx::jit(fx::value_and_grad(f, wrt), b); }, Kind::Grad, samples, device,
                                    make_args()...);
                   }});
  }
};

// ---- The programs.

Tensor lenet(const std::vector<Tensor>& p, const Tensor& x) {
  Tensor h = fx::relu(fx::conv2d(x, p[0]) + fx::reshape(p[1], {1, 6, 1, 1}));
  h = fx::max_pool2d(h, {.window = {2, 2}});
  h = fx::relu(fx::conv2d(h, p[2]) + fx::reshape(p[3], {1, 16, 1, 1}));
  h = fx::max_pool2d(h, {.window = {2, 2}});
  h = fx::flatten(h, 1);  // [128, 256], as x.flatten(1) in PyTorch
  h = fx::relu(fx::matmul(h, fx::transpose(p[4])) + p[5]);
  h = fx::relu(fx::matmul(h, fx::transpose(p[6])) + p[7]);
  Tensor y = fx::matmul(h, fx::transpose(p[8])) + p[9];
  return fx::sum(y * y);
}

void w6(Builder& bld, const Inputs& in) {
  const Lstm& r = in.w6;
  auto params = [&r] {
    std::vector<Array> p;
    for (int k = 0; k < 2; ++k) {
      p.push_back(to_fx(r.w_ih[k]));
      p.push_back(to_fx(r.w_hh[k]));
      p.push_back(to_fx(r.b_ih[k], {4 * Lstm::kHidden, 1}));
      p.push_back(to_fx(r.b_hh[k], {4 * Lstm::kHidden, 1}));
    }
    return p;
  };
  auto xs = [&r] {  // [steps, batch, input] -> [steps, input, batch]
    const int64_t T = Lstm::kSteps, B = Lstm::kBatch, I = Lstm::kInput;
    std::vector<float> t(r.xs.v.size());
    for (int64_t s = 0; s < T; ++s)
      for (int64_t b = 0; b < B; ++b)
        for (int64_t i = 0; i < I; ++i)
          t[static_cast<size_t>((s * I + i) * B + b)] = r.xs.v[static_cast<size_t>((s * B + b) * I + i)];
    return Array(t, {T, I, B});
  };
  float lr = r.lr;
  fx::Backend b = bld.backend;
  int samples = bld.cache_samples;
  bool device = bld.device_inputs;
  bld.out.push_back({"W6", bld.system, "primal", [=] {
                       return fx_case([=] { return fx::jit(samples::stacked_lstm_loss, b); }, Kind::Primal, 0, device,
                                      params(), xs());
                     }});
  // The training step: parameters in, loss and updated parameters out.
  auto step = [lr](const std::vector<Tensor>& p, const Tensor& x) { return samples::stacked_lstm_step(p, x, lr); };
  bld.out.push_back({"W6", bld.system, "step", [=] {
                       return fx_case([=] { return fx::jit(step, b); }, Kind::Step, samples, device, params(), xs());
                     }});
}

fx::Backend parse_backend(const std::string& name) {
  if (name == "cpu") return fx::Backend::Cpu;
  if (name == "interp") return fx::Backend::Interp;
  if (name == "vulkan") return fx::Backend::Vulkan;
  throw fx::Error("unknown backend '" + name + "' (expected cpu, interp or vulkan)");
}

}  // namespace

void fluxion_set_threads(int n) { fx::set_num_threads(n); }

std::vector<CaseSpec> fluxion_cases(const Inputs& in, const std::string& backend, int cache_samples,
                                    bool device_inputs) {
  Builder bld{parse_backend(backend), "fluxion-" + backend, cache_samples, device_inputs, {}};
  const Buf& x = in.w1.x;
  bld.both(
      "W1", [](Tensor x) { return fx::sum(x * x); }, {0}, [&x] { return to_fx(x); });
  bld.both(
      "W2", [](Tensor x) { return fx::sum(fx::atan2(x, 2.0)); }, {0}, [&x] { return to_fx(x); });

  const Mlp& m = in.w3;
  bld.both(
      "W3",
      [](Tensor W1, Tensor b1, Tensor W2, Tensor b2, Tensor x) {
        Tensor h = fx::tanh(fx::matmul(W1, x) + b1);
        Tensor y = fx::matmul(W2, h) + b2;
        return fx::sum(y * y);
      },
      {0, 1, 2, 3}, [&m] { return to_fx(m.W1); }, [&m] { return to_fx(m.b1); }, [&m] { return to_fx(m.W2); },
      [&m] { return to_fx(m.b2); }, [&m] { return to_fx(m.x); });

  const LeNet& l = in.w4;
  bld.both(
      "W4", lenet, {0},
      [&l] {
        std::vector<Array> p;
        for (const Buf* b : {&l.conv1_w, &l.conv1_b, &l.conv2_w, &l.conv2_b, &l.fc1_w, &l.fc1_b, &l.fc2_w, &l.fc2_b,
                             &l.fc3_w, &l.fc3_b})
          p.push_back(to_fx(*b));
        return p;
      },
      [&l] { return to_fx(l.x); });

  const ExpLayer& e = in.w5;
  bld.both(
      "W5", [](Tensor W, Tensor b, Tensor x) { return fx::sum(fx::exp(fx::matmul(W, x) + b)); }, {0, 1},
      [&e] { return to_fx(e.W); }, [&e] { return to_fx(e.b); }, [&e] { return to_fx(e.x); });

  w6(bld, in);

  const SmallLoop& s = in.w7;
  float s0 = s.s0;
  bld.both(
      "W7",
      [s0](Tensor w1, Tensor w2, Tensor noise) {
        Tensor k1 = fx::softplus(w1), k2 = fx::softplus(w2);
        return fx::scan(
                   [&](const Tensor& st, const Tensor& n) {
                     return std::make_pair(fx::sigmoid(fx::dot(k2, fx::sigmoid(st * k1))) + n, std::tuple<>{});
                   },
                   fx::scalar(s0), noise)
            .first;  // the final s (the steps emit nothing)
      },
      {0, 1}, [&s] { return to_fx(s.w1); }, [&s] { return to_fx(s.w2); }, [&s] { return to_fx(s.noise); });
  return bld.out;
}

}  // namespace bench
