// What a user sees of compiling: every compile in fluxion::compile_times() and the profiler's
// table, and a line on stderr for one that takes longer than FLUXION_COMPILE_NOTICE_SECONDS.
#include <gtest/gtest.h>

#include <fluxion/fluxion.h>
#include <fluxion/profile.h>

#include <string>

#include "common/scoped_env.h"
#include "common/test_util.h"

namespace fx = fluxion;
using fx::Array;
using fx::Tensor;
using fx::testing::ScopedEnv;

namespace {

class CompileTimes : public ::testing::TestWithParam<fx::Backend> {};

// A program of its own structure (the constant) for each call, so that each compiles.
double compile_one(fx::Backend backend, double constant) {
  auto f = fx::jit([constant](Tensor x) { return fx::sum(fx::exp(x) * constant); }, backend);
  return f(Array(std::vector<float>{0.5f, -1, 2}, {3})).item();
}

}  // namespace

TEST_P(CompileTimes, EveryCompileIsListedAndASlowOneSaysSoOnce) {
  ScopedEnv no_disk("FLUXION_DISK_CACHE", "0");  // each program really compiles
  fx::reset_kernel_times();
  const char* backend = fx::backend_name(GetParam());
  {
    ScopedEnv after("FLUXION_COMPILE_NOTICE_SECONDS", "0.000001");
    ::testing::internal::CaptureStderr();
    compile_one(GetParam(), 1.0 + 0.125 * static_cast<int>(GetParam()));
    compile_one(GetParam(), 1.0 + 0.125 * static_cast<int>(GetParam()));  // the compile cache's: no compile
    std::string err = ::testing::internal::GetCapturedStderr();
    std::string want = std::string(" for ") + backend + " in ";
    EXPECT_NE(err.find("fluxion: compiled program @main (traced from "), std::string::npos) << err;
    EXPECT_NE(err.find("compile_times_test.cpp:"), std::string::npos) << err;
    EXPECT_NE(err.find(want), std::string::npos) << err;
    EXPECT_EQ(err.find("fluxion: compiled"), err.rfind("fluxion: compiled")) << err;
    EXPECT_NE(err.find("FLUXION_COMPILE_NOTICES=off hides this line"), std::string::npos) << err;
  }
  {
    ScopedEnv after("FLUXION_COMPILE_NOTICE_SECONDS", "0.000001");
    ScopedEnv off("FLUXION_COMPILE_NOTICES", "off");
    ::testing::internal::CaptureStderr();
    compile_one(GetParam(), 2.0 + 0.125 * static_cast<int>(GetParam()));
    EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  }
  {
    ::testing::internal::CaptureStderr();  // the default: a second
    compile_one(GetParam(), 3.0 + 0.125 * static_cast<int>(GetParam()));
    std::string err = ::testing::internal::GetCapturedStderr();
    std::vector<fx::CompileTime> times = fx::compile_times();
    ASSERT_FALSE(times.empty());
    EXPECT_EQ(err.empty(), times.back().seconds < 1) << err;
  }
  std::vector<fx::CompileTime> times = fx::compile_times();
  ASSERT_EQ(times.size(), 3u);
  for (const fx::CompileTime& t : times) {
    EXPECT_EQ(t.backend, backend);
    EXPECT_NE(t.program.find("compile_times_test.cpp:"), std::string::npos) << t.program;
    EXPECT_GT(t.seconds, 0);
    if (GetParam() != fx::Backend::Interp) {
      EXPECT_GE(t.kernels, 1u);
    }
    if (GetParam() == fx::Backend::Cpu) {
      EXPECT_GE(t.compiled, 1u);  // the entry point at least
      EXPECT_GE(t.threads, 1);
    }
  }
  std::string table = fx::kernel_time_table();
  EXPECT_NE(table.find("compiled program @main (traced from "), std::string::npos) << table;
  fx::reset_kernel_times();
  EXPECT_TRUE(fx::compile_times().empty());
}

TEST(CompileNotices, ASecondsValueThatIsNotANumberIsAnError) {
  ScopedEnv bad("FLUXION_COMPILE_NOTICE_SECONDS", "soon");
  try {
    compile_one(fx::Backend::Interp, 4.5);
    FAIL() << "no error";
  } catch (const fx::Error& e) {
    EXPECT_NE(std::string(e.what()).find("FLUXION_COMPILE_NOTICE_SECONDS"), std::string::npos) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, CompileTimes, ::testing::ValuesIn(fx::available_backends()),
                         fx::testing::backend_param_name);
