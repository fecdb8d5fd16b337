#include "backends/interp/executable.h"

#include "eval/interpreter.h"
#include "runtime/counters.h"

namespace fluxion::interp {
namespace {

class InterpExecutable final : public backends::Executable {
 public:
  explicit InterpExecutable(const ir::Program& p) : program_(p) {}
  std::vector<Array> run(const std::vector<Array>& inputs) const override {
    runtime::counters().program_calls++;
    return eval::run(program_, inputs);
  }

 private:
  ir::Program program_;
};

}  // namespace

std::unique_ptr<backends::Executable> compile(const ir::Program& p) { return std::make_unique<InterpExecutable>(p); }

}  // namespace fluxion::interp
