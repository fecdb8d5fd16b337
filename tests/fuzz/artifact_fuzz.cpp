// libFuzzer target: the artifact reader and, for a compiled CPU program that decodes, the ELF
// linker on its object code (every undefined symbol resolves to a dummy function; the linked
// code never runs). Any input either decodes (and links) or raises fluxion::Error; a decoded
// artifact re-encodes to bytes that decode and re-encode to the same bytes. A checksum guards
// the payload, so random bytes rarely pass the header: every input is also decoded as a payload
// behind a correct header, which lets the fuzzer reach the fields' decoder.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "fluxion/error.h"
#include "runtime/artifact.h"
#include "runtime/cpu/elf_loader.h"
#include "support/fnv1a.h"

namespace {

void dummy() {}

void put_le(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
}

// `payload` behind the header encode_artifact writes: the magic, the format version, the
// payload's size and its FNV-1a checksum.
std::string with_header(std::string_view payload) {
  uint64_t sum = fluxion::support::fnv1a(payload);
  std::string out = "FLUXION ARTIFACT\n";
  put_le(out, fluxion::runtime::kArtifactFormat, 4);
  put_le(out, payload.size(), 8);
  put_le(out, sum, 8);
  return out.append(payload);
}

void decode_and_link(std::string_view bytes) {
  using namespace fluxion::runtime;
  Artifact a;
  try {
    a = decode_artifact(bytes, "fuzz input");
  } catch (const fluxion::Error&) {
    return;
  }
  std::string encoded = encode_artifact(a);
  if (encode_artifact(decode_artifact(encoded, "re-encoded fuzz input")) != encoded) std::abort();
  if (!a.compiled || a.backend != fluxion::Backend::Cpu) return;
  try {
    fluxion::cpu::link_objects(
        a.cpu.objects, [](const std::string&) { return reinterpret_cast<void*>(&dummy); }, "fuzz input");
  } catch (const fluxion::Error&) {
    return;  // refused: an answer too
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  decode_and_link(bytes);
  decode_and_link(with_header(bytes));
  return 0;
}
