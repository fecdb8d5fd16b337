// A program that proves the sanitizer build's configuration (tests/sanitize/runtime_defaults.cpp):
// it runs a small program on every backend present, so the Vulkan driver is loaded, used and
// released, and must then exit cleanly; with --leak it also leaks an array that Fluxion's own
// code allocated, which LeakSanitizer must report.
#include <cstdio>
#include <cstring>
#include <vector>

#include <fluxion/fluxion.h>

namespace fx = fluxion;

namespace {

// The array's storage is allocated by Fluxion's own constructor (an indirect leak whose stack
// names fluxion::Array). Noinline, and the pointer dropped here, so that no copy of it stays on
// main's stack where LeakSanitizer would find it and call the array reachable.
[[gnu::noinline]] void leak_an_array() { new fx::Array(std::vector<float>(64, 1.0f), {64}); }

}  // namespace

int main(int argc, char** argv) {
  bool leak_on_purpose = argc > 1 && std::strcmp(argv[1], "--leak") == 0;
  fx::Array x(std::vector<float>{1, 2, 3, 4}, {4});
  for (fx::Backend backend : fx::available_backends()) {
    auto f = fx::jit([](fx::Tensor t) { return fx::exp(t) * 2.0; }, backend);
    fx::Array y = f(x);
    std::printf("%s: %g\n", fx::backend_name(backend), y.to_vector<float>()[3]);
  }
  if (leak_on_purpose) leak_an_array();
  return 0;
}
