// Which backends exist in this build, and compilation dispatch to them.
#include <string>

#include "backends/backend.h"
#include "backends/cpu/executable.h"
#include "backends/interp/executable.h"
#include "backends/vulkan/executable.h"
#include "fluxion/error.h"
#include "runtime/vulkan/context.h"
#include "support/settings.h"

namespace fluxion {

std::vector<Backend> available_backends() {
  std::vector<Backend> b{Backend::Interp, Backend::Cpu};
  if (vulkan::available()) b.push_back(Backend::Vulkan);
  return b;
}

Backend default_backend() { return Backend::Cpu; }

namespace backends {
std::unique_ptr<Executable> compile(const ir::Program& p, Backend backend) {
  switch (backend) {
    case Backend::Interp: return interp::compile(p);
    case Backend::Cpu: return cpu::compile(p);
    case Backend::Vulkan: return vulkan::compile(p);
  }
  throw Error(std::string("fluxion: unknown backend ") + std::to_string(static_cast<int>(backend)));
}

std::string compile_settings(Backend backend) {
  if (backend != Backend::Vulkan) return "";
  return "tuning " + support::text(support::Setting::vulkan_tuning) + ", loop kernels " +
         (support::enabled(support::Setting::vulkan_loop_kernels) ? "on" : "off") + "\n";
}

}  // namespace backends
}  // namespace fluxion
