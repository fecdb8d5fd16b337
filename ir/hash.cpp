// The structural hash: the hash of the canonical text (nodes in canonical order, without
// locations). Equal text is equal structure by construction of the printer, so no second
// definition of "equal" can drift.
#include <string>

#include "ir/ir.h"

namespace fluxion::ir {

uint64_t structural_hash(const Program& p) {
  // FNV-1a, 64-bit, then a final avalanche (the splitmix64 finaliser) so that programs that
  // differ in one character differ in every bit position with probability 1/2.
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : print_canonical(p)) {
    h ^= c;
    h *= 1099511628211ull;
  }
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebull;
  h ^= h >> 31;
  return h;
}

}  // namespace fluxion::ir
