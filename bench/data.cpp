#include "data.h"

#include <cmath>
#include <cstdint>

namespace bench {
namespace {

// splitmix64: a tiny generator whose output does not depend on the standard library.
struct Rng {
  uint64_t state;
  explicit Rng(uint64_t seed) : state(seed * 0x9E3779B97F4A7C15ull + 1) {}
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }  // [0, 1)
};

int64_t numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

Buf uniform(std::vector<int64_t> shape, double lo, double hi, uint64_t seed) {
  Rng rng(seed);
  Buf b{std::vector<float>(static_cast<size_t>(numel(shape))), std::move(shape)};
  for (float& v : b.v) v = static_cast<float>(lo + (hi - lo) * rng.unit());
  return b;
}

Buf normal(std::vector<int64_t> shape, double scale, uint64_t seed) {
  Rng rng(seed);
  Buf b{std::vector<float>(static_cast<size_t>(numel(shape))), std::move(shape)};
  for (float& v : b.v) {  // Box-Muller, one value per pair of uniforms
    double u1 = 1.0 - rng.unit(), u2 = rng.unit();
    v = static_cast<float>(scale * std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2));
  }
  return b;
}

// Weights uniform in +-1/sqrt(fan_in) (PyTorch's default for Linear, Conv2d and LSTM).
Buf fan_in(std::vector<int64_t> shape, int64_t fan, uint64_t seed) {
  double k = 1.0 / std::sqrt(static_cast<double>(fan));
  return uniform(std::move(shape), -k, k, seed);
}

}  // namespace

Inputs make_inputs() {
  Inputs in;
  in.w1.x = uniform({28, 28, 1, 128}, 0, 1, 1);

  in.w3.x = in.w1.x;
  in.w3.x.shape = {784, 128};
  in.w3.W1 = fan_in({32, 784}, 784, 2);
  in.w3.b1 = fan_in({32, 1}, 784, 3);
  in.w3.W2 = fan_in({10, 32}, 32, 4);
  in.w3.b2 = fan_in({10, 1}, 32, 5);

  LeNet& l = in.w4;
  l.x = uniform({128, 1, 28, 28}, 0, 1, 6);
  l.conv1_w = fan_in({6, 1, 5, 5}, 25, 7);
  l.conv1_b = fan_in({6}, 25, 8);
  l.conv2_w = fan_in({16, 6, 5, 5}, 150, 9);
  l.conv2_b = fan_in({16}, 150, 10);
  l.fc1_w = fan_in({120, 256}, 256, 11);
  l.fc1_b = fan_in({120}, 256, 12);
  l.fc2_w = fan_in({84, 120}, 120, 13);
  l.fc2_b = fan_in({84}, 120, 14);
  l.fc3_w = fan_in({10, 84}, 84, 15);
  l.fc3_b = fan_in({10}, 84, 16);

  in.w5.W = normal({256, 512}, 0.01, 17);
  in.w5.b = normal({256, 1}, 1.0, 18);
  in.w5.x = normal({512, 4096}, 0.01, 19);

  Lstm& r = in.w6;
  r.xs = uniform({Lstm::kSteps, Lstm::kBatch, Lstm::kInput}, -1, 1, 20);
  for (int k = 0; k < 2; ++k) {
    int64_t in_size = k == 0 ? Lstm::kInput : Lstm::kHidden;
    uint64_t s = 21 + 4 * static_cast<uint64_t>(k);
    r.w_ih[k] = fan_in({4 * Lstm::kHidden, in_size}, Lstm::kHidden, s);
    r.w_hh[k] = fan_in({4 * Lstm::kHidden, Lstm::kHidden}, Lstm::kHidden, s + 1);
    r.b_ih[k] = fan_in({4 * Lstm::kHidden}, Lstm::kHidden, s + 2);
    r.b_hh[k] = fan_in({4 * Lstm::kHidden}, Lstm::kHidden, s + 3);
  }

  in.w7.w1 = uniform({SmallLoop::kWidth}, -1, 1, 29);
  in.w7.w2 = uniform({SmallLoop::kWidth}, -1, 1, 30);
  in.w7.noise = uniform({SmallLoop::kSteps}, -0.01, 0.01, 31);
  return in;
}

}  // namespace bench
