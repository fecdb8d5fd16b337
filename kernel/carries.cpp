// carry_updates (kernel_ir.h): the loop-carry copy plan shared by the backends.
#include <algorithm>

#include "kernel/kernel_ir.h"

namespace fluxion::kernel {

std::vector<CarryUpdate> carry_updates(const ir::Region& body, size_t carries, size_t first_param) {
  std::vector<int32_t> producer = producers(body);
  std::vector<CarryUpdate> out(carries, CarryUpdate::Direct);
  for (size_t j = 0; j < carries; ++j) {
    // A reshape shares its operand's bytes (Storage::Alias): look through to the parameter.
    ir::ValueId v = body.results[j];
    while (producer[static_cast<size_t>(v)] >= 0 && body.nodes[static_cast<size_t>(producer[static_cast<size_t>(v)])].op == ir::Op::Reshape) {
      v = body.nodes[static_cast<size_t>(producer[static_cast<size_t>(v)])].operands[0];
    }
    auto it = std::find(body.params.begin(), body.params.end(), v);
    if (it == body.params.end()) continue;
    out[j] = static_cast<size_t>(it - body.params.begin()) == first_param + j ? CarryUpdate::Unchanged : CarryUpdate::Staged;
  }
  return out;
}

}  // namespace fluxion::kernel
