// The CPU backend's run-time promises: no heap allocation in a steady-state call, caller-owned
// output buffers written in place (also when they alias inputs), the compile cache shared by
// structurally equal functions and safe under concurrent use, and the on-disk object cache.
#include <gtest/gtest.h>

#include <fluxion/fluxion.h>

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <filesystem>
#include <new>
#include <thread>

#include "backends/cpu/executable.h"
#include "common/test_util.h"
#include "cpu/lstm_cell.h"
#include "ir/ir.h"
#include "runtime/disk_cache.h"

namespace fx = fluxion;
using fx::Array;
using fx::Tensor;

namespace {
std::atomic<bool> counting{false};
std::atomic<long> allocations{0};
}  // namespace

// Every form of operator new counts while `counting` is set (all of them are replaced, so that
// allocation and release always pair up, also under AddressSanitizer).
namespace {
void* counted(std::size_t n, std::size_t align) {
  if (counting) allocations++;
  n = n ? n : 1;
  return align > alignof(std::max_align_t) ? std::aligned_alloc(align, (n + align - 1) / align * align)
                                           : std::malloc(n);
}
void* counted_or_throw(std::size_t n, std::size_t align) {
  if (void* p = counted(n, align)) return p;
  throw std::bad_alloc();
}
}  // namespace
void* operator new(std::size_t n) { return counted_or_throw(n, 0); }
void* operator new[](std::size_t n) { return counted_or_throw(n, 0); }
void* operator new(std::size_t n, std::align_val_t a) { return counted_or_throw(n, static_cast<std::size_t>(a)); }
void* operator new[](std::size_t n, std::align_val_t a) { return counted_or_throw(n, static_cast<std::size_t>(a)); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return counted(n, 0); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return counted(n, 0); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }

namespace {

Tensor mlp(Tensor W1, Tensor b1, Tensor W2, Tensor b2, Tensor x) {
  Tensor h = fx::tanh(fx::matmul(W1, x) + b1);
  Tensor y = fx::matmul(W2, h) + b2;
  return fx::sum(y * y);
}

// One LSTM layer over `steps` steps with scan, and an SGD update of its weights.
std::vector<Tensor> lstm_step(Tensor Wx, Tensor Wh, Tensor b, Tensor xs) {
  auto loss = [](Tensor Wx, Tensor Wh, Tensor b, Tensor xs) {
    int64_t H = Wh.dim(1), B = xs.dim(2);
    auto body = [&](std::pair<Tensor, Tensor> hc, Tensor x) {
      auto [h2, c2] = fx::testing::lstm_cell(Wx, Wh, b, x, hc.first, hc.second);
      return std::make_pair(std::make_pair(h2, c2), fx::sum(h2 * h2));
    };
    auto zeros = fx::zeros({H, B});
    auto [hc, ys] = fx::scan(body, std::make_pair(zeros, zeros), xs);
    return fx::sum(ys);
  };
  auto [value, grads] = fx::value_and_grad(loss, {0, 1, 2})(Wx, Wh, b, xs);
  return {value, Wx - 0.01 * grads[0], Wh - 0.01 * grads[1], b - 0.01 * grads[2]};
}

Array uniform(const fx::Shape& shape, double lo, double hi, uint32_t seed) {
  return fx::testing::make(fx::f32, fx::testing::random_doubles(fx::numel(shape), lo, hi, seed), shape);
}

template <class F>
long allocations_in(F f) {
  allocations = 0;
  counting = true;
  f();
  counting = false;
  return allocations.load();
}

}  // namespace

