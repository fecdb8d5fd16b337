// An exported program (docs/deploy.md): what Compiled::save writes and fluxion::load reads. The
// file is a header (magic, format version, payload size, checksum) and a payload of named
// fields, so a reader can name what is missing or damaged and a later version can add fields
// that an earlier one skips. This layer only encodes and decodes; load.cpp decides whether the
// compiled form fits the machine.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fluxion/backend.h"
#include "fluxion/dtype.h"
#include "runtime/cpu/program.h"
#include "runtime/vulkan/program.h"
#include "runtime/vulkan/shader_target.h"

namespace fluxion::runtime {

// The payload's layout and meaning. A reader refuses any other version: a change that an older
// reader would misread bumps it.
// 2: Vulkan recordings hold prints; CPU code is several objects.
inline constexpr uint32_t kArtifactFormat = 2;

// The CPU backend's compiled form.
struct CpuCode {
  // Relocatable x86-64 ELF objects, linked in order: each may call functions the ones before it
  // define; the last defines the entry point fx_entry.
  std::vector<std::string> objects;
  std::string arch = "x86_64";
  std::string cpu;                    // LLVM's name of the CPU it was tuned for (informative)
  std::string llvm_features;          // every LLVM subtarget feature it was generated with (informative)
  std::vector<std::string> required;  // the instruction-set extensions it may use (checked)
  uint32_t helpers_abi = 0;           // cpu::kHelpersAbi of the library that generated it
  cpu::CpuLayout layout;
};

// The Vulkan backend's compiled form: the recording a call replays and the SPIR-V of its
// pipelines, for devices whose shaders can do `target`.
struct VulkanCode {
  vulkan::ShaderTarget target;
  std::string device;                // the device it was compiled on (informative)
  int64_t loop_iteration_limit = 0;  // the device's cap on loop iterations it was recorded for
  vulkan::VulkanLayout layout;
  vulkan::Recording recording;                 // its dispatches' pipelines are null here
  std::vector<uint32_t> dispatch_shaders;      // per dispatch: its index into `shaders`
  std::vector<std::vector<uint32_t>> shaders;  // SPIR-V modules
};

struct Artifact {
  Backend backend = Backend::Cpu;
  std::string fluxion_version;  // of the library that wrote it (informative)
  uint64_t hash = 0;            // Compiled::hash() of the program
  std::vector<TensorType> inputs, outputs;
  std::vector<std::string> input_names, output_names;  // "" where none was given
  std::string traced_ir;                               // the program as traced, which the full library can re-compile
  std::string ir;                                      // the program that runs, after simplification
  std::string kernels;                                 // Compiled::kernels() of the program
  bool compiled = false;                               // whether it holds the compiled form, or the IR alone
  CpuCode cpu;                                         // when compiled for the CPU
  VulkanCode vulkan;                                   // when compiled for Vulkan
};

// The file's bytes.
std::string encode_artifact(const Artifact& a);
// Reads the bytes of an artifact; `source` names it in errors (a path). Raises Error naming
// what is wrong: not an artifact, another format version, a damaged (checksum) or truncated
// file, a missing or malformed field. Never reads outside `bytes`.
Artifact decode_artifact(std::string_view bytes, const std::string& source);

}  // namespace fluxion::runtime
