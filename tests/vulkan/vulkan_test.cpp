// The Vulkan backend's promises beyond the op suite (which runs on it through
// available_backends()): device listing, one queue submission and one wait per call whatever
// the loops inside (a small network's 200-step loop and its gradient, a 50-step LSTM training
// scan, a data-dependent while loop), agreement with the CPU backend on models, run-time
// errors, and valid SPIR-V. On the machine's Vulkan device: lavapipe in CI, a GPU elsewhere.
#include <gtest/gtest.h>

#include <fluxion/fluxion.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "backends/vulkan/shader.h"
#include "common/kernel_listing.h"
#include "common/scoped_env.h"
#include "common/test_util.h"
#include "common/vulkan_validation.h"
#include "cpu/lstm_cell.h"
#include "runtime/vulkan/context.h"
#include "runtime/vulkan/validation.h"
#include "support/settings.h"
#include "vulkan/require_vulkan.h"

namespace fx = fluxion;
using fx::Array;
using fx::Tensor;
using fluxion::testing::lstm_cell;
using fluxion::testing::random_doubles;

namespace {

Array uniform(fx::Shape s, double lo, double hi, uint32_t seed) {
  std::vector<double> v = random_doubles(fluxion::testing::count(s), lo, hi, seed);
  return Array(std::vector<float>(v.begin(), v.end()), std::move(s));
}

void expect_close(const Array& got, const Array& want, double tol) {
  std::vector<double> g = got.to_doubles(), w = want.to_doubles();
  ASSERT_EQ(g.size(), w.size());
  for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], w[i], tol * (1 + std::abs(w[i]))) << "element " << i;
}

// The value and gradients `v`, `g` that Vulkan computed for value_and_grad(f, wrt) against the
// CPU backend's on the same arguments.
template <class F, class... Args>
void expect_grad_matches_cpu(const Array& v, const std::vector<Array>& g, F f, std::vector<int> wrt,
                             const Args&... args) {
  auto [cv, cg] = fx::jit(fx::value_and_grad(f, wrt), fx::Backend::Cpu)(args...);
  expect_close(v, cv, 1e-4);
  ASSERT_EQ(g.size(), cg.size());
  for (size_t i = 0; i < g.size(); ++i) expect_close(g[i], cg[i], 1e-3);
}

// FLUXION_VULKAN_LOOP_KERNELS=0 (a second ctest run of this suite) records loops iteration by
// iteration instead of running small ones inside one dispatch.
bool loop_kernels() { return fx::support::enabled(fx::support::Setting::vulkan_loop_kernels); }

// W7's shape: a tiny tanh network applied in a loop, its state fed back.
Tensor small_loop(Tensor W1, Tensor W2, Tensor x, int64_t steps) {
  Tensor y = fx::fori_loop(
      0, steps, [&](Tensor, Tensor s) { return fx::matmul(W2, fx::tanh(fx::matmul(W1, s))) * 0.5 + x; }, x);
  return fx::sum(y * y);
}

// f and its gradient in its first two arguments, compiled for Vulkan and called once each on
// `args` (the calls that compile), then the counters reset.
template <class F, class... A>
auto compiled_and_warm(F f, const A&... args) {
  auto fwd = fx::jit(f, fx::Backend::Vulkan);
  auto grad = fx::jit(fx::value_and_grad(f, {0, 1}), fx::Backend::Vulkan);
  fwd(args...);
  grad(args...);
  fx::reset_counters();
  return std::make_pair(fwd, grad);
}

}  // namespace

TEST(Vulkan, ListsTheDeviceItRunsOn) {
  REQUIRE_VULKAN();
  std::vector<fx::VulkanDeviceInfo> all = fx::vulkan_devices();
  ASSERT_FALSE(all.empty());
  fx::VulkanDeviceInfo d = fx::vulkan_device();
  EXPECT_FALSE(d.name.empty());
  EXPECT_TRUE(d.usable);
  ASSERT_LT(d.index, static_cast<int>(all.size()));
  EXPECT_EQ(all[static_cast<size_t>(d.index)].name, d.name);
  EXPECT_GT(d.memory_bytes, 0u);
}

