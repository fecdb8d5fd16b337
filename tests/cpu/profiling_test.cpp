// Profiling on the CPU backend (docs/cpu.md, "Profiling"): a separately compiled copy of the
// program reads the clock around every kernel; the totals name each kernel as `kernels()` does.
#include <gtest/gtest.h>

#include <fluxion/fluxion.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "common/test_util.h"

namespace fx = fluxion;
using fx::Array;
using fx::Backend;
using fx::Tensor;

namespace {

Array uniform(fx::Shape shape, double lo, double hi, uint32_t seed) {
  return fx::testing::make(fx::f32, fx::testing::random_doubles(fx::testing::count(shape), lo, hi, seed), shape);
}

// Turns profiling on for a test and off (with cleared totals) after it, whatever happens.
struct ProfilingOn {
  ProfilingOn() {
    fx::reset_kernel_times();
    fx::set_profiling(true);
  }
  ~ProfilingOn() {
    fx::set_profiling(false);
    fx::reset_kernel_times();
  }
};

}  // namespace

TEST(CpuProfiling, EveryKernelIsTimedAndNamedAsKernelsPrintsIt) {
  auto f = fx::jit([](Tensor a, Tensor b) { return fx::sum(fx::tanh(fx::matmul(a, b) + 1.0)); }, Backend::Cpu);
  Array a = uniform({16, 8}, -1, 1, 1), b = uniform({8, 4}, -1, 1, 2);
  std::string listing = f.lower(a, b).kernels();
  Array plain = f(a, b);
  ProfilingOn on;
  Array profiled = f(a, b);
  f(a, b);
  // The profiled copy computes the same thing.
  EXPECT_EQ(plain.to_vector<float>(), profiled.to_vector<float>());
  std::vector<fx::KernelTime> times = fx::kernel_times();
  ASSERT_FALSE(times.empty());
  for (const fx::KernelTime& t : times) {
    EXPECT_NE(listing.find(t.name), std::string::npos) << t.name << " is not a line of\n" << listing;
    EXPECT_EQ(t.calls, 2u) << t.name;  // each kernel once per call
  }
  // Every kernel of the listing was timed.
  size_t listed = 0;
  for (size_t pos = 0; (pos = listing.find("kernel ", pos)) != std::string::npos; ++pos) ++listed;
  EXPECT_EQ(times.size(), listed) << listing;
  EXPECT_NE(fx::kernel_time_table().find("matmul"), std::string::npos);
}

// The table's rates count what each kernel moves and computes: a map reads its operand and
// writes its result once each; a product reads both operands and writes its result, 2 FLOPs per
// multiply-add.
TEST(CpuProfiling, KernelsCountTheirBytesAndFlops) {
  ProfilingOn on;
  auto map = fx::jit([](Tensor a) { return fx::tanh(a) * 3.0; }, Backend::Cpu);
  auto product = fx::jit([](Tensor a, Tensor b) { return fx::matmul(a, b); }, Backend::Cpu);
  Array x = uniform({1000, 30}, -1, 1, 3), a = uniform({48, 20}, -1, 1, 4), b = uniform({20, 36}, -1, 1, 5);
  map(x);
  map(x);
  product(a, b);
  bool saw_map = false, saw_product = false;
  for (const fx::KernelTime& t : fx::kernel_times()) {
    if (t.name.find("tanh") != std::string::npos) {
      saw_map = true;
      EXPECT_EQ(t.bytes, 2 * 2 * 4.0 * 1000 * 30) << t.name;  // two calls
      EXPECT_EQ(t.flops, 0) << t.name;
    }
    if (t.name.find("matmul") != std::string::npos) {
      saw_product = true;
      EXPECT_EQ(t.flops, 2.0 * 48 * 36 * 20) << t.name;
      EXPECT_EQ(t.bytes, 4.0 * (48 * 20 + 20 * 36 + 48 * 36)) << t.name;
    }
  }
  EXPECT_TRUE(saw_map && saw_product) << fx::kernel_time_table();
  EXPECT_NE(fx::kernel_time_table().find("TFLOP/s"), std::string::npos);
}

TEST(CpuProfiling, LoopBodyKernelsCountEveryIterationAndSayWhereTheyAre) {
  auto f = fx::jit([](Tensor x) {
    return fx::fori_loop(0, 7, [](const Tensor&, const Tensor& c) { return fx::sin(c) * 0.5 + 1.0; }, x);
  }, Backend::Cpu);
  Array x = uniform({5}, -1, 1, 3);
  ProfilingOn on;
  f(x);
  bool saw_body = false;
  for (const fx::KernelTime& t : fx::kernel_times()) {
    if (t.name.find("scan@") != 0) continue;
    saw_body = true;
    EXPECT_NE(t.name.find(".body: kernel 0"), std::string::npos) << t.name;
    EXPECT_EQ(t.calls, 7u) << t.name;
  }
  EXPECT_TRUE(saw_body) << fx::kernel_time_table();
}

TEST(CpuProfiling, TurningItOffRunsTheUnprofiledCodeAgain) {
  auto f = fx::jit([](Tensor a) { return fx::exp(a) * 2.0; }, Backend::Cpu);
  Array a = uniform({64}, -1, 1, 4);
  {
    ProfilingOn on;
    f(a);
    EXPECT_FALSE(fx::kernel_times().empty());
  }
  f(a);
  EXPECT_TRUE(fx::kernel_times().empty());
}

TEST(CpuProfiling, TheTraceOfTheLastCallIsWritten) {
  auto f = fx::jit([](Tensor a, Tensor b) { return fx::matmul(a, b) * 3.0; }, Backend::Cpu);
  ProfilingOn on;
  f(uniform({8, 8}, -1, 1, 5), uniform({8, 8}, -1, 1, 6));
  std::string path = fluxion::testing::temp_path("cpu_trace.json");
  fx::write_chrome_trace(path);
  std::ifstream in(path);
  std::string json((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(json.find("\"traceEvents\""), std::string::npos);
  EXPECT_NE(json.find("matmul"), std::string::npos);
  std::remove(path.c_str());
}
