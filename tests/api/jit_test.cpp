// The jit API: tracing per signature, tree-shaped inputs and outputs, structural hashing of
// distinct but identical closures (seed 003), simplification visible in the IR, threads.
#include <thread>
#include <vector>

#include "common/test_util.h"

namespace fx = fluxion;

class Jit : public fx::testing::BackendTest {};
FLUXION_INSTANTIATE_BACKENDS(Jit);

TEST_P(Jit, RetracesForNewShapesAndReusesCachedSignatures) {
  FLUXION_REQUIRE_F64(backend());
  int traces = 0;
  auto f = fx::jit([&](fx::Tensor x) {
    ++traces;
    return fx::sum(x * x);
  }, backend());
  EXPECT_ARRAY(f(fx::Array(std::vector<float>{1, 2}, {2})), {}, {5});
  EXPECT_ARRAY(f(fx::Array(std::vector<float>{3, 4}, {2})), {}, {25});
  EXPECT_EQ(traces, 1);
  EXPECT_ARRAY(f(fx::Array(std::vector<float>{1, 2, 3}, {3})), {}, {14});
  EXPECT_ARRAY(f(fx::Array(std::vector<double>{1, 2, 3, 4}, {2, 2})), {}, {30});
  EXPECT_EQ(traces, 3);
  EXPECT_EQ(f.cache_size(), 3u);
}

TEST_P(Jit, TreeInputsAndOutputs) {
  auto f = fx::jit([](std::vector<fx::Tensor> params, fx::Tensor x) {
    fx::Tensor y = fx::matmul(params[0], x) + params[1];
    return std::make_tuple(y, std::vector<fx::Tensor>{fx::sum(y), fx::max(y)});
  }, backend());
  std::vector<fx::Array> params{fx::Array(std::vector<float>{1, 2, 3, 4}, {2, 2}), fx::Array(std::vector<float>{10, 20}, {2})};
  auto [y, stats] = f(params, fx::Array(std::vector<float>{1, 1}, {2}));
  EXPECT_ARRAY(y, {2}, {13, 27});
  ASSERT_EQ(stats.size(), 2u);
  EXPECT_ARRAY(stats[0], {}, {40});
  EXPECT_ARRAY(stats[1], {}, {27});
}

TEST_P(Jit, InputsAreNotModified) {
  auto f = fx::jit([](fx::Tensor x) { return x * 2.0; }, backend());
  fx::Array x(std::vector<float>{1, 2, 3}, {3});
  fx::Array y = f(x);
  EXPECT_ARRAY(x, {3}, {1, 2, 3});
  EXPECT_ARRAY(y, {3}, {2, 4, 6});
}

namespace {
// Seed 003: two setup functions build structurally identical loss closures over the same model.
struct Model {
  fx::Array W, b;
};
auto setup1(const Model& m) {
  return [m](fx::Tensor x, fx::Tensor y) {
    fx::Tensor pred = fx::matmul(fx::constant(m.W), x) + fx::constant(m.b);
    return fx::mean(fx::square(pred - y));
  };
}
auto setup2(const Model& m) {
  return [m](fx::Tensor x, fx::Tensor y) {
    fx::Tensor pred = fx::matmul(fx::constant(m.W), x) + fx::constant(m.b);
    return fx::mean(fx::square(pred - y));
  };
}
Model model() {
  std::vector<float> w(8);
  for (int i = 0; i < 8; ++i) w[i] = 0.1f * static_cast<float>(i) - 0.3f;
  return {fx::Array(w, {1, 8}), fx::Array(std::vector<float>{0.25f}, {1, 1})};
}
}  // namespace

TEST_P(Jit, IdenticalClosuresHashEqualWhateverTheCompileOrder) {
  Model m = model();
  auto l1 = setup1(m);
  auto l2 = setup2(m);
  static_assert(!std::is_same_v<decltype(l1), decltype(l2)>, "the closures have distinct C++ types");
  fx::Array X(fx::DType::f32, {8, 10}), Y(fx::DType::f32, {1, 10});
  // Compile in both orders, in fresh Jit objects each time.
  fx::Compiled a1 = fx::jit(l1, backend()).lower(X, Y);
  fx::Compiled b1 = fx::jit(l2, backend()).lower(X, Y);
  fx::Compiled b2 = fx::jit(l2, backend()).lower(X, Y);
  fx::Compiled a2 = fx::jit(l1, backend()).lower(X, Y);
  EXPECT_EQ(a1.hash(), b1.hash());
  EXPECT_EQ(a1.hash(), a2.hash());
  EXPECT_EQ(b1.hash(), b2.hash());
  EXPECT_EQ(a1.traced_ir(), b1.traced_ir());
  EXPECT_EQ(a1.ir(), b2.ir());
  std::vector<float> x(80), y(10);
  for (int i = 0; i < 80; ++i) x[i] = static_cast<float>(i % 7) * 0.1f;
  for (int i = 0; i < 10; ++i) y[i] = static_cast<float>(i) * 0.05f;
  fx::Array xa(x, {8, 10}), ya(y, {1, 10});
  EXPECT_EQ(a1.run({xa, ya})[0].to_vector<float>(), b1.run({xa, ya})[0].to_vector<float>());
}

