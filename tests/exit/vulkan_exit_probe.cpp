// A process that keeps a compiled Vulkan program and a result still on the device in a static
// made before the device is opened, so that both outlive the exit handler that closes the device
// (runtime/vulkan/context.h). Run under the validation layer, it must exit with status 0 and no
// validation message (every object made from the device is destroyed before the device), and a
// call of the program or a read of the result from that static's destructor must raise an Error
// that says the device was closed.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include <fluxion/fluxion.h>

namespace fx = fluxion;

namespace {

constexpr int kSkipped = 77;

struct KeptPastExit {
  std::optional<fx::Compiled> program;
  std::optional<fx::Array> result;

  ~KeptPastExit() {
    if (!program || !result) return;
    expect_closed("a call of the program", [&] { program->run({*result}); });
    expect_closed("a read of the result", [&] { result->to_vector<float>(); });
  }

  // `attempt` must raise the Error of a closed device; anything else ends the process with 1.
  template <class F>
  static void expect_closed(const char* what, F attempt) {
    try {
      attempt();
      std::fprintf(stderr, "vulkan_exit_probe: %s worked after the device was closed\n", what);
      std::_Exit(1);
    } catch (const fx::Error& e) {
      if (std::string(e.what()).find("closed") == std::string::npos) {
        std::fprintf(stderr, "vulkan_exit_probe: %s raised another error: %s\n", what, e.what());
        std::_Exit(1);
      }
      std::printf("vulkan_exit_probe: %s after exit raised: %s\n", what, e.what());
    }
  }
};

KeptPastExit kept;

}  // namespace

int main() {
  std::vector<fx::Backend> backends = fx::available_backends();
  if (std::find(backends.begin(), backends.end(), fx::Backend::Vulkan) == backends.end()) {
    std::printf("vulkan_exit_probe: no Vulkan device\n");
    return kSkipped;
  }
  kept.program =
      fx::compile_flat([](const std::vector<fx::Tensor>& x) { return std::vector<fx::Tensor>{fx::exp(x[0]) * 2.0}; },
                       {fx::TensorType{fx::f32, {64}}}, fx::Backend::Vulkan);
  kept.result = kept.program->run({fx::Array(std::vector<float>(64, 0.5f), {64})})[0];
  if (!kept.result->on_device()) {
    std::fprintf(stderr, "vulkan_exit_probe: the result is not on the device\n");
    return 1;
  }
  std::printf("vulkan_exit_probe: a program and its result on the device are kept past exit\n");
  return 0;
}
