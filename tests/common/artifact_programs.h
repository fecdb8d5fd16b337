// What the artifact tests share: reading files back, bitwise comparison, and a program that
// exercises every kind of run-time support (threads, random numbers, a data-dependent loop,
// integer results).
#pragma once

#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "common/test_util.h"

namespace fluxion::testing {

namespace fx = fluxion;

inline std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

inline void write(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

inline bool bitwise_equal(const fx::Array& a, const fx::Array& b) {
  return a.type() == b.type() &&
         std::memcmp(a.data(), b.data(), static_cast<size_t>(a.size() * fx::dtype_size(a.dtype()))) == 0;
}

// A training step of a two-layer MLP (the gradient, then SGD), with a while loop whose trip count
// depends on the data, random numbers and an integer result: every helper family the CPU code
// calls (threads, Philox, math) and every kind of result slot.
inline fx::Compiled training_step(fx::Backend backend) {
  auto step = [](fx::Tensor w1, fx::Tensor b1, fx::Tensor w2, fx::Tensor x, fx::Tensor y) {
    auto loss = [&](fx::Tensor a, fx::Tensor b, fx::Tensor c) {
      fx::Tensor h = fx::tanh(fx::matmul(x, a) + b);
      fx::Tensor d = fx::matmul(h, c) - y;
      return fx::mean(d * d);
    };
    auto [l, g] = fx::value_and_grad(loss, {0, 1, 2})(w1, b1, w2);
    fx::Tensor noise = fx::random::normal(fx::random::key(7), {4}, fx::f32, 0, 1e-3);
    fx::Tensor halvings = fx::while_loop([](fx::Tensor v) { return fx::sum(fx::abs(v)) > 1e-3; },
                                         [](fx::Tensor v) { return v * 0.5f; }, l);
    fx::Tensor label = fx::argmax(fx::matmul(fx::tanh(fx::matmul(x, w1) + b1), w2), 1);
    return std::vector<fx::Tensor>{w1 - 0.1f * g[0], b1 - 0.1f * g[1] + noise, w2 - 0.1f * g[2], l, halvings, label};
  };
  return fx::jit(step, backend)
      .lower(make(fx::f32, random_doubles(8 * 4, -1, 1, 1), {8, 4}), make(fx::f32, random_doubles(4, -1, 1, 2), {4}),
             make(fx::f32, random_doubles(4 * 3, -1, 1, 3), {4, 3}),
             make(fx::f32, random_doubles(64 * 8, -1, 1, 4), {64, 8}),
             make(fx::f32, random_doubles(64 * 3, -1, 1, 5), {64, 3}));
}

inline std::vector<fx::Array> inputs_of(const fx::Compiled& c, uint32_t seed) {
  std::vector<fx::Array> in;
  for (const fx::TensorType& t : c.input_types())
    in.push_back(make(t.dtype, random_doubles(t.numel(), -1, 1, seed++), t.shape));
  return in;
}

}  // namespace fluxion::testing
