#include <cstdio>
#include <tuple>
#include <utility>
#include <vector>

#include <fluxion/fluxion.h>

namespace fx = fluxion;

int main() {
  // Least squares: w [3, 1], x [8, 3], y [8, 1].
  auto loss = [](const fx::Tensor& w, const fx::Tensor& x, const fx::Tensor& y) {
    return fx::mean(fx::square(fx::matmul(x, w) - y));
  };
  auto dloss = fx::jit(fx::grad(loss));                      // wrt defaults to {0}: d loss / d w
  auto vg = fx::jit(fx::value_and_grad(loss, /*wrt=*/{0}));  // the loss and its gradient, one program

  fx::Array w(fx::f32, {3, 1});  // zeros
  std::vector<float> xs(8 * 3), ys(8);
  for (int i = 0; i < 8; ++i) {
    for (int j = 0; j < 3; ++j) xs[i * 3 + j] = static_cast<float>((i + 1) * (j + 2) % 5);
    ys[i] = 0.5f * xs[i * 3] - xs[i * 3 + 1] + 2.0f * xs[i * 3 + 2];
  }
  fx::Array x(xs, {8, 3}), y(ys, {8, 1});

  std::vector<fx::Array> g = dloss(w, x, y);  // one Array per leaf of the differentiated arguments
  auto [value, grads] = vg(w, x, y);          // fx::Array and std::vector<fx::Array>
  std::printf("loss %g, dL/dw %s\n", value.item(), grads[0].str().c_str());

  // 100 steps of gradient descent in one compiled call: the loop is one IR op, not 100 copies.
  auto fit = fx::jit([&](const fx::Tensor& w0, const fx::Tensor& x, const fx::Tensor& y) {
    return fx::fori_loop(
        0, 100, [&](const fx::Tensor& /*i*/, const fx::Tensor& w) { return w - 0.05 * fx::grad(loss)(w, x, y)[0]; },
        w0);
  });
  fx::Array w_fit = fit(w, x, y);
  std::printf("fitted w %s\n", w_fit.str().c_str());  // close to [0.5, -1, 2], the weights y was made with

  // A running sum: the carry is the sum so far, each step also emits it.
  auto cumsum = fx::jit([](const fx::Tensor& xs) {
    auto [total, partial] = fx::scan(
        [](const fx::Tensor& acc, const fx::Tensor& x) {
          fx::Tensor next = acc + x;
          return std::make_pair(next, next);  // (new carry, this step's output)
        },
        fx::zeros({}), xs);                  // carry f32[]; xs f32[T] is read one element per step
    return std::make_tuple(total, partial);  // f32[] and f32[T]
  });
  auto [total, partial] = cumsum(fx::Array(std::vector<float>{1, 2, 3, 4}, {4}));
  std::printf("%g %s\n", total.item(), partial.str().c_str());

  auto halve = fx::jit([](const fx::Tensor& x0) {
    return fx::while_loop([](const fx::Tensor& x) { return x > 1.0; },  // a bool[] scalar, tested on the device
                          [](const fx::Tensor& x) { return x * 0.5; }, x0, /*max_iters=*/100);
  });
  std::printf("%g\n", halve(fx::Array::scalar(37.0f)).item());  // 0.578125

  // Looking inside a compiled loop: the print runs when the program runs, once per iteration.
  auto halve_loudly = fx::jit([](const fx::Tensor& x0) {
    return fx::while_loop([](const fx::Tensor& x) { return x > 1.0; },
                          [](const fx::Tensor& x) {
                            fx::debug::print("x = {}", x);  // x = 37, x = 18.5, ..., x = 1.15625
                            return x * 0.5;
                          },
                          x0, /*max_iters=*/100);
  });
  halve_loudly(fx::Array::scalar(37.0f));
}