TEST(CpuRuntime, SteadyStateMlpValueAndGradAllocatesNothing) {
  auto f = fx::jit(fx::value_and_grad(mlp, {0, 1, 2, 3}), fx::Backend::Cpu);
  std::vector<Array> in{uniform({32, 784}, -0.1, 0.1, 1), uniform({32, 1}, -0.1, 0.1, 2),
                        uniform({10, 32}, -0.1, 0.1, 3), uniform({10, 1}, -0.1, 0.1, 4), uniform({784, 128}, 0, 1, 5)};
  fx::Compiled c = f.lower(in[0], in[1], in[2], in[3], in[4]);
  std::vector<Array> out;
  for (const fx::TensorType& t : c.output_types()) out.emplace_back(t.dtype, t.shape);
  c.run_into(in, out);  // warm-up: the arena pool fills
  EXPECT_EQ(allocations_in([&] {
              for (int i = 0; i < 10; ++i) c.run_into(in, out);
            }),
            0);
  // And the buffers hold the right answer (the interpreter's, within f32 accumulation error).
  std::vector<Array> want = fx::jit(fx::value_and_grad(mlp, {0, 1, 2, 3}), fx::Backend::Interp)
                                .lower(in[0], in[1], in[2], in[3], in[4])
                                .run(in);
  for (size_t k = 0; k < out.size(); ++k) {
    std::vector<double> got = out[k].to_doubles(), ref = want[k].to_doubles();
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_NEAR(got[i], ref[i], 1e-3 * (1 + std::abs(ref[i]))) << "output " << k << " element " << i;
  }
}

TEST(CpuRuntime, SteadyStateLstmTrainingStepAllocatesNothingAndUpdatesInPlace) {
  auto f = fx::jit(lstm_step, fx::Backend::Cpu);
  Array Wx = uniform({32, 4}, -0.3, 0.3, 6), Wh = uniform({32, 8}, -0.3, 0.3, 7);
  Array b = uniform({32, 1}, -0.1, 0.1, 8), xs = uniform({5, 4, 3}, -1, 1, 9);
  fx::Compiled c = f.lower(Wx, Wh, b, xs);
  // The reference: the interpreter's step on copies.
  auto ref = fx::jit(lstm_step, fx::Backend::Interp)(Wx.clone(), Wh.clone(), b.clone(), xs);
  std::vector<Array> in{Wx, Wh, b, xs};
  std::vector<Array> out{Array(fx::f32, {}), Wx, Wh, b};  // parameters updated in place
  c.run_into(in, out);
  std::vector<double> got = Wx.to_doubles(), want = ref[1].to_doubles();
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5);
  EXPECT_NEAR(out[0].item(), ref[0].item(), 1e-4 * std::abs(ref[0].item()));
  EXPECT_EQ(allocations_in([&] {
              for (int i = 0; i < 5; ++i) c.run_into(in, out);
            }),
            0);
  fx::reset_counters();
  c.run_into(in, out);
  EXPECT_EQ(fx::counters().native_calls, 1u);  // the whole scan, forward and backward, in one call
}

TEST(CpuRuntime, StructurallyEqualFunctionsShareOneCompiledProgram) {
  auto a = [](Tensor x, Tensor y) { return fx::sum(fx::exp(x) * y + 3.25); };
  auto b = [](Tensor p, Tensor q) { return fx::sum(fx::exp(p) * q + 3.25); };
  Array x = uniform({7, 5}, -1, 1, 10), y = uniform({7, 5}, -1, 1, 11);
  fx::reset_counters();
  double va = fx::jit(b, fx::Backend::Cpu)(x, y).item();
  uint64_t compiles = fx::counters().compiles;
  double vb = fx::jit(a, fx::Backend::Cpu)(x, y).item();
  EXPECT_EQ(fx::counters().compiles, compiles);
  EXPECT_EQ(fx::counters().cache_hits, 1u);
  EXPECT_EQ(va, vb);
}

