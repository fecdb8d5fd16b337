// A program run whose results or working memory cannot be allocated raises fluxion::Error naming
// what it allocates, the bytes and the program, never std::bad_alloc, on every backend; the
// inputs are left as they were and the compiled program still runs afterwards.
// FLUXION_MEMORY_LIMIT (read at every call) simulates running out of host memory.
#include <gtest/gtest.h>

#include <new>
#include <string>

#include "common/scoped_env.h"
#include "common/test_names.h"

namespace {

class AllocationErrors : public BackendTest {};
FLUXION_INSTANTIATE_BACKENDS(AllocationErrors);

void expect_contains(const std::string& m, const std::vector<std::string>& parts) {
  for (const std::string& p : parts) EXPECT_NE(m.find(p), std::string::npos) << "missing '" << p << "' in: " << m;
}

Array ramp(int64_t n) {
  std::vector<float> v(static_cast<size_t>(n));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i) * 0.5f;
  return Array(v, {n});
}

}  // namespace

TEST_P(AllocationErrors, ResultsOverTheLimitRaiseAndLeaveTheInputsIntact) {
  auto f = jit([](Tensor x) { return fx::broadcast_to(x, {1000, 1000}) + 1.0; });
  Array x = ramp(1000);
  std::vector<float> before = x.to_vector<float>();
  int line = __LINE__ - 3;
  std::string m;
  {
    ScopedEnv limit("FLUXION_MEMORY_LIMIT", "100000");
    m = error_message([&] { f(x); });
  }
  // The results are 10^6 f32: 4000000 bytes.
  expect_contains(m, {"op 'call'", "program @main(f32[1000]) -> (f32[1000,1000])",
                      "allocation_errors_test.cpp:" + std::to_string(line), "4000000 for its results",
                      "over FLUXION_MEMORY_LIMIT=100000"});
  EXPECT_EQ(x.to_vector<float>(), before);
  // Without the limit the same function (its compiled program cached) runs.
  Array y = f(x);
  std::vector<float> got = y.to_vector<float>();
  ASSERT_EQ(got.size(), 1000000u);
  for (size_t i = 0; i < got.size(); i += 999) EXPECT_EQ(got[i], before[i % 1000] + 1.0f) << i;
  EXPECT_EQ(f.cache_size(), 1u);
}

TEST_P(AllocationErrors, AnInPlaceUpdateOverTheLimitChangesNothing) {
  auto f = jit([](Tensor x) { return x * 2.0 + 1.0; });
  Array x = ramp(1000);
  std::vector<float> before = x.to_vector<float>();
  fx::Compiled c = f.lower(x);
  std::vector<Array> in{x}, out{x};
  std::string m;
  {
    // Below anything a run allocates on any backend (the CPU backend's arena alone is 64 bytes).
    ScopedEnv limit("FLUXION_MEMORY_LIMIT", "1");
    m = error_message([&] { c.run_into(in, out); });
  }
  expect_contains(m, {"program @main(f32[1000]) -> (f32[1000])", "over FLUXION_MEMORY_LIMIT=1"});
  EXPECT_EQ(x.to_vector<float>(), before);
  c.run_into(in, out);
  std::vector<float> got = x.to_vector<float>();
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], before[i] * 2.0f + 1.0f) << i;
}

TEST_P(AllocationErrors, ALimitThatIsNotANumberIsAnError) {
  auto f = jit([](Tensor x) { return x + 1.0; });
  Array x = ramp(4);
  ScopedEnv limit("FLUXION_MEMORY_LIMIT", "4GB");
  expect_contains(error_message([&] { f(x); }), {"FLUXION_MEMORY_LIMIT", "'4GB' is not a number of bytes"});
}

TEST_P(AllocationErrors, ALargeEnoughLimitChangesNothing) {
  auto f = jit([](Tensor x) { return fx::broadcast_to(x, {100, 1000}) + 1.0; });
  ScopedEnv limit("FLUXION_MEMORY_LIMIT", "100000000");
  EXPECT_EQ(f(ramp(1000)).to_vector<float>()[1001], 1.5f);
}

// 10^12 f32 elements (4 TB) are under the shapes' cap of 2^40 elements, so the program traces;
// running it fails to allocate its result (the CPU backend), the interpreter's value (8 TB as
// doubles), or is refused when compiled (the Vulkan backend indexes with 32-bit integers).
TEST_P(AllocationErrors, ATrillionElementResultIsAnError) {
#ifdef __SANITIZE_ADDRESS__
  GTEST_SKIP() << "AddressSanitizer's allocator aborts on a 4 TB request instead of failing it";
#endif
  auto f = jit([](Tensor s) { return fx::broadcast_to(s, {1000000, 1000000}); });
  Array s = Array::scalar(2.0f);
  std::string m = error_message([&] { f(s); });
  switch (backend()) {
    case Backend::Cpu:
      expect_contains(m, {"out of memory: cannot allocate 4000000000000 bytes of host memory for result 0 "
                          "(f32[1000000,1000000]) of program @main(f32[]) -> (f32[1000000,1000000])"});
      break;
    case Backend::Interp:
      expect_contains(m, {"out of memory: cannot allocate 8000000000000 bytes of host memory for the value of op "
                          "'broadcast' -> f32[1000000,1000000] (held as doubles) of program @main(f32[])"});
      break;
    case Backend::Vulkan: expect_contains(m, {"f32[1000000,1000000] has 2^31 or more elements"}); break;
  }
  EXPECT_EQ(s.item(), 2.0);
  // With a limit, every backend that compiles it refuses it before trying.
  if (backend() != Backend::Vulkan) {
    ScopedEnv limit("FLUXION_MEMORY_LIMIT", "1000000000");
    expect_contains(error_message([&] { f(s); }),
                    {"4000000000000 for its results", "over FLUXION_MEMORY_LIMIT=1000000000"});
  }
}

// The interpreter counts the values it holds as doubles while it runs, not only the results.
TEST(AllocationErrorsInterp, TheInterpretersValuesCount) {
  auto f = fx::jit([](Tensor x) { return fx::sum(fx::broadcast_to(x, {1000, 1000}) * 2.0); }, Backend::Interp);
  ScopedEnv limit("FLUXION_MEMORY_LIMIT", "1000000");
  expect_contains(error_message([&] { f(ramp(1000)); }),
                  {"4 for its results", "for its values held as doubles, up to op 'broadcast'",
                   "over FLUXION_MEMORY_LIMIT=1000000"});
}
