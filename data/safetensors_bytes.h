// The safetensors reader on a file's bytes (load_safetensors reads the file, then this), for
// callers that hold the bytes already: the fuzz target.
#pragma once

#include <map>
#include <string>

#include "fluxion/safetensors.h"

namespace fluxion::data {

// The tensors of a file's bytes `file`; raises Error naming `path` for damaged bytes (see
// load_safetensors).
NamedArrays parse_safetensors(const std::string& file, const std::string& path,
                              std::map<std::string, std::string>* metadata = nullptr);

}  // namespace fluxion::data
