// A Vulkan program at run time: the buffers and command buffers that replay its recording, and
// its calls (program.cpp). The JIT's executable makes one from the recording it compiles; a
// loaded artifact from the recording and SPIR-V it holds.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "fluxion/array.h"
#include "runtime/vulkan/context.h"
#include "runtime/vulkan/recording.h"

namespace fluxion::vulkan {

// What a call needs to know of a program besides its recording.
struct VulkanLayout {
  std::vector<TensorType> inputs, outputs;
  int64_t arena_bytes = 16;
  std::string label;  // how errors name the program (runtime::program_label)
};

// The recording of the program with more iterations recorded for unbounded while loop `loop`
// (a run that needed more left -(loop + 1) in its status word); empty for a program that cannot
// record again (a loaded one).
using Regrow = std::function<Recording(int loop)>;

class VulkanProgram {
 public:
  VulkanProgram(Context& ctx, VulkanLayout layout, Recording recording, Regrow regrow);
  ~VulkanProgram();
  VulkanProgram(const VulkanProgram&) = delete;
  VulkanProgram& operator=(const VulkanProgram&) = delete;

  // The results stay in device memory (Arrays read back on first host access).
  std::vector<Array> run(const std::vector<Array>& inputs) const;
  // Each output's storage becomes its result's device buffer (Compiled::run_into).
  void run_into(const std::vector<Array>& inputs, std::vector<Array>& outputs) const;
  // The recording calls replay now (it grows with an unbounded while loop's iterations).
  Recording recording() const;
  const VulkanLayout& layout() const;

 private:
  class State;
  std::unique_ptr<State> state_;
};

}  // namespace fluxion::vulkan