TEST_P(Jit, HashChangesWithShapeDtypeOpAndConstant) {
  FLUXION_REQUIRE_F64(backend());
  auto base = [](fx::Tensor x) { return fx::sum(fx::exp(x) * 2.0); };
  auto other_op = [](fx::Tensor x) { return fx::sum(fx::log(x) * 2.0); };
  auto other_const = [](fx::Tensor x) { return fx::sum(fx::exp(x) * 2.5); };
  auto other_axes = [](fx::Tensor x) { return fx::sum(fx::exp(x) * 2.0, 0); };
  fx::Array a(fx::DType::f32, {2, 3});
  uint64_t h = fx::jit(base, backend()).lower(a).hash();
  EXPECT_NE(h, fx::jit(base, backend()).lower(fx::Array(fx::DType::f32, {3, 2})).hash());
  EXPECT_NE(h, fx::jit(base, backend()).lower(fx::Array(fx::DType::f64, {2, 3})).hash());
  EXPECT_NE(h, fx::jit(other_op, backend()).lower(a).hash());
  EXPECT_NE(h, fx::jit(other_const, backend()).lower(a).hash());
  EXPECT_NE(h, fx::jit(other_axes, backend()).lower(a).hash());
}

TEST_P(Jit, SimplifiedProgramDropsDuplicatesAndDeadCode) {
  auto f = fx::jit([](fx::Tensor a, fx::Tensor b) {
    fx::Tensor unused = fx::exp(a);
    (void)unused;
    return (a * b) + (a * b) + fx::scalar(2.0f) * fx::scalar(3.0f);
  }, backend());
  fx::Compiled c = f.lower(fx::Array(fx::DType::f32, {2}), fx::Array(fx::DType::f32, {2}));
  EXPECT_NE(c.traced_ir().find("exp"), std::string::npos);
  EXPECT_EQ(c.ir().find("exp"), std::string::npos) << c.ir();
  EXPECT_EQ(c.ir().find(" = mul "), c.ir().rfind(" = mul ")) << "one multiply left:\n" << c.ir();
  EXPECT_ARRAY(f(fx::Array(std::vector<float>{1, 2}, {2}), fx::Array(std::vector<float>{3, 4}, {2})), {2}, {12, 22});
}

TEST_P(Jit, ConcurrentCallsFromThreads) {
  FLUXION_REQUIRE_F64(backend());
  auto f = fx::jit([](fx::Tensor x) { return fx::sum(fx::tanh(x)); }, backend());
  std::vector<std::thread> threads;
  std::vector<double> results(8);
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      // Two shapes, so threads both hit the cache and trace new signatures at once.
      fx::Array x(std::vector<double>(static_cast<size_t>(t % 2 + 1), 0.5), {t % 2 + 1});
      results[static_cast<size_t>(t)] = f(x).item();
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < 8; ++t) EXPECT_NEAR(results[static_cast<size_t>(t)], (t % 2 + 1) * std::tanh(0.5), 1e-12);
  EXPECT_EQ(f.cache_size(), 2u);
}

TEST(Array, RoundTripsDataAndPrints) {
  fx::Array a(std::vector<int32_t>{1, -2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(a.to_vector<int32_t>(), (std::vector<int32_t>{1, -2, 3, 4, 5, 6}));
  EXPECT_EQ(a.str(), "i32[2,3] [[1, -2, 3], [4, 5, 6]]");
  fx::Array b(std::vector<bool>{true, false}, {2});
  EXPECT_EQ(b.to_vector<bool>(), (std::vector<bool>{true, false}));
  fx::Array c = a.clone();
  static_cast<int32_t*>(c.mutable_data())[0] = 9;
  EXPECT_EQ(a.to_vector<int32_t>()[0], 1);
  EXPECT_EQ(fx::Array::scalar(2.5).item(), 2.5);
  fx::Array big(fx::DType::f32, {100});
  EXPECT_EQ(big.str(), "f32[100] [0, 0, 0, ..., 0, 0, 0]");
}