TEST(CpuRuntime, ThreadsCompileAndCallConcurrently) {
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([t, &failures] {
      double scale = 1.0 + t % 3;  // three distinct structures, each compiled by several threads
      auto f = fx::jit([scale](Tensor x) { return fx::sum(fx::tanh(x) * scale); }, fx::Backend::Cpu);
      Array x = uniform({64, 33}, -1, 1, 12);
      double want = 0;
      for (double v : x.to_doubles()) want += std::tanh(v) * scale;
      for (int i = 0; i < 20; ++i) {
        if (std::abs(f(x).item() - want) > 1e-3) failures++;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
}

TEST(CpuRuntime, SecondCompileOfAProgramLoadsItsObjectFromDisk) {
  std::string dir = fluxion::testing::temp_path("disk_cache_test");
  std::filesystem::remove_all(dir);
  ::setenv("FLUXION_CACHE_DIR", dir.c_str(), 1);
  ::unsetenv("FLUXION_DISK_CACHE");
  fluxion::ir::Program p;
  {
    auto c =
        fx::jit([](Tensor x) { return fx::sum(fx::sin(x) * 1.75); }, fx::Backend::Interp).lower(Array(fx::f32, {9}));
    p = fluxion::ir::parse(c.ir());
  }
  fx::reset_counters();
  auto first = fluxion::cpu::compile(p);
  auto second = fluxion::cpu::compile(p);  // bypasses the in-memory cache
  EXPECT_EQ(fx::counters().disk_cache_hits, 1u);
  EXPECT_EQ(first->run({Array(std::vector<float>(9, 0.5f), {9})})[0].item(),
            second->run({Array(std::vector<float>(9, 0.5f), {9})})[0].item());
  // A damaged entry is ignored and rewritten.
  for (auto& e : std::filesystem::directory_iterator(dir)) std::filesystem::resize_file(e.path(), 10);
  fx::reset_counters();
  auto third = fluxion::cpu::compile(p);
  EXPECT_EQ(fx::counters().disk_cache_hits, 0u);
  ::setenv("FLUXION_DISK_CACHE", "0", 1);
  EXPECT_EQ(fluxion::runtime::disk_cache_dir(), "");
  ::unsetenv("FLUXION_DISK_CACHE");
  ::unsetenv("FLUXION_CACHE_DIR");
  std::filesystem::remove_all(dir);
}

TEST(CpuRuntime, ThreadCountIsSettableAndChecked) {
  int before = fx::num_threads();
  fx::set_num_threads(1);
  EXPECT_EQ(fx::num_threads(), 1);
  auto f = fx::jit([](Tensor x) { return x * 2.0; }, fx::Backend::Cpu);
  Array x = uniform({512, 300}, -1, 1, 13);
  std::vector<double> one = f(x).to_doubles();
  fx::set_num_threads(2);
  EXPECT_EQ(f(x).to_doubles(), one);
  EXPECT_THROW(fx::set_num_threads(0), fx::Error);
  fx::set_num_threads(before);
}

TEST(CpuRuntime, OutputsThatAliasInputsSeeTheInputsBeforeTheCall) {
  auto swap_and_step = fx::jit([](Tensor x, Tensor y) { return std::make_tuple(y, x, x + y); }, fx::Backend::Cpu);
  Array x(std::vector<float>{1, 2, 3}, {3}), y(std::vector<float>{10, 20, 30}, {3});
  fx::Compiled c = swap_and_step.lower(x, y);
  // Swap in place (results passed through from inputs) and write the sum over x as well.
  std::vector<Array> in{x, y};
  std::vector<Array> out{x, y, Array(fx::f32, {3})};
  c.run_into(in, out);
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{10, 20, 30}));
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(out[2].to_vector<float>(), (std::vector<float>{11, 22, 33}));
  // A computed result written over its own input.
  auto scale = fx::jit([](Tensor v) { return v * 2.0 + fx::sum(v); }, fx::Backend::Cpu);
  Array v(std::vector<float>{1, 2, 3}, {3});
  std::vector<Array> vin{v}, vout{v};
  scale.lower(v).run_into(vin, vout);
  EXPECT_EQ(v.to_vector<float>(), (std::vector<float>{8, 10, 12}));
}
