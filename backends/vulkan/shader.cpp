// glslang and SPIRV-Tools, kept behind compile_glsl (docs/vulkan.md: shader generation).
#include "backends/vulkan/shader.h"

#include <glslang/Public/ResourceLimits.h>
#include <glslang/Public/ShaderLang.h>
#include <glslang/SPIRV/GlslangToSpv.h>
#include <glslang/build_info.h>
#include <spirv-tools/libspirv.hpp>
#include <spirv-tools/optimizer.hpp>

#include <cstring>
#include <mutex>
#include <sstream>

#include "fluxion/error.h"
#include "runtime/counters.h"
#include "runtime/disk_cache.h"

namespace fluxion::vulkan {
namespace {

std::once_flag glslang_once;

std::string numbered(const std::string& src) {
  std::istringstream in(src);
  std::ostringstream out;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) out << n << ": " << line << "\n";
  return out.str();
}

constexpr spv_target_env kEnv = SPV_ENV_VULKAN_1_2;

}  // namespace

std::string validate_spirv(const std::vector<uint32_t>& spirv) {
  spvtools::SpirvTools tools(kEnv);
  std::string message;
  tools.SetMessageConsumer([&](spv_message_level_t, const char*, const spv_position_t& pos, const char* m) {
    message += "word " + std::to_string(pos.index) + ": " + m + "\n";
  });
  spvtools::ValidatorOptions options;
  options.SetScalarBlockLayout(true);
  if (!tools.Validate(spirv.data(), spirv.size(), options)) return message.empty() ? "invalid SPIR-V" : message;
  return "";
}

namespace {

// SPIRV-Tools' performance recipe (spirv-opt -O) without conditional constant propagation: in
// SPIRV-Tools 2023.1 (Debian 12) that pass turned a loop-carried integer min or max of a
// reduction (accumulated over a column loop, then stored to workgroup memory) into the
// accumulator's initial value, so min(argmin(x over a size-1 axis)) gave INT32_MAX
// (Reduce.ArgminOverASizeOneAxisReducedAgain). The rest is -O's list in its order (with the
// dead-code pass that followed CCP merged into the one before it); simplify-instructions still
// folds constants.
const std::vector<std::string>& performance_passes() {
  static const std::vector<std::string> passes = [] {
    const std::vector<std::string> to_ssa{"--scalar-replacement=100",         "--convert-local-access-chains",
                                          "--eliminate-local-single-block",   "--eliminate-local-single-store",
                                          "--eliminate-dead-code-aggressive", "--ssa-rewrite",
                                          "--eliminate-dead-code-aggressive"};
    std::vector<std::string> p{"--wrap-opkill",
                               "--eliminate-dead-branches",
                               "--merge-return",
                               "--inline-entry-points-exhaustive",
                               "--eliminate-dead-functions",
                               "--eliminate-dead-code-aggressive",
                               "--private-to-local",
                               "--eliminate-local-single-block",
                               "--eliminate-local-single-store",
                               "--eliminate-dead-code-aggressive"};
    p.insert(p.end(), to_ssa.begin(), to_ssa.end());
    for (const char* pass : {"--loop-unroll", "--eliminate-dead-branches", "--redundancy-elimination",
                             "--combine-access-chains", "--simplify-instructions"})
      p.emplace_back(pass);
    p.insert(p.end(), to_ssa.begin(), to_ssa.end());
    for (const char* pass :
         {"--vector-dce", "--eliminate-dead-inserts", "--eliminate-dead-branches", "--simplify-instructions",
          "--if-conversion", "--copy-propagate-arrays", "--reduce-load-size", "--eliminate-dead-code-aggressive",
          "--merge-blocks", "--redundancy-elimination", "--eliminate-dead-branches", "--merge-blocks",
          "--simplify-instructions"})
      p.emplace_back(pass);
    return p;
  }();
  return passes;
}

}  // namespace

std::vector<uint32_t> compile_glsl(const std::string& glsl, const std::string& name) {
  std::call_once(glslang_once, [] { glslang::InitializeProcess(); });
  glslang::TShader shader(EShLangCompute);
  const char* src = glsl.c_str();
  shader.setStrings(&src, 1);
  shader.setEnvInput(glslang::EShSourceGlsl, EShLangCompute, glslang::EShClientVulkan, 100);
  shader.setEnvClient(glslang::EShClientVulkan, glslang::EShTargetVulkan_1_2);
  shader.setEnvTarget(glslang::EShTargetSpv, glslang::EShTargetSpv_1_5);
  auto messages = static_cast<EShMessages>(EShMsgSpvRules | EShMsgVulkanRules);
  if (!shader.parse(GetDefaultResources(), 460, false, messages)) {
    detail::fail("vulkan codegen",
                 "internal error: GLSL of " + name + " does not compile:\n" + shader.getInfoLog() + numbered(glsl));
  }
  glslang::TProgram program;
  program.addShader(&shader);
  if (!program.link(messages)) {
    detail::fail("vulkan codegen", "internal error: GLSL of " + name + " does not link:\n" + program.getInfoLog());
  }
  std::vector<uint32_t> spirv;
  glslang::SpvOptions spv_options;
  spv_options.disableOptimizer = true;
  glslang::GlslangToSpv(*program.getIntermediate(EShLangCompute), spirv, &spv_options);

  spvtools::Optimizer opt(kEnv);
  std::string opt_message;
  opt.SetMessageConsumer([&](spv_message_level_t level, const char*, const spv_position_t&, const char* m) {
    if (level <= SPV_MSG_ERROR) opt_message += std::string(m) + "\n";
  });
  if (!opt.RegisterPassesFromFlags(performance_passes())) {
    detail::fail("vulkan codegen", "internal error: SPIRV-Tools does not know the optimisation passes");
  }
  std::vector<uint32_t> optimised;
  spvtools::OptimizerOptions oo;
  oo.set_run_validator(false);
  if (!opt.Run(spirv.data(), spirv.size(), &optimised, oo)) {
    detail::fail("vulkan codegen", "internal error: SPIRV-Tools could not optimise " + name + ": " + opt_message);
  }
  std::string invalid = validate_spirv(optimised);
  if (!invalid.empty()) {
    detail::fail("vulkan codegen", "internal error: SPIR-V of " + name + " is invalid: " + invalid + numbered(glsl));
  }
  return optimised;
}

std::vector<uint32_t> compile_glsl_cached(const std::string& glsl, const std::string& name) {
  std::string key = "fluxion-spirv-2\nglslang " + std::to_string(GLSLANG_VERSION_MAJOR) + "." +
                    std::to_string(GLSLANG_VERSION_MINOR) + "\n" + glsl;
  bool found = false;
  std::string bytes = runtime::disk_cache_load(key, &found);
  if (found && bytes.size() % 4 == 0 && !bytes.empty()) {
    std::vector<uint32_t> words(bytes.size() / 4);
    std::memcpy(words.data(), bytes.data(), bytes.size());
    if (validate_spirv(words).empty()) {
      runtime::counters().disk_cache_hits++;
      return words;
    }
  }
  std::vector<uint32_t> spirv = compile_glsl(glsl, name);
  runtime::disk_cache_store(key, std::string(reinterpret_cast<const char*>(spirv.data()), spirv.size() * 4));
  return spirv;
}

}  // namespace fluxion::vulkan
