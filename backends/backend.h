// The interface every backend implements: compile a graph-IR program once, run it many times.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "fluxion/array.h"
#include "fluxion/backend.h"
#include "jit/ir/ir.h"

namespace fluxion::backends {

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
};

// Compiles `p` for `backend`. Raises Error when the backend is not built or not usable here.
std::unique_ptr<Executable> compile(const ir::Program& p, Backend backend);

}  // namespace fluxion::backends
