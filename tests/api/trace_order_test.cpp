// Program identity does not depend on the order independent sub-expressions were traced in:
// C++ leaves the evaluation order of an operator's operands unspecified, so `a + f(x) - g(y)`
// may trace f or g first. Both orders hash equal, run the same optimized IR, and compile once.
#include <vector>

#include "common/test_util.h"

namespace fx = fluxion;

class TraceOrder : public fx::testing::BackendTest {};
FLUXION_INSTANTIATE_BACKENDS(TraceOrder);

namespace {

fx::Tensor f(const fx::Tensor& x) { return fx::tanh(x) * 3.0; }
fx::Tensor g(const fx::Tensor& y) {
  fx::Tensor e = fx::exp(y);
  fx::Tensor s = fx::sin(y);
  return e + s;
}

// a + f(x) - g(y), with f traced first or g traced first.
auto f_first = [](fx::Tensor a, fx::Tensor x, fx::Tensor y) {
  fx::Tensor fx_ = f(x);
  fx::Tensor gy = g(y);
  fx::Tensor s = a + fx_;
  return s - gy;
};
auto g_first = [](fx::Tensor a, fx::Tensor x, fx::Tensor y) {
  fx::Tensor gy = g(y);
  fx::Tensor fx_ = f(x);
  fx::Tensor s = a + fx_;
  return s - gy;
};

// The same in a loop body: the two independent terms of the carry's update in either order.
auto loop_f_first = [](fx::Tensor x) {
  return fx::fori_loop(
      0, 3,
      [&](fx::Tensor, fx::Tensor c) {
        fx::Tensor u = fx::tanh(c);
        fx::Tensor v = fx::exp(x);
        fx::Tensor w = u * 0.5;
        return w + v;
      },
      x);
};
auto loop_g_first = [](fx::Tensor x) {
  return fx::fori_loop(
      0, 3,
      [&](fx::Tensor, fx::Tensor c) {
        fx::Tensor v = fx::exp(x);
        fx::Tensor u = fx::tanh(c);
        fx::Tensor w = u * 0.5;
        return w + v;
      },
      x);
};

std::vector<float> ramp(int n, float scale) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) v[static_cast<size_t>(i)] = scale * static_cast<float>(i % 5 - 2);
  return v;
}

}  // namespace

TEST_P(TraceOrder, OperandsTracedInEitherOrderHashAndCompileAlike) {
  fx::Array a(ramp(12, 0.1f), {3, 4}), x(ramp(12, 0.3f), {3, 4}), y(ramp(12, -0.2f), {3, 4});
  fx::Compiled c1 = fx::jit(f_first, backend()).lower(a, x, y);
  fx::Compiled c2 = fx::jit(g_first, backend()).lower(a, x, y);
  EXPECT_NE(c1.traced_ir(), c2.traced_ir());  // the traces really are in other orders
  EXPECT_EQ(c1.hash(), c2.hash());
  EXPECT_EQ(c1.ir(), c2.ir());
  EXPECT_EQ(c1.run({a, x, y})[0].to_vector<float>(), c2.run({a, x, y})[0].to_vector<float>());
}

TEST_P(TraceOrder, LoopBodiesTracedInEitherOrderHashAlike) {
  fx::Array x(ramp(6, 0.25f), {6});
  fx::Compiled c1 = fx::jit(loop_f_first, backend()).lower(x);
  fx::Compiled c2 = fx::jit(loop_g_first, backend()).lower(x);
  EXPECT_NE(c1.traced_ir(), c2.traced_ir());
  EXPECT_EQ(c1.hash(), c2.hash());
  EXPECT_EQ(c1.ir(), c2.ir());
  EXPECT_EQ(c1.run({x})[0].to_vector<float>(), c2.run({x})[0].to_vector<float>());
}

TEST(TraceOrderCpu, EitherOrderCompilesOnce) {
  // A shape no other test uses, so that the first compile is not a hit on the process's cache.
  fx::Array a(ramp(39, 0.1f), {3, 13}), x(ramp(39, 0.3f), {3, 13}), y(ramp(39, -0.2f), {3, 13});
  // A program is built by the compiler or loaded from the on-disk cache of an earlier run.
  auto built = [] { return fx::counters().compiles + fx::counters().disk_cache_hits; };
  fx::reset_counters();
  std::vector<float> v1 = fx::jit(f_first, fx::Backend::Cpu)(a, x, y).to_vector<float>();
  EXPECT_EQ(built(), 1u);
  std::vector<float> v2 = fx::jit(g_first, fx::Backend::Cpu)(a, x, y).to_vector<float>();
  EXPECT_EQ(built(), 1u);
  EXPECT_EQ(fx::counters().cache_hits, 1u);
  EXPECT_EQ(v1, v2);
}
