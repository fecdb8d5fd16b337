// The on-disk cache of compiled code (the CPU backend's object files, the Vulkan backend's
// SPIR-V and pipeline cache), so a second run of a program starts without recompiling. Location: $FLUXION_CACHE_DIR,
// else $XDG_CACHE_HOME/fluxion, else $HOME/.cache/fluxion. FLUXION_DISK_CACHE=0 turns it off. Entries are written
// atomically (a temporary file renamed into place) and a damaged entry is ignored and recompiled.
#pragma once

#include <string>

namespace fluxion::runtime {

// The object stored under `key` (the whole key text is checked, not only its hash), or ""
// with *found = false.
std::string disk_cache_load(const std::string& key, bool* found);
// Stores `object` under `key`; failures (read-only disk, no home) are silent: the cache is an
// optimisation only.
void disk_cache_store(const std::string& key, const std::string& object);
// The directory in use, or "" when the cache is off.
std::string disk_cache_dir();

}  // namespace fluxion::runtime
