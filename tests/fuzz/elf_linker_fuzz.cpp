// libFuzzer target: the ELF linker (runtime/cpu/elf_loader.cpp) on raw bytes, every undefined symbol
// resolving to a dummy function; the linked code never runs. Any input either links or raises
// fluxion::Error, and never reads or writes outside the input and the mapping.
#include <cstdint>
#include <string>
#include <string_view>

#include "fluxion/error.h"
#include "runtime/cpu/elf_loader.h"

namespace {
void dummy() {}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view elf(reinterpret_cast<const char*>(data), size);
  try {
    fluxion::cpu::link_object(
        elf, [](const std::string&) { return reinterpret_cast<void*>(&dummy); }, "fuzz input");
  } catch (const fluxion::Error&) {
    return 0;  // refused: an answer too
  }
  return 0;
}
