// The differential fuzzer's shrinking, driven by stand-in checks that "fail" whenever a program
// holds a live step of a given kind: shrinking must leave that one step and nothing else, and
// every program it tries must still be well-typed (it traces and differentiates).
#include <gtest/gtest.h>

#include <string>

#include "difffuzz/check.h"

namespace fx = fluxion;
namespace df = fluxion::difffuzz;

namespace {

bool holds(const df::Spec& spec, df::StepKind kind) {
  for (size_t k = 0; k < spec.length; ++k)
    if (spec.live(k) && spec.steps[k].kind == kind) return true;
  return false;
}

df::Check fails_when_it_holds(df::StepKind kind) {
  return [kind](const df::Spec& spec, const std::vector<fx::Backend>&) {
    return holds(spec, kind) ? std::string("stand-in: holds the step") : std::string();
  };
}

// The first generated program from seed 0 on that holds a step of `kind` among at least 5 steps.
df::Spec first_holding(df::StepKind kind) {
  for (uint64_t seed = 0;; ++seed) {
    df::Spec spec = df::generate(seed, 12);
    if (holds(spec, kind) && spec.live_steps() >= 5) return spec;
  }
}

}  // namespace

TEST(DiffFuzzShrink, AProgramThatFailsWhenItHoldsAStepKindShrinksToThatStepAlone) {
  using K = df::StepKind;
  for (K kind : {K::Gather, K::Take, K::ScatterAdd, K::While, K::CustomVjp, K::CustomJvp, K::Select, K::Cast,
                 K::Compare, K::Binary, K::MatMul, K::Scan}) {
    df::Spec spec = first_holding(kind);
    df::Spec small = df::shrink(spec, {}, fails_when_it_holds(kind));
    SCOPED_TRACE("seed " + std::to_string(spec.seed) + ":\n" + spec.describe() + "shrunk to:\n" + small.describe());
    EXPECT_TRUE(holds(small, kind));
    EXPECT_EQ(small.live_steps(), 1u);
    EXPECT_NO_THROW(df::gradient_ir(small));
  }
}

TEST(DiffFuzzShrink, AShrunkProgramPassesTheRealChecksOnEveryBackend) {
  df::Spec small = df::shrink(first_holding(df::StepKind::Gather), {}, fails_when_it_holds(df::StepKind::Gather));
  EXPECT_EQ(df::check(small, fx::available_backends()), "") << small.describe();
}

TEST(DiffFuzzShrink, EverySimplificationIsWellTyped) {
  // Each variant the shrinker may try, of a few programs, traces and differentiates.
  for (uint64_t seed = 0; seed < 8; ++seed) {
    df::Spec spec = df::generate(seed);
    for (const df::Spec& smaller : df::simplifications(spec)) {
      EXPECT_NO_THROW(df::gradient_ir(smaller)) << "seed " << seed << ":\n" << smaller.describe();
    }
  }
}

TEST(DiffFuzzShrink, FailuresAreAlikeWhenOnlyTheirNumbersDiffer) {
  EXPECT_EQ(df::failure_kind("result 1 on cpu: element 3 is 1, expected 2"),
            df::failure_kind("result 2 on cpu: element 0 is 7, expected 5"));
  EXPECT_NE(df::failure_kind("result 1 on cpu: element 3 is 1, expected 2"),
            df::failure_kind("result 1 on vulkan: element 3 is 1, expected 2"));
  EXPECT_EQ(df::failure_kind("jvp on cpu is 0.5, finite differences 0.25"),
            df::failure_kind("jvp on cpu is 1.5, finite differences 2"));
  EXPECT_EQ(df::failure_kind("exception: fluxion: op 'take': bad thing 3"),
            df::failure_kind("exception: fluxion: op 'take': bad thing 4"));
  EXPECT_NE(df::failure_kind("exception: fluxion: op 'take': bad thing"),
            df::failure_kind("exception: fluxion: op 'gather': bad thing"));
}
