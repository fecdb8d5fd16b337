// Eight threads trace, compile and run small models at once (some structurally identical, as
// different C++ lambdas: seed 003), on every backend; every result must equal the same
// program's single-threaded result. Also built with ThreadSanitizer (make test-tsan).
#include <gtest/gtest.h>

#include <thread>

#include "common/test_names.h"

namespace {

Tensor mlp_loss(const Tensor& W1, const Tensor& W2, const Tensor& x) {
  return fx::sum(fx::square(fx::matmul(W2, fx::tanh(fx::matmul(W1, x)))));
}

// Model k of 4, its inputs, and one value of its result to compare.
std::vector<double> run_model(int k, Backend b, int salt) {
  Array W1 = make(DType::f32, random_doubles(16 * 8, -1, 1, static_cast<uint32_t>(10 + salt)), {16, 8});
  Array W2 = make(DType::f32, random_doubles(4 * 16, -1, 1, static_cast<uint32_t>(20 + salt)), {4, 16});
  Array x = make(DType::f32, random_doubles(8 * 5, -1, 1, static_cast<uint32_t>(30 + salt)), {8, 5});
  switch (k) {
    case 0: {  // value and gradient of an MLP
      auto [v, g] = fx::jit(fx::value_and_grad(mlp_loss, {0, 1}), b)(W1, W2, x);
      std::vector<double> out{v.item()};
      for (double d : g[0].to_doubles()) out.push_back(d);
      return out;
    }
    case 1: {  // the same structure from another lambda type: shares the compiled program
      auto [v, g] = fx::jit(fx::value_and_grad([](Tensor a, Tensor c, Tensor d) { return mlp_loss(a, c, d); }, {0, 1}), b)(W1, W2, x);
      std::vector<double> out{v.item()};
      for (double d : g[0].to_doubles()) out.push_back(d);
      return out;
    }
    case 2: {  // a loop: 50 steps of a small recurrence and its gradient
      auto f = [](Tensor W, Tensor h0) {
        return fx::sum(fx::fori_loop(0, 50, [&](Tensor, Tensor h) { return fx::tanh(fx::matmul(W, h) * 0.5); }, h0));
      };
      Array W = make(DType::f32, random_doubles(8 * 8, -1, 1, static_cast<uint32_t>(40 + salt)), {8, 8});
      Array h = make(DType::f32, random_doubles(8, -1, 1, static_cast<uint32_t>(50 + salt)), {8, 1});
      auto [v, g] = fx::jit(fx::value_and_grad(f, {0}), b)(W, h);
      std::vector<double> out{v.item()};
      for (double d : g[0].to_doubles()) out.push_back(d);
      return out;
    }
    default: {  // reductions and broadcasting
      Array y = fx::jit([](Tensor a, Tensor c) { return fx::max(a, {1}) + fx::mean(fx::exp(c), {0}); }, b)(W1, W2);
      return y.to_doubles();
    }
  }
}

}  // namespace

class Concurrency : public BackendTest {};
FLUXION_INSTANTIATE_BACKENDS(Concurrency);

TEST_P(Concurrency, EightThreadsTraceCompileAndRunAtOnce) {
  constexpr int kThreads = 8;
  // Single-threaded references, computed first (they also warm nothing: every thread below
  // traces its own jit object; programs of equal structure meet in the compile cache).
  std::vector<std::vector<double>> want(kThreads);
  for (int t = 0; t < kThreads; ++t) want[static_cast<size_t>(t)] = run_model(t % 4, backend(), t);
  std::vector<std::vector<double>> got(kThreads);
  std::vector<std::string> errors(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      try {
        for (int rep = 0; rep < 3; ++rep) got[static_cast<size_t>(t)] = run_model(t % 4, backend(), t);
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(t)] = e.what();
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(errors[static_cast<size_t>(t)], "") << "thread " << t;
    EXPECT_EQ(got[static_cast<size_t>(t)], want[static_cast<size_t>(t)]) << "thread " << t;
  }
}

