// Which backends exist in this build, and compilation dispatch to them.
#include <cstring>
#include <string>

#include "backends/backend.h"
#include "backends/cpu/executable.h"
#include "backends/interp/executable.h"
#include "backends/vulkan/executable.h"
#include "fluxion/error.h"

namespace fluxion {

const char* backend_name(Backend b) {
  switch (b) {
    case Backend::Interp: return "interp";
    case Backend::Cpu: return "cpu";
    case Backend::Vulkan: return "vulkan";
  }
  return "?";
}

std::vector<Backend> available_backends() {
  std::vector<Backend> b{Backend::Interp, Backend::Cpu};
  if (vulkan::available()) b.push_back(Backend::Vulkan);
  return b;
}

Backend default_backend() { return Backend::Cpu; }

namespace backends {
void Executable::run_into(const std::vector<Array>& inputs, std::vector<Array>& outputs) const {
  std::vector<Array> results = run(inputs);
  for (size_t k = 0; k < outputs.size(); ++k) {
    std::memcpy(outputs[k].mutable_data(), results[k].data(), static_cast<size_t>(results[k].size() * dtype_size(results[k].dtype())));
  }
}

std::unique_ptr<Executable> compile(const ir::Program& p, Backend backend) {
  switch (backend) {
    case Backend::Interp: return interp::compile(p);
    case Backend::Cpu: return cpu::compile(p);
    case Backend::Vulkan: return vulkan::compile(p);
  }
  throw Error(std::string("fluxion: unknown backend ") + std::to_string(static_cast<int>(backend)));
}

}  // namespace backends
}  // namespace fluxion
