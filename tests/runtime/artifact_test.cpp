// Exported programs: Compiled::save then fluxion::load runs bitwise like the program compiled in
// this process, without tracing or compiling; every file that is not a sound artifact for this
// machine is refused with an Error that names what is wrong.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/artifact_programs.h"
#include "fluxion/error.h"
#include "runtime/artifact.h"
#include "runtime/cpu/helpers.h"
#include "support/files.h"

namespace fx = fluxion;
using namespace fluxion::testing;

namespace {

constexpr const char* kPinnedHelpers =
    "fx_parallel_for fx_collective fx_collective_start fx_collective_wait fx_parallel_parts fx_parallel_group "
    "fx_profile_mark fx_rng fx_rng_fold fx_debug_print ";

class ArtifactTest : public ::testing::Test {
 protected:
  void SetUp() override {
    program_ = training_step(fx::Backend::Cpu);
    path_ = temp_path("step.fxa");
    program_.save(path_, {{"w1", "b1", "w2", "x", "y"}, {"w1", "b1", "w2", "loss", "halvings", "label"}});
  }
  void TearDown() override { std::filesystem::remove(path_); }

  // `path_`'s artifact, changed by `edit`, re-encoded (a sound file whose content differs).
  std::string edited(const std::function<void(fx::runtime::Artifact&)>& edit) {
    fx::runtime::Artifact a = fx::runtime::decode_artifact(read(path_), path_);
    edit(a);
    std::string p = temp_path("edited.fxa");
    write(p, fx::runtime::encode_artifact(a));
    return p;
  }

