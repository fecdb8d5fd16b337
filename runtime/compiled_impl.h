// What a Compiled holds: the program's signature and an executable, with the parts that only
// the full library has (the IR of a program compiled in this process, the numerics check's
// replay on the interpreter) behind virtual functions, so that the runtime-only library can
// hold a loaded program in the same class.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fluxion/compiled.h"
#include "runtime/executable.h"

namespace fluxion::detail {

struct CompiledImpl {
  virtual ~CompiledImpl() = default;
  virtual const runtime::Executable& executable() const = 0;
  virtual std::string ir() const = 0;
  virtual std::string traced_ir() const = 0;
  // Whether calls check their results for NaN and infinity now (fluxion::check_numerics), and
  // the check, given the inputs as they were before the call.
  virtual bool checks_numerics() const { return false; }
  virtual void check_results(const std::vector<Array>& /*inputs*/, const std::vector<Array>& /*outputs*/) const {}

  std::vector<TensorType> inputs, outputs;
  std::vector<std::string> input_names, output_names;
  Backend backend = Backend::Cpu;
  uint64_t hash = 0;
};

}  // namespace fluxion::detail
