// The differential fuzzer in the test suite: a fixed range of seeds (FLUXION_DIFFFUZZ_SEEDS=
// "first,count" changes it), each program checked on every backend against the interpreter and
// against finite differences, and every third one vmapped against a loop of single calls; and the
// programs it has found failing, replayed.
#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <string>

#include "difffuzz/check.h"

namespace fx = fluxion;
namespace df = fluxion::difffuzz;

namespace {

std::vector<fx::Backend> compiled_backends() {
  std::vector<fx::Backend> out;
  for (fx::Backend b : fx::available_backends())
    if (b != fx::Backend::Interp) out.push_back(b);
  return out;
}

// The suite's seed range: what fits the difffuzz label's minute on a 2-core machine.
constexpr uint64_t kSuiteSeeds = 50;

std::pair<uint64_t, uint64_t> seed_range() {
  uint64_t first = 0, count = kSuiteSeeds;
  if (const char* env = std::getenv("FLUXION_DIFFFUZZ_SEEDS")) {
    std::string s = env;
    size_t comma = s.find(',');
    first = std::stoull(s.substr(0, comma));
    if (comma != std::string::npos) count = std::stoull(s.substr(comma + 1));
  }
  return {first, count};
}

// Checks the program `make` gives for every `stride`-th seed of the range with `check`, and
// reports each failure shrunk (the first three: a broken backend would fail most programs).
void check_seed_range(
    const df::Check& check, uint64_t stride,
    const std::function<df::Spec(uint64_t)>& make = [](uint64_t seed) { return df::generate(seed); }) {
  auto [first, count] = seed_range();
  std::vector<fx::Backend> backends = compiled_backends();
  int failures = 0;
  for (uint64_t seed = first; seed < first + count && failures < 3; seed += stride) {
    df::Spec spec = make(seed);
    if (check(spec, backends).empty()) continue;
    ++failures;
    df::Spec small = df::shrink(spec, backends, check);
    ADD_FAILURE() << df::report(small, check(small, backends));
  }
}

}  // namespace

TEST(DiffFuzz, GeneratorIsDeterministicAndTheSuiteSeedsCoverEveryStepKindAndDtype) {
  std::vector<int> kinds(df::kStepKinds), dtypes(4);
  for (uint64_t seed = 0; seed < kSuiteSeeds; ++seed) {
    df::Spec a = df::generate(seed), b = df::generate(seed);
    ASSERT_EQ(a.describe(), b.describe());
    for (const df::Step& st : a.steps) {
      ++kinds[static_cast<size_t>(st.kind)];
      ++dtypes[static_cast<size_t>(a.pool[static_cast<size_t>(st.result)].dtype)];
    }
  }
  for (size_t k = 0; k < kinds.size(); ++k) EXPECT_GT(kinds[k], 0) << "step kind " << k << " never generated";
  for (fx::DType t : {fx::DType::f64, fx::DType::i32, fx::DType::boolean})
    EXPECT_GT(dtypes[static_cast<size_t>(t)], 0) << fx::dtype_name(t) << " never generated";
}

TEST(DiffFuzz, AProgramReplayedFromItsIrTextAgrees) {
  // What a failure report prints is runnable: the IR text of a generated program's gradient,
  // parsed and compiled again for every backend, agrees with the interpreter.
  df::Spec spec = df::generate(7);
  std::string ir = df::gradient_ir(spec);
  EXPECT_NE(ir.find("func @main"), std::string::npos) << ir;
  EXPECT_EQ(df::replay(ir, spec.seed, compiled_backends()), "");
}

TEST(DiffFuzz, FixedSeedRange) { check_seed_range(df::check, 1); }

// Every third seed of the range again under vmap (a third: each batched program costs a second
// set of compiles and finite differences).
TEST(DiffFuzz, FixedSeedRangeUnderVmap) { check_seed_range(df::check_vmap, 3); }

// Every other seed of the range again with every float in bf16 or f16 (by turns), against the
// f64 program within the tolerance its perturbed runs give.
TEST(DiffFuzz, FixedSeedRangeInHalves) {
  check_seed_range(df::check_halves, 2, [](uint64_t seed) {
    return df::in_dtype(df::generate(seed), seed % 4 ? fx::DType::f16 : fx::DType::bf16);
  });
}

// ---- Failures the fuzzer found, kept as regression tests (each fixed in the commit that added it).

TEST(DiffFuzzRegressions, Seed8TransposedOutputAlsoReducedInAFlatKernel) {
  // Seed 8 of the first generator (seeds now make other programs), shrunk: %2 = transpose %1;
  // the program returns sum(sin(%2)) and %2. The reduction kernel ran over one linear index
  // ("collapsed") but read %2 through the transpose's index math, which needs both indices: the
  // CPU code generator crashed. Fixed in KernelFrame::collapsible (a view read through its
  // index math is not a plain array).
  std::string ir = R"(func @main(%0: f64[2,1]) -> (f64[], f64[1,2]) {
  %1 = transpose %0 {perm=[1,0]} : f64[1,2]
  %2 = sin %1 : f64[1,2]
  %3 = reduce_sum %2 {axes=[0,1]} : f64[]
  return %3, %1
})";
  EXPECT_EQ(df::replay(ir, 8, compiled_backends()), "");
}