TEST(Vulkan, SmallNetworkLoopIsOneSubmissionForwardAndBackward) {
  REQUIRE_VULKAN();
  Array W1 = uniform({8, 4}, -0.5, 0.5, 1), W2 = uniform({4, 8}, -0.5, 0.5, 2), x = uniform({4, 2}, -1, 1, 3);
  auto f = [](Tensor a, Tensor b, Tensor c) { return small_loop(a, b, c, 200); };
  auto [fwd, grad] = compiled_and_warm(f, W1, W2, x);
  Array y = fwd(W1, W2, x);
  EXPECT_EQ(fx::counters().submissions, 1u);
  EXPECT_EQ(fx::counters().fence_waits, 1u);
  if (loop_kernels()) {
    EXPECT_LE(fx::counters().kernel_launches, 4u);  // the loop body fits one workgroup: one dispatch runs it all
  } else {
    EXPECT_GE(fx::counters().kernel_launches, 200u);  // every iteration's kernels, in that one submission
  }
  fx::reset_counters();
  auto [v, g] = grad(W1, W2, x);
  EXPECT_EQ(fx::counters().submissions, 1u);
  EXPECT_EQ(fx::counters().fence_waits, 1u);
  expect_close(y, fx::jit(f, fx::Backend::Cpu)(W1, W2, x), 1e-4);
  expect_grad_matches_cpu(v, g, f, {0, 1}, W1, W2, x);
}

TEST(Vulkan, W7ForwardAndGradientMatchCpuInOneSubmission) {
  REQUIRE_VULKAN();
  if (!loop_kernels()) GTEST_SKIP() << "8000 unrolled iterations: covered with loop kernels on";
  // Workload W7 (docs/performance.md): 8000 steps of s = sigmoid(softplus(w2) . sigmoid(s * softplus(w1))) + noise[i].
  auto w7 = [](Tensor w1, Tensor w2, Tensor noise) {
    auto [s, ys] = fx::scan(
        [&](Tensor s, Tensor n) {
          Tensor next = fx::sigmoid(fx::sum(fx::softplus(w2) * fx::sigmoid(s * fx::softplus(w1)))) + n;
          return std::make_pair(next, next);
        },
        fx::zeros({}), noise);
    return s;
  };
  // 8000 steps, and an odd count whose last step leaves the double-buffered carries in their
  // second buffers, both split over several dispatches on lavapipe.
  for (int64_t steps : {8000, 7999}) {
    Array w1 = uniform({12}, -1, 1, 12), w2 = uniform({12}, -1, 1, 13), noise = uniform({steps}, -0.01, 0.01, 14);
    auto [fwd, grad] = compiled_and_warm(w7, w1, w2, noise);
    Array s = fwd(w1, w2, noise);
    auto [v, g] = grad(w1, w2, noise);
    EXPECT_EQ(fx::counters().submissions, 2u);
    EXPECT_EQ(fx::counters().fence_waits, 2u);
    // Loops run as loop kernels: a few dispatches (lavapipe caps an invocation's loop iterations,
    // so the steps come in chunks there), not the ~100,000 of recording every iteration.
    EXPECT_LE(fx::counters().kernel_launches, 400u);
    expect_close(s, fx::jit(w7, fx::Backend::Cpu)(w1, w2, noise), 1e-4);
    expect_grad_matches_cpu(v, g, w7, {0, 1}, w1, w2, noise);
  }
}

