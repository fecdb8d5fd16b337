// How the CPU backend compiles: larger kernels in LLVM modules of their own, compiled on several
// threads, kernels of the same code once per program and once across programs through the
// on-disk cache; the code and the results are the same whatever the number of threads.
#include <gtest/gtest.h>

#include <fluxion/fluxion.h>
#include <fluxion/profile.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "backends/cpu/executable.h"
#include "common/artifact_programs.h"
#include "common/scoped_env.h"
#include "common/test_util.h"
#include "ir/ir.h"
#include "runtime/artifact.h"

namespace fx = fluxion;
using fx::Array;
using fx::Tensor;
using fx::testing::ScopedEnv;

namespace {

Array uniform(const fx::Shape& shape, uint32_t seed) {
  return fx::testing::make(fx::f32, fx::testing::random_doubles(fx::numel(shape), -0.5, 0.5, seed), shape);
}

// `blocks` identical layers (a product and tanh), the value and gradient of a sum of squares,
// for the interpreter (which only evaluates it).
fx::Compiled layers_on_interpreter(int blocks, double scale) {
  auto loss = [blocks, scale](Tensor x, std::vector<Tensor> w) {
    for (int i = 0; i < blocks; ++i) x = fx::tanh(fx::matmul(x, w[static_cast<size_t>(i)]));
    return fx::sum(x * x) * scale;
  };
  std::vector<Array> w;
  for (int i = 0; i < blocks; ++i) w.push_back(Array(fx::f32, {64, 64}));
  return fx::jit(fx::value_and_grad(loss, {1}), fx::Backend::Interp).lower(Array(fx::f32, {96, 64}), w);
}

// The same as an IR program, for the CPU backend's compile (which the in-memory compile cache
// does not answer).
fx::ir::Program layers(int blocks, double scale) { return fx::ir::parse(layers_on_interpreter(blocks, scale).ir()); }

std::vector<Array> inputs(int blocks) {
  std::vector<Array> in{uniform({96, 64}, 1)};
  for (int i = 0; i < blocks; ++i) in.push_back(uniform({64, 64}, 10 + static_cast<uint32_t>(i)));
  return in;
}

std::vector<std::string> objects_of(const fx::backends::Executable& e) {
  fx::runtime::Artifact a;
  EXPECT_TRUE(e.export_to(a));
  return a.cpu.objects;
}

}  // namespace

TEST(CpuKernelModules, KernelsOfTheSameCodeAreCompiledOnce) {
  ScopedEnv no_disk("FLUXION_DISK_CACHE", "0");
  auto one = fx::cpu::compile(layers(1, 1.0));
  auto four = fx::cpu::compile(layers(4, 1.0));
  fx::runtime::CompileSummary s1 = one->compile_summary(), s4 = four->compile_summary();
  // Each block's forward and backward kernels are those of every other block.
  EXPECT_GE(s4.kernels, s1.kernels + 6) << four->describe();
  EXPECT_LE(s4.compiled, s1.compiled + 2) << four->describe();
  EXPECT_GE(s1.compiled, 3u) << one->describe();  // the entry point and at least two products
  EXPECT_EQ(objects_of(*four).size(), s4.compiled);
  // The shared code computes every block: the interpreter agrees.
  std::vector<Array> in = inputs(4);
  std::vector<Array> got = four->run(in), want = layers_on_interpreter(4, 1.0).run(in);
  ASSERT_EQ(got.size(), 5u);
  for (size_t i = 0; i < got.size(); ++i) {
    std::vector<double> g = got[i].to_doubles(), w = want[i].to_doubles();
    ASSERT_EQ(g.size(), w.size());
    for (size_t j = 0; j < g.size(); ++j) EXPECT_NEAR(g[j], w[j], 1e-4 * (1 + std::abs(w[j]))) << i << " " << j;
  }
}

TEST(CpuKernelModules, TheCodeIsTheSameOnOneThreadAndOnSeveral) {
  ScopedEnv no_disk("FLUXION_DISK_CACHE", "0");
  int before = fx::num_threads();
  fx::ir::Program p = layers(3, 0.5);
  fx::set_num_threads(1);
  auto serial = fx::cpu::compile(p);
  fx::set_num_threads(3);
  auto parallel = fx::cpu::compile(p);
  fx::set_num_threads(before);
  EXPECT_EQ(serial->compile_summary().threads, 1);
  EXPECT_EQ(parallel->compile_summary().threads, 3);
  EXPECT_EQ(objects_of(*serial), objects_of(*parallel));
  std::vector<Array> in = inputs(3), a = serial->run(in), b = parallel->run(in);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(fx::testing::bitwise_equal(a[i], b[i])) << i;
}

TEST(CpuKernelModules, AnotherProgramFindsTheKernelsItSharesInTheDiskCache) {
  std::string dir = fx::testing::temp_path("kernel_module_cache_test");
  std::filesystem::remove_all(dir);
  ScopedEnv cache_dir("FLUXION_CACHE_DIR", dir.c_str());
  ScopedEnv disk("FLUXION_DISK_CACHE", "1");
  auto alone = [] {
    ScopedEnv no_disk("FLUXION_DISK_CACHE", "0");
    return fx::cpu::compile(layers(2, 3.0))->compile_summary();
  }();
  fx::cpu::compile(layers(2, 1.0));
  // Only the scale differs: its blocks' kernels are found, compiled for the program before.
  auto sharing = fx::cpu::compile(layers(2, 3.0));
  EXPECT_LT(sharing->compile_summary().compiled, alone.compiled);
  std::vector<Array> in = inputs(2);
  auto fresh = [&] {
    ScopedEnv no_disk("FLUXION_DISK_CACHE", "0");
    return fx::cpu::compile(layers(2, 3.0));
  }();
  std::vector<Array> a = sharing->run(in), b = fresh->run(in);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(fx::testing::bitwise_equal(a[i], b[i])) << i;
  std::filesystem::remove_all(dir);
}

TEST(CpuKernelModules, AnExportedProgramOfSeveralObjectsLoadsAndRunsBitwise) {
  ScopedEnv no_disk("FLUXION_DISK_CACHE", "0");
  auto c = fx::jit(
               [](Tensor x, std::vector<Tensor> w) {
                 for (const Tensor& wi : w) x = fx::tanh(fx::matmul(x, wi));
                 return fx::sum(x * x);
               },
               fx::Backend::Cpu)
               .lower(Array(fx::f32, {96, 64}), std::vector<Array>(2, Array(fx::f32, {64, 64})));
  std::string path = fx::testing::temp_path("kernel_modules.fxa");
  c.save(path);
  fx::runtime::Artifact a = fx::runtime::decode_artifact(fx::testing::read(path), path);
  EXPECT_GE(a.cpu.objects.size(), 2u);
  fx::Compiled loaded = fx::load(path);
  std::filesystem::remove(path);
  std::vector<Array> in = inputs(2);
  EXPECT_TRUE(fx::testing::bitwise_equal(loaded.run({in[0], in[1], in[2]})[0], c.run({in[0], in[1], in[2]})[0]));
}
