// libFuzzer target: the safetensors reader. Any input either loads or raises fluxion::Error;
// what loads holds no more elements than the input has bytes (a file stores every element in at
// least one byte; the narrow integers are widened on load, so Fluxion's bytes may not).
#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>

#include "data/safetensors_bytes.h"
#include "fluxion/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  try {
    std::map<std::string, std::string> metadata;
    int64_t elements = 0;
    for (const auto& [name, a] : fluxion::data::parse_safetensors(bytes, "fuzz input", &metadata)) {
      if (name.empty()) std::abort();
      elements += a.size();
    }
    if (elements > static_cast<int64_t>(size)) std::abort();
  } catch (const fluxion::Error&) {
  }
  return 0;
}