TEST(Vulkan, ProfilingReportsEveryKernelAndWritesATrace) {
  REQUIRE_VULKAN();
  fx::set_profiling(true);
  fx::reset_kernel_times();
  auto f = fx::jit([](Tensor a, Tensor b) { return fx::sum(fx::tanh(fx::matmul(a, b) + 1.0)); }, fx::Backend::Vulkan);
  Array a = uniform({16, 8}, -1, 1, 15), b = uniform({8, 4}, -1, 1, 16);
  f(a, b);
  f(a, b);
  std::vector<fx::KernelTime> times = fx::kernel_times();
  fx::set_profiling(false);
  if (!fx::vulkan_device().capabilities.timestamps) {
    // A device without timestamps (or FLUXION_VULKAN_DISABLE=timestamps): no times, and the
    // table says why instead of printing zeros.
    EXPECT_TRUE(times.empty());
    EXPECT_NE(fx::kernel_time_table().find("not timed: Vulkan device"), std::string::npos) << fx::kernel_time_table();
    fx::reset_kernel_times();
    return;
  }
  ASSERT_FALSE(times.empty());
  EXPECT_EQ(fx::kernel_time_table().find("not timed"), std::string::npos);
  bool saw_matmul = false;
  double total_us = 0;
  for (const fx::KernelTime& t : times) {
    saw_matmul = saw_matmul || t.name.find("matmul") != std::string::npos;
    EXPECT_EQ(t.calls % 2, 0u) << t.name;  // each kernel once per call, two calls
    EXPECT_NEAR(t.mean_us * static_cast<double>(t.calls), t.total_us, 1e-6 * (1 + t.total_us)) << t.name;
    total_us += t.total_us;
  }
  EXPECT_TRUE(saw_matmul);
  EXPECT_GT(total_us, 0);  // timestamps were written and read back
  EXPECT_NE(fx::kernel_time_table().find("matmul"), std::string::npos);
  std::string path = fluxion::testing::temp_path("trace.json");
  fx::write_chrome_trace(path);
  std::ifstream in(path);
  std::string json((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(json.find("\"traceEvents\""), std::string::npos);
  EXPECT_NE(json.find("matmul"), std::string::npos);
  std::filesystem::remove(path);
  fx::reset_kernel_times();
  EXPECT_TRUE(fx::kernel_times().empty());
}

// The profile's rates count what each kernel moves and computes: a map of n floats touches
// its operand and its result once each, a product 2 FLOPs per multiply-add.
TEST(Vulkan, ProfilingCountsBytesAndFlopsPerKernel) {
  REQUIRE_VULKAN();
  if (!fx::vulkan_device().capabilities.timestamps) GTEST_SKIP() << "the device has no timestamps";
  fx::set_profiling(true);
  fx::reset_kernel_times();
  auto map = fx::jit([](Tensor a) { return fx::tanh(a) * 3.0; }, fx::Backend::Vulkan);
  auto product = fx::jit([](Tensor a, Tensor b) { return fx::matmul(a, b); }, fx::Backend::Vulkan);
  Array x = uniform({1000, 30}, -1, 1, 3), a = uniform({48, 20}, -1, 1, 4), b = uniform({20, 36}, -1, 1, 5);
  map(x);
  map(x);
  product(a, b);
  std::vector<fx::KernelTime> times = fx::kernel_times();
  std::string table = fx::kernel_time_table();
  fx::set_profiling(false);
  fx::reset_kernel_times();
  bool saw_map = false, saw_product = false;
  for (const fx::KernelTime& t : times) {
    if (t.name.find("tanh") != std::string::npos) {
      saw_map = true;
      // Two calls, each reading 120,000 bytes and writing as many (as the CPU counts them).
      EXPECT_EQ(t.bytes, 2 * 2 * 4.0 * 1000 * 30) << t.name;
      EXPECT_EQ(t.flops, 0) << t.name;
    }
    if (t.name.find("matmul") != std::string::npos) {
      saw_product = true;
      EXPECT_EQ(t.flops, 2.0 * 48 * 36 * 20) << t.name;
      EXPECT_EQ(t.bytes, 4.0 * (48 * 20 + 20 * 36 + 48 * 36)) << t.name;
    }
  }
  EXPECT_TRUE(saw_map && saw_product) << table;
  EXPECT_NE(table.find("GB/s"), std::string::npos) << table;
  EXPECT_NE(table.find("TFLOP/s"), std::string::npos) << table;
}

TEST(Vulkan, ResultsStayOnTheDeviceBetweenCalls) {
  REQUIRE_VULKAN();
  // Training steps called one by one: parameters go from one call's results to the next call's
  // inputs without leaving device memory; only what is read comes back.
  auto step = [](Tensor w, Tensor x) {
    auto [loss, g] = fx::value_and_grad(
        [&](Tensor v) { return fx::sum(fx::tanh(fx::matmul(x, v)) * fx::tanh(fx::matmul(x, v))); }, {0})(w);
    return std::make_pair(loss, w - g[0] * 0.1);
  };
  Array w0 = uniform({6, 3}, -0.5, 0.5, 17), x = uniform({5, 6}, -1, 1, 18);
  auto vk = fx::jit(step, fx::Backend::Vulkan);
  auto cpu = fx::jit(step, fx::Backend::Cpu);
  Array w = w0, wc = w0;
  for (int i = 0; i < 5; ++i) {
    auto [l, next] = vk(w, x);
    EXPECT_TRUE(next.on_device());
    w = next;
    wc = cpu(wc, x).second;
  }
  EXPECT_FALSE(w0.on_device());
  expect_close(w, wc, 1e-4);
  EXPECT_TRUE(w.on_device());  // reading made a host copy; the device copy is still there
  // Writing through mutable_data() makes the host copy the only one, and the next call uses it.
  static_cast<float*>(w.mutable_data())[0] = 0.25f;
  EXPECT_FALSE(w.on_device());
  static_cast<float*>(wc.mutable_data())[0] = 0.25f;
  expect_close(vk(w, x).second, cpu(wc, x).second, 1e-4);
  // The CPU backend reads a device-resident array like any other.
  auto [l, on_device] = vk(w0, x);
  expect_close(cpu(on_device, x).second, cpu(cpu(w0, x).second, x).second, 1e-4);
}

TEST(Vulkan, LstmTrainingScanIsOneSubmission) {
  REQUIRE_VULKAN();
  const int64_t H = 8, B = 4, In = 3, T = 50;
  // 50 steps of SGD on one sequence, each step the gradient of an LSTM over the sequence.
  auto train = [&](Tensor Wx, Tensor Wh, Tensor b, Tensor xs) {
    auto loss = [&](Tensor wx, Tensor wh, Tensor bb) {
      auto [hc, hs] = fx::scan(
          [&](std::pair<Tensor, Tensor> s, Tensor x) {
            auto [h, c] = lstm_cell(wx, wh, bb, x, s.first, s.second);
            return std::make_pair(std::make_pair(h, c), h);
          },
          std::make_pair(fx::zeros({H, B}), fx::zeros({H, B})), xs);
      return fx::mean(hs * hs);
    };
    auto params = fx::fori_loop(
        0, 5,
        [&](Tensor, std::vector<Tensor> p) {
          auto [l, g] = fx::value_and_grad(loss, {0, 1, 2})(p[0], p[1], p[2]);
          return std::vector<Tensor>{p[0] - g[0] * 0.5, p[1] - g[1] * 0.5, p[2] - g[2] * 0.5};
        },
        std::vector<Tensor>{Wx, Wh, b});
    return params[0];
  };
  Array Wx = uniform({4 * H, In}, -0.3, 0.3, 4), Wh = uniform({4 * H, H}, -0.3, 0.3, 5),
        b = uniform({4 * H, 1}, -0.1, 0.1, 6);
  Array xs = uniform({T, In, B}, -1, 1, 7);
  auto vk = fx::jit(train, fx::Backend::Vulkan);
  vk(Wx, Wh, b, xs);
  fx::reset_counters();
  Array got = vk(Wx, Wh, b, xs);
  EXPECT_EQ(fx::counters().submissions, 1u);
  EXPECT_EQ(fx::counters().fence_waits, 1u);
  expect_close(got, fx::jit(train, fx::Backend::Cpu)(Wx, Wh, b, xs), 1e-4);
}

TEST(Vulkan, DataDependentWhileLoopIsOneSubmission) {
  REQUIRE_VULKAN();
  // Newton's iteration for sqrt(a): the trip count depends on the data.
  auto f = [](Tensor a) {
    return fx::while_loop([&](Tensor x) { return fx::max(fx::abs(x * x - a)) > 1e-5; },
                          [&](Tensor x) { return (x + a / x) * 0.5; }, a);
  };
  Array a(std::vector<float>{2.f, 9.f, 0.25f}, {3});
  auto vk = fx::jit(f, fx::Backend::Vulkan);
  vk(a);
  fx::reset_counters();
  Array r = vk(a);
  EXPECT_EQ(fx::counters().submissions, 1u);
  EXPECT_EQ(fx::counters().fence_waits, 1u);
  expect_close(r, Array(std::vector<float>{1.41421356f, 3.f, 0.5f}, {3}), 1e-5);
}

TEST(Vulkan, LongUnboundedWhileLoopRecordsMoreIterations) {
  REQUIRE_VULKAN();
  // 300 iterations: more than an unbounded loop first records, so the first call records more
  // and runs again; later calls are one submission.
  auto f = [](Tensor n) { return fx::while_loop([](Tensor c) { return c < 300; }, [](Tensor c) { return c + 1; }, n); };
  Array n(std::vector<int32_t>{0}, {});
  auto vk = fx::jit(f, fx::Backend::Vulkan);
  EXPECT_EQ(vk(n).to_doubles()[0], 300);
  fx::reset_counters();
  Array r = vk(n);
  // Counted before the read: on a GPU whose memory the host cannot map, reading is a copy
  // submission of its own.
  EXPECT_EQ(fx::counters().submissions, 1u);
  EXPECT_EQ(r.to_doubles()[0], 300);
}

TEST(Vulkan, WhileLoopPastMaxItersRaises) {
  REQUIRE_VULKAN();
  auto f = [](Tensor n) {
    return fx::while_loop([](Tensor c) { return c < 100; }, [](Tensor c) { return c + 1; }, n, 10);
  };
  Array n(std::vector<int32_t>{0}, {});
  try {
    fx::jit(f, fx::Backend::Vulkan)(n);
    FAIL() << "expected fluxion::Error";
  } catch (const fx::Error& e) {
    EXPECT_NE(std::string(e.what()).find("max_iters = 10"), std::string::npos) << e.what();
  }
  EXPECT_EQ(n.to_doubles()[0], 0);
}

TEST(Vulkan, ConvNetMatchesCpu) {
  REQUIRE_VULKAN();
  auto net = [](Tensor w1, Tensor w2, Tensor x) {
    Tensor h = fx::max_pool2d(fx::relu(fx::conv2d(x, w1, {.padding = {1}})), {.window = {2, 2}, .stride = {2, 2}});
    Tensor z = fx::conv2d(h, w2);
    return fx::sum(fx::tanh(z));
  };
  Array w1 = uniform({4, 2, 3, 3}, -0.5, 0.5, 8), w2 = uniform({3, 4, 2, 2}, -0.5, 0.5, 9),
        x = uniform({2, 2, 8, 8}, -1, 1, 10);
  auto compiled = fx::jit(fx::value_and_grad(net, {0, 1}), fx::Backend::Vulkan);
  std::string listing = compiled.lower(w1, w2, x).kernels();
  // LeNet-like channel counts: every convolution one output element per invocation.
  for (const std::string& k : fluxion::testing::kernel_strategies(listing)) {
    if (k.rfind("matmul", 0) == 0) {
      EXPECT_EQ(k, "matmul[direct]") << listing;
    }
  }
  auto [v, g] = compiled(w1, w2, x);
  expect_grad_matches_cpu(v, g, net, {0, 1}, w1, w2, x);
}

TEST(Vulkan, WideConvolutionsMatchCpu) {
  REQUIRE_VULKAN();
  // Channel counts that make the tiled product pay: 16 -> 16 channels (forward and input
  // gradient tiled) and 64 -> 16 (weight gradient tiled).
  auto net = [](Tensor w1, Tensor w2, Tensor x1, Tensor x2) {
    return fx::sum(fx::tanh(fx::conv2d(x1, w1, {.padding = {1}}))) +
           fx::sum(fx::tanh(fx::conv2d(x2, w2, {.padding = {1}})));
  };
  Array w1 = uniform({16, 16, 3, 3}, -0.2, 0.2, 19), w2 = uniform({16, 64, 3, 3}, -0.1, 0.1, 20);
  Array x1 = uniform({2, 16, 16, 16}, -1, 1, 21), x2 = uniform({2, 64, 8, 8}, -1, 1, 22);
  auto compiled = fx::jit(fx::value_and_grad(net, {0, 1, 2}), fx::Backend::Vulkan);
  std::string listing = compiled.lower(w1, w2, x1, x2).kernels();
  std::vector<std::string> strategies = fluxion::testing::kernel_strategies(listing);
  EXPECT_EQ(std::count(strategies.begin(), strategies.end(), "matmul[tiles]"), 3) << listing;
  EXPECT_EQ(std::count(strategies.begin(), strategies.end(), "matmul[direct]"), 2) << listing;
  auto [v, g] = compiled(w1, w2, x1, x2);
  expect_grad_matches_cpu(v, g, net, {0, 1, 2}, w1, w2, x1, x2);
}

TEST(Vulkan, RunIntoUpdatesOutputsInPlaceOnTheDeviceWithoutAllocating) {
  REQUIRE_VULKAN();
  fx::Compiled c = fx::jit([](Tensor x) { return x * 2.0 + 1.0; }, fx::Backend::Vulkan).lower(Array(fx::f32, {4}));
  Array x(std::vector<float>{1, 2, 3, 4}, {4});
  Array alias = x;  // shares x's storage, as a parameter kept elsewhere does
  std::vector<Array> in{x}, out{x};
  c.run_into(in, out);
  EXPECT_TRUE(alias.on_device());
  EXPECT_EQ(alias.to_vector<float>(), (std::vector<float>{3, 5, 7, 9}));
  // Steady state: each call's result takes the buffer the previous call's input gave back.
  c.run_into(in, out);
  fx::reset_counters();
  for (int i = 0; i < 3; ++i) c.run_into(in, out);
  EXPECT_EQ(fx::counters().device_allocations, 0u);
  EXPECT_EQ(fx::counters().submissions, 3u);
  EXPECT_EQ(alias.to_vector<float>(), (std::vector<float>{63, 95, 127, 159}));
  // A call that fails changes nothing.
  {
    fluxion::testing::ScopedEnv limit("FLUXION_VULKAN_MEMORY_LIMIT", "1");
    EXPECT_THROW(c.run_into(in, out), fx::Error);
  }
  EXPECT_EQ(alias.to_vector<float>(), (std::vector<float>{63, 95, 127, 159}));
}

TEST(Vulkan, OutOfMemoryBudgetRaisesAndLeavesInputsIntact) {
  REQUIRE_VULKAN();
  Array x = uniform({256, 256}, -1, 1, 11);
  std::vector<double> before = x.to_doubles();
  std::string message;
  {
    fluxion::testing::ScopedEnv limit("FLUXION_VULKAN_MEMORY_LIMIT", "4096");
    try {
      fx::jit([](Tensor a) { return fx::matmul(a, a) + 1.0; }, fx::Backend::Vulkan)(x);
    } catch (const fx::Error& e) {
      message = e.what();
    }
  }
  // The error names the program (its types and where it was traced) and the bytes it wanted.
  EXPECT_NE(message.find("out of device memory for program @"), std::string::npos) << message;
  EXPECT_NE(message.find("(f32[256,256]) -> (f32[256,256])"), std::string::npos) << message;
  EXPECT_NE(message.find("vulkan_test.cpp"), std::string::npos) << message;
  EXPECT_NE(message.find("bytes, over the budget FLUXION_VULKAN_MEMORY_LIMIT=4096"), std::string::npos) << message;
  EXPECT_EQ(x.to_doubles(), before);
}

TEST(Vulkan, SpirvComesFromTheDiskCacheOnASecondCompile) {
  std::string dir = fluxion::testing::temp_path("spirv_cache_test");
  std::filesystem::remove_all(dir);
  fluxion::testing::ScopedEnv cache_dir("FLUXION_CACHE_DIR", dir.c_str());
  std::string glsl = "#version 460\nlayout(local_size_x = 1) in;\nvoid main() { int unused = 42; }\n";
  fx::reset_counters();
  std::vector<uint32_t> first = fx::vulkan::compile_glsl_cached(glsl, "cached");
  EXPECT_EQ(fx::counters().disk_cache_hits, 0u);
  std::vector<uint32_t> second = fx::vulkan::compile_glsl_cached(glsl, "cached");
  EXPECT_EQ(fx::counters().disk_cache_hits, 1u);
  EXPECT_EQ(first, second);
  std::filesystem::remove_all(dir);
}

TEST(Vulkan, ValidatorRejectsBrokenSpirv) {
  std::vector<uint32_t> garbage{0x07230203u, 0x00010500u, 0, 10, 0, 0xdeadbeefu};
  EXPECT_FALSE(fx::vulkan::validate_spirv(garbage).empty());
  std::vector<uint32_t> ok =
      fx::vulkan::compile_glsl("#version 460\nlayout(local_size_x = 1) in;\nvoid main() {}\n", "empty");
  EXPECT_EQ(fx::vulkan::validate_spirv(ok), "");
}

TEST(Vulkan, ValidationLayerMessagesReachTheTests) {
  REQUIRE_VULKAN();
  if (!fluxion::vulkan::validation_requested()) {
    GTEST_SKIP() << "runs under FLUXION_VULKAN_VALIDATION=1 (ctest's vulkan.validation.vulkan)";
  }
  // A buffer of size 0 is invalid usage (VUID-VkBufferCreateInfo-size-00912): the layer must
  // report it, or the validation runs of the suite would pass whatever the backend does.
  std::vector<std::string> seen;
  fluxion::vulkan::set_validation_handler([&](const std::string& m) { seen.push_back(m); });
  fluxion::vulkan::Context& ctx = fluxion::vulkan::context();
  auto info = fluxion::vulkan::vk_struct<VkBufferCreateInfo>(VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO);
  info.size = 0;
  info.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT;
  info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  VkBuffer buffer = VK_NULL_HANDLE;
  if (vkCreateBuffer(ctx.device, &info, nullptr, &buffer) == VK_SUCCESS) vkDestroyBuffer(ctx.device, buffer, nullptr);
  fluxion::testing::fail_tests_on_validation_messages();
  ASSERT_FALSE(seen.empty());
  EXPECT_NE(seen[0].find("VkBufferCreateInfo"), std::string::npos) << seen[0];
}