TEST_P(Concurrency, OneCompiledProgramCalledFromEightThreads) {
  auto step = fx::jit(fx::value_and_grad(mlp_loss, {0, 1}), backend());
  std::vector<Array> W1s, W2s, xs;
  std::vector<double> want;
  for (int t = 0; t < 8; ++t) {
    W1s.push_back(make(DType::f32, random_doubles(16 * 8, -1, 1, static_cast<uint32_t>(t)), {16, 8}));
    W2s.push_back(make(DType::f32, random_doubles(4 * 16, -1, 1, static_cast<uint32_t>(100 + t)), {4, 16}));
    xs.push_back(make(DType::f32, random_doubles(8 * 5, -1, 1, static_cast<uint32_t>(200 + t)), {8, 5}));
    want.push_back(step(W1s.back(), W2s.back(), xs.back()).first.item());
  }
  std::vector<double> got(8);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int rep = 0; rep < 20; ++rep) got[static_cast<size_t>(t)] = step(W1s[static_cast<size_t>(t)], W2s[static_cast<size_t>(t)], xs[static_cast<size_t>(t)]).first.item();
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(got, want);
}

// Two products that run side by side on the CPU's thread pool (each large enough for a
// hand-off), called from four threads at once: one caller's job holds the pool while the others
// run theirs alone, and every call must give the single-threaded bits.
TEST_P(Concurrency, KernelsSideBySideOnThePoolFromFourThreads) {
  int before = fx::num_threads();
  fx::set_num_threads(4);
  auto f = fx::jit(
      [](Tensor x, Tensor w1, Tensor w2) { return std::make_tuple(fx::matmul(fx::tanh(x), w1), fx::matmul(x, w2)); },
      backend());
  Array x = make(DType::f32, random_doubles(128 * 64, -1, 1, 300), {128, 64});
  Array w1 = make(DType::f32, random_doubles(64 * 64, -1, 1, 301), {64, 64});
  Array w2 = make(DType::f32, random_doubles(64 * 64, -1, 1, 302), {64, 64});
  auto run = [&] {
    auto [a, b] = f(x, w1, w2);
    std::vector<double> out = a.to_doubles(), second = b.to_doubles();
    out.insert(out.end(), second.begin(), second.end());
    return out;
  };
  std::vector<double> want = run();
  std::vector<std::vector<double>> got(4);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < got.size(); ++t) {
    threads.emplace_back([&, t] {
      for (int rep = 0; rep < 10; ++rep) got[t] = run();
    });
  }
  for (std::thread& th : threads) th.join();
  fx::set_num_threads(before);
  for (size_t t = 0; t < got.size(); ++t) EXPECT_EQ(got[t], want) << "thread " << t;
}

// Programs with collectives (in a job of one rank, where they copy) called from eight threads
// at once: their exchanges share the process's communication thread, which must hand each
// call its own results and finish them before the call returns.
TEST_P(Concurrency, ProgramsWithCollectivesFromEightThreads) {
  auto step = fx::jit(
      [](Tensor W1, Tensor W2, Tensor x) {
        std::vector<Tensor> g = fx::grad(mlp_loss, {0, 1})(W1, W2, x);
        return std::make_tuple(fx::all_reduce(g[0], fx::ReduceOp::Mean) * 2.0, fx::all_reduce(g[1]) + 1.0);
      },
      backend());
  std::vector<Array> W1s, W2s, xs;
  std::vector<std::vector<double>> want;
  for (int t = 0; t < 8; ++t) {
    W1s.push_back(make(DType::f32, random_doubles(16 * 8, -1, 1, static_cast<uint32_t>(t)), {16, 8}));
    W2s.push_back(make(DType::f32, random_doubles(4 * 16, -1, 1, static_cast<uint32_t>(100 + t)), {4, 16}));
    xs.push_back(make(DType::f32, random_doubles(8 * 5, -1, 1, static_cast<uint32_t>(200 + t)), {8, 5}));
    auto [a, c] = step(W1s.back(), W2s.back(), xs.back());
    std::vector<double> v = a.to_doubles(), w = c.to_doubles();
    v.insert(v.end(), w.begin(), w.end());
    want.push_back(v);
  }
  std::vector<std::vector<double>> got(8);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int rep = 0; rep < 20; ++rep) {
        auto [a, c] = step(W1s[static_cast<size_t>(t)], W2s[static_cast<size_t>(t)], xs[static_cast<size_t>(t)]);
        std::vector<double> v = a.to_doubles(), w = c.to_doubles();
        v.insert(v.end(), w.begin(), w.end());
        got[static_cast<size_t>(t)] = v;
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(got, want);
}
