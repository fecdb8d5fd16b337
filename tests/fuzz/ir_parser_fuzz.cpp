// libFuzzer target: the IR text parser. Any input either parses or raises fluxion::Error; a
// program that parses and verifies prints to text that parses back to the same text.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "fluxion/error.h"
#include "ir/ir.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  fluxion::ir::Program p;
  try {
    p = fluxion::ir::parse(text);
    fluxion::ir::verify(p);
  } catch (const fluxion::Error&) {
    return 0;
  }
  std::string printed = fluxion::ir::print(p);
  if (fluxion::ir::print(fluxion::ir::parse(printed)) != printed) std::abort();  // must round-trip
  return 0;
}
