// Files written by Fluxion (checkpoints, traces): never half-written. The bytes go to a
// temporary file next to the target, are flushed to disk, and replace the target by rename only
// when complete, so a failed or interrupted write leaves any previous file intact.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace fluxion::support {

// Raises Error naming `op` and the path when the write fails; the temporary file is removed.
void write_file_atomically(const std::string& path, std::string_view bytes, std::string_view op);

// Fault injection for tests: the next writes fail after `bytes` more bytes have been written
// (as a full disk or a crash would), until called with -1.
void fail_writes_after_for_testing(int64_t bytes);

}  // namespace fluxion::support
