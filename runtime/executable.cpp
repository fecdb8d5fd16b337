#include "runtime/executable.h"

#include <cstring>

#include "fluxion/backend.h"

namespace fluxion {

const char* backend_name(Backend b) {
  switch (b) {
    case Backend::Interp: return "interp";
    case Backend::Cpu: return "cpu";
    case Backend::Vulkan: return "vulkan";
  }
  return "?";
}

namespace runtime {

void Executable::run_into(const std::vector<Array>& inputs, std::vector<Array>& outputs) const {
  std::vector<Array> results = run(inputs);
  for (size_t k = 0; k < outputs.size(); ++k) {
    std::memcpy(outputs[k].mutable_data(), results[k].data(),
                static_cast<size_t>(results[k].size() * dtype_size(results[k].dtype())));
  }
}

}  // namespace runtime
}  // namespace fluxion
