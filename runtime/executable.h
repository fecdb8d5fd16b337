// What every backend's compiled program is at run time, whether the JIT just compiled it or it
// was loaded from an exported artifact: run it many times.
#pragma once

#include <string>
#include <vector>

#include "fluxion/array.h"

namespace fluxion::runtime {

struct Artifact;

// What compiling a program took, besides time: its kernels, and how many units of code (CPU:
// LLVM modules; 0 where the backend does not say) were compiled for it on how many threads,
// the others' code being shared with another kernel or found in the on-disk cache.
struct CompileSummary {
  size_t kernels = 0;
  size_t compiled = 0;
  int threads = 1;
};

class Executable {
 public:
  virtual ~Executable() = default;
  // Runs on inputs already checked against the program's parameter types.
  virtual std::vector<Array> run(const std::vector<Array>& inputs) const = 0;
  // Runs writing the results into `outputs` (checked against the result types). Outputs may
  // share memory with inputs: results are then staged and copied after the inputs are read.
  virtual void run_into(const std::vector<Array>& inputs, std::vector<Array>& outputs) const;
  // The compiled form: kernels and the graph ops each contains (empty when there are none).
  virtual std::string describe() const { return ""; }
  // The line of describe() for the kernel that computes the node at `path` (see
  // kernel::kernel_containing); "" when there is none, or no kernels (the interpreter).
  virtual std::string kernel_containing(const std::vector<size_t>& /*path*/) const { return ""; }
  // Fills `a`'s backend part (its compiled form) for Compiled::save; false when this backend has
  // no compiled form (the interpreter: the file then holds the program's IR alone).
  virtual bool export_to(Artifact& /*a*/) const { return false; }
  virtual CompileSummary compile_summary() const { return {}; }
};

}  // namespace fluxion::runtime
