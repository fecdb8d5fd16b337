// The deploy sample's data files: safetensors, which the runtime-only library reads and writes
// (fluxion/safetensors.h), held here as maps by name.
#pragma once

#include <fluxion/safetensors.h>

#include <map>
#include <string>

namespace deploy {

inline void write_arrays(const std::string& path, const std::map<std::string, fluxion::Array>& arrays) {
  fluxion::save_safetensors(path, fluxion::NamedArrays(arrays.begin(), arrays.end()));
}

inline std::map<std::string, fluxion::Array> read_arrays(const std::string& path) {
  fluxion::NamedArrays arrays = fluxion::load_safetensors(path);
  return {arrays.begin(), arrays.end()};
}

}  // namespace deploy