  fx::Compiled program_;
  std::string path_;
};

TEST_F(ArtifactTest, LoadedProgramRunsBitwiseWithoutTracingOrCompiling) {
  fx::reset_counters();
  fx::Compiled loaded = fx::load(path_);
  std::vector<fx::Array> in = inputs_of(program_, 11);
  std::vector<fx::Array> got = loaded.run(in);
  fx::RuntimeCounters c = fx::counters();
  EXPECT_EQ(c.traces, 0u);
  EXPECT_EQ(c.compiles, 0u);
  EXPECT_EQ(c.disk_cache_hits, 0u);
  EXPECT_EQ(c.loads, 1u);
  std::vector<fx::Array> want = program_.run(in);
  ASSERT_EQ(got.size(), want.size());
  for (size_t k = 0; k < want.size(); ++k) EXPECT_TRUE(bitwise_equal(got[k], want[k])) << "result " << k;
  EXPECT_EQ(loaded.input_types(), program_.input_types());
  EXPECT_EQ(loaded.output_types(), program_.output_types());
  EXPECT_EQ(loaded.ir(), program_.ir());
  EXPECT_EQ(loaded.traced_ir(), program_.traced_ir());
  EXPECT_EQ(loaded.kernels(), program_.kernels());
  EXPECT_EQ(loaded.hash(), program_.hash());
  EXPECT_EQ(loaded.backend(), fx::Backend::Cpu);
  EXPECT_EQ(loaded.input_names(), (std::vector<std::string>{"w1", "b1", "w2", "x", "y"}));
  EXPECT_EQ(loaded.output_names()[3], "loss");
}

TEST_F(ArtifactTest, RunIntoUpdatesInPlaceLikeTheCompiledProgram) {
  fx::Compiled loaded = fx::load(path_);
  std::vector<fx::Array> a = inputs_of(program_, 21), b;
  for (const fx::Array& x : a) b.push_back(x.clone());
  auto outputs_over = [](std::vector<fx::Array>& in, const fx::Compiled& c) {
    std::vector<fx::Array> out{in[0], in[1], in[2]};
    for (size_t k = 3; k < c.output_types().size(); ++k)
      out.push_back(fx::Array::empty(c.output_types()[k].dtype, c.output_types()[k].shape));
    return out;
  };
  std::vector<fx::Array> oa = outputs_over(a, program_), ob = outputs_over(b, loaded);
  for (int step = 0; step < 3; ++step) {
    program_.run_into(a, oa);
    loaded.run_into(b, ob);
  }
  for (size_t k = 0; k < oa.size(); ++k) EXPECT_TRUE(bitwise_equal(oa[k], ob[k])) << "output " << k;
}

TEST_F(ArtifactTest, ALoadedProgramSavesTheSameFile) {
  std::string again = temp_path("again.fxa");
  fx::load(path_).save(again);
  EXPECT_EQ(read(again), read(path_));
  std::filesystem::remove(again);
}

TEST_F(ArtifactTest, CodeForAnotherCpuIsRefusedAndRecompiledFromItsIr) {
  std::string p = edited([](fx::runtime::Artifact& a) { a.cpu.required.push_back("fluxion-test-extension"); });
  try {
    fx::load(p);
    ADD_FAILURE() << "loaded code for a CPU extension this machine lacks";
  } catch (const fx::Error& e) {
    EXPECT_NE(std::string(e.what()).find("uses instructions this CPU lacks: fluxion-test-extension"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("load_or_compile"), std::string::npos) << e.what();
  }
  fx::Compiled again = fx::load_or_compile(p);
  std::vector<fx::Array> in = inputs_of(program_, 31);
  std::vector<fx::Array> got = again.run(in), want = program_.run(in);
  for (size_t k = 0; k < want.size(); ++k) EXPECT_TRUE(bitwise_equal(got[k], want[k])) << "result " << k;
  EXPECT_EQ(again.input_names()[0], "w1");
  std::filesystem::remove(p);
}

TEST_F(ArtifactTest, AnotherHelperInterfaceIsRefused) {
  std::string p = edited([](fx::runtime::Artifact& a) { a.cpu.helpers_abi = fx::cpu::kHelpersAbi + 1; });
  EXPECT_THROW(
      {
        try {
          fx::load(p);
        } catch (const fx::Error& e) {
          EXPECT_NE(std::string(e.what()).find("version " + std::to_string(fx::cpu::kHelpersAbi + 1) +
                                               " of the runtime's helpers"),
                    std::string::npos)
              << e.what();
          throw;
        }
      },
      fx::Error);
  std::filesystem::remove(p);
}

// The message of load's Error for the file `bytes`, or "" when it loads.
std::string load_error(const std::string& bytes) {
  std::string p = temp_path("bad.fxa");
  write(p, bytes);
  std::string message;
  try {
    fx::load(p);
  } catch (const fx::Error& e) {
    message = e.what();
  }
  std::filesystem::remove(p);
  return message;
}

TEST_F(ArtifactTest, DamagedFilesAreRefusedByName) {
  std::string good = read(path_);
  EXPECT_NE(load_error("not an artifact").find("not a Fluxion artifact"), std::string::npos);
  EXPECT_NE(load_error(good.substr(0, good.size() / 2)).find("truncated"), std::string::npos);
  EXPECT_NE(load_error(good.substr(0, 20)).find("header is cut off"), std::string::npos);
  std::string flipped = good;
  flipped[good.size() - 100] ^= 0x10;
  EXPECT_NE(load_error(flipped).find("checksum does not match"), std::string::npos);
  std::string other_format = good;
  other_format[std::strlen("FLUXION ARTIFACT\n")] = 9;
  EXPECT_NE(load_error(other_format).find("artifact format 9"), std::string::npos);
  try {
    fx::load(temp_path("missing.fxa"));
    ADD_FAILURE() << "loaded a missing file";
  } catch (const fx::Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot open"), std::string::npos) << e.what();
  }
}

// Every length of an artifact cut short: load raises Error, never crashes.
TEST_F(ArtifactTest, EveryTruncationIsAnError) {
  std::string good = read(path_);
  for (size_t n = 0; n < good.size(); n += 1 + good.size() / 200)
    EXPECT_FALSE(load_error(good.substr(0, n)).empty()) << n;
}

TEST_F(ArtifactTest, ABadPayloadIsRefusedEvenWithItsChecksumRight) {
  // A sound header and checksum over fields that do not make a program.
  std::string p = edited([](fx::runtime::Artifact& a) { a.cpu.layout.output_slots.pop_back(); });
  std::string bytes = read(p);
  EXPECT_NE(load_error(bytes).find("does not list every output"), std::string::npos) << load_error(bytes);
  p = edited([](fx::runtime::Artifact& a) { a.cpu.objects.front() = "junk"; });
  EXPECT_NE(load_error(read(p)).find("cannot link its native code: shorter than an ELF header"), std::string::npos)
      << load_error(read(p));
  p = edited([](fx::runtime::Artifact& a) { a.cpu.objects.clear(); });
  EXPECT_NE(load_error(read(p)).find("field 'cpu.objects' is not a list of object files"), std::string::npos)
      << load_error(read(p));
  std::filesystem::remove(p);
}

TEST_F(ArtifactTest, AFailedSaveLeavesTheEarlierFileIntact) {
  std::string before = read(path_);
  fx::Compiled other =
      fx::jit([](fx::Tensor x) { return x * 2.0f; }, fx::Backend::Cpu).lower(make(fx::f32, {1, 2}, {2}));
  fx::support::fail_writes_after_for_testing(100);
  EXPECT_THROW(other.save(path_), fx::Error);
  fx::support::fail_writes_after_for_testing(-1);
  EXPECT_EQ(read(path_), before);
}

// An interpreter program is saved as its IR alone: load refuses it by name, and load_or_compile
// compiles it, without tracing, into the program that was saved.
TEST(ArtifactSave, InterpreterProgramsSaveTheirIrForLoadOrCompile) {
  auto f = [](fx::Tensor x, fx::Tensor w) { return fx::sum(fx::tanh(fx::matmul(x, w)), {1}); };
  fx::Array x = make(fx::f32, random_doubles(6 * 5, -1, 1, 41), {6, 5}),
            w = make(fx::f32, random_doubles(5 * 4, -1, 1, 42), {5, 4});
  std::string p = temp_path("ir_only.fxa");
  fx::Compiled c = fx::jit(f, fx::Backend::Interp).lower(x, w);
  c.save(p);
  try {
    fx::load(p);
    ADD_FAILURE() << "loaded a program without a compiled form";
  } catch (const fx::Error& e) {
    EXPECT_NE(std::string(e.what()).find("holds the IR of a program for the interp backend and no compiled form"),
              std::string::npos)
        << e.what();
  }
  fx::reset_counters();
  fx::Compiled again = fx::load_or_compile(p);
  EXPECT_EQ(fx::counters().traces, 0u);
  EXPECT_EQ(again.backend(), fx::Backend::Interp);
  EXPECT_EQ(again.hash(), c.hash());
  EXPECT_TRUE(bitwise_equal(again.run({x, w})[0], c.run({x, w})[0]));
  std::filesystem::remove(p);
}

TEST(ArtifactSave, NamesMustFitTheProgram) {
  fx::Compiled c =
      fx::jit([](fx::Tensor x) { return x + 1.0f; }, fx::Backend::Cpu).lower(make(fx::f32, {1, 2, 3}, {3}));
  std::string p = temp_path("names.fxa");
  EXPECT_THROW(c.save(p, {{"a", "b"}, {}}), fx::Error);
  EXPECT_THROW(c.save(p, {{"two\nlines"}, {}}), fx::Error);
  EXPECT_FALSE(std::filesystem::exists(p));
}

// The helpers generated code calls, by name: changing this list changes the interface exported
// programs were generated against, and then cpu::kHelpersAbi must increase.
TEST(CpuHelpers, TheInterfaceOfExportedCodeIsPinned) {
  std::string names;
  for (const fx::cpu::RuntimeSymbol& s : fx::cpu::runtime_symbols()) names += std::string(s.name) + " ";
  EXPECT_EQ(fx::cpu::kHelpersAbi, 4u);
  EXPECT_EQ(names, kPinnedHelpers) << "update kHelpersAbi (runtime/cpu/helpers.h) and this list together";
}

}  // namespace
