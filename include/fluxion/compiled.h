// A compiled program, whether traced and compiled in this process (fluxion::jit, compile_flat)
// or loaded from a file that Compiled::save wrote (fluxion::load). The runtime-only library
// (fluxion::runtime, docs/deploy.md) provides this header, array.h, error.h, safetensors.h (the
// weights) and data.h, and nothing that traces or compiles.
#pragma once

#include <cstdint>
#include <memory>
#include <source_location>
#include <string>
#include <vector>

#include "fluxion/array.h"
#include "fluxion/backend.h"
#include "fluxion/error.h"

namespace fluxion {

namespace detail {
struct CompiledImpl;
}

// Names that Compiled::save records for the program's inputs and outputs (a loaded program
// reports them); empty, or one per input (output), without newlines.
struct SaveOptions {
  std::vector<std::string> input_names;
  std::vector<std::string> output_names;
};

// A program compiled for one input signature on one backend.
class Compiled {
 public:
  // Runs the program. Raises Error when `inputs` do not match input_types() (count, dtype or
  // shape) or a run-time check fails; the inputs are never modified.
  // Errors name `loc`, the caller's line (or, inside a jitted call, the jit's).
  std::vector<Array> run(const std::vector<Array>& inputs,
                         std::source_location loc = std::source_location::current()) const;
  // Runs the program writing its results into `outputs`, which must match output_types(): the
  // caller's preallocated buffers (gradients, updated parameters) are written in place, and on
  // the CPU backend a call this way allocates nothing on the heap. An output may be the same
  // Array as an input (an in-place update); it is written after every input is read. On
  // Vulkan each output's storage (which its copies share) becomes the result's device buffer,
  // so outputs end on the device, and a host pointer taken from one before is stale. Raises
  // Error when inputs or outputs do not match.
  void run_into(const std::vector<Array>& inputs, std::vector<Array>& outputs,
                std::source_location loc = std::source_location::current()) const;
  const std::vector<TensorType>& input_types() const;
  const std::vector<TensorType>& output_types() const;
  // The names given to save (a loaded program's), else "" each.
  const std::vector<std::string>& input_names() const;
  const std::vector<std::string>& output_names() const;
  Backend backend() const;
  // The graph IR that runs (after simplification), as text (docs/ir.md).
  std::string ir() const;
  // The IR as traced, before any pass.
  std::string traced_ir() const;
  // The compiled form: one line per kernel naming the graph ops it contains (docs/kernels.md);
  // empty for the interpreter, which runs the graph IR directly.
  std::string kernels() const;
  // Structural hash of the traced program: equal for equal structure, whatever C++ function
  // produced it.
  uint64_t hash() const;
  // Writes the program, its IR and its compiled form to `path` (atomically: a failed write
  // leaves any earlier file intact), for fluxion::load in this or another process, which then
  // neither traces nor compiles (docs/deploy.md): CPU programs as object code, Vulkan programs
  // as SPIR-V and their recorded dispatches; an interpreter program as its IR alone, which
  // load_or_compile compiles. Raises Error for names that do not fit, or when the file cannot
  // be written.
  void save(const std::string& path, const SaveOptions& options = {}) const;

  explicit Compiled(std::shared_ptr<const detail::CompiledImpl> impl = nullptr);

 private:
  std::shared_ptr<const detail::CompiledImpl> impl_;
};

// Loads a program that Compiled::save wrote. Checks the file's format version, its checksum and
// that its compiled form runs here (the CPU's instruction-set extensions and the runtime's helper
// interface; the Vulkan device's shader capabilities) and raises Error naming what does not
// match, or that the file holds no compiled form; it never runs code that does not fit. With the
// full library, fluxion::load_or_compile (fluxion/jit.h) compiles such a program from its IR.
Compiled load(const std::string& path);

}  // namespace fluxion
