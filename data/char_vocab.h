// The vocabulary of a character-level text: the bytes that occur, in byte order, each byte's
// token its index among them (-1 for a byte that does not occur). CharText and the streamed
// text dataset build it the same way.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace fluxion::data {

struct CharVocab {
  std::string bytes;
  int32_t token[256] = {};

  static CharVocab of(std::string_view text) {
    CharVocab v;
    bool seen[256] = {};
    for (char c : text) seen[static_cast<unsigned char>(c)] = true;
    for (int c = 0; c < 256; ++c) {
      v.token[c] = seen[c] ? static_cast<int32_t>(v.bytes.size()) : -1;
      if (seen[c]) v.bytes += static_cast<char>(c);
    }
    return v;
  }
  int32_t operator[](char c) const { return token[static_cast<unsigned char>(c)]; }
};

}  // namespace fluxion::data
