// carry_updates (kernel_ir.h): the loop-carry copy plan shared by the backends.
#include <algorithm>

#include "jit/kernel/kernel_ir.h"

namespace fluxion::kernel {

std::vector<CarryUpdate> carry_updates(const ir::Region& body, size_t carries, size_t first_param) {
  std::vector<CarryUpdate> out(carries, CarryUpdate::Direct);
  for (size_t j = 0; j < carries; ++j) {
    auto it = std::find(body.params.begin(), body.params.end(), body.results[j]);
    if (it == body.params.end()) continue;
    out[j] = static_cast<size_t>(it - body.params.begin()) == first_param + j ? CarryUpdate::Unchanged : CarryUpdate::Staged;
  }
  return out;
}

}  // namespace fluxion::kernel
