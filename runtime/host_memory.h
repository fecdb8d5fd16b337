// The host memory a program run allocates for its results and its working memory (the CPU
// backend's arena, the interpreter's values), shared by every backend: the limit
// FLUXION_MEMORY_LIMIT that simulates running out of it, and the Error raised when an allocation
// fails or would pass the limit, naming what was allocated, the bytes and the program.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fluxion/array.h"
#include "ir/ir.h"

namespace fluxion::runtime {

// FLUXION_MEMORY_LIMIT: the bytes one program run may allocate for its working memory plus its
// results; -1 when unset or empty. Read at every call. Raises Error when it is not a number.
int64_t host_memory_limit();

// How run-time errors name a program: its signature as the IR prints it, and where the user's
// function computed its last op, e.g. "program @main(f32[]) -> (f32[1000,1000]) (traced from
// f.cpp:12)".
std::string program_label(const ir::Program& p);
// Its last part: " (traced from f.cpp:12)", or "" when no node has a line.
std::string traced_from(const ir::Program& p);

// Bytes the arrays of `types` take in host memory.
int64_t host_bytes(const std::vector<TensorType>& types);

// Raises Error when a run of `p` that allocates `results` bytes of results and `working` bytes
// described by `working_what` would pass FLUXION_MEMORY_LIMIT.
void check_host_memory(const ir::Program& p, int64_t results, int64_t working,
                       const std::string& working_what = "working memory");
// The same for a program named by its program_label (a loaded artifact's).
void check_host_memory(const std::string& label, int64_t results, int64_t working,
                       const std::string& working_what = "working memory");

// Raises the Error of a failed allocation (std::bad_alloc) of `bytes` bytes for `what` ("the
// results", "working memory", ...) of a run of `p`.
[[noreturn]] void fail_allocation(const ir::Program& p, const std::string& what, int64_t bytes);
[[noreturn]] void fail_allocation(const std::string& label, const std::string& what, int64_t bytes);

// Host Arrays for results of `types`, uninitialized; an allocation that fails raises
// fail_allocation's Error.
std::vector<Array> allocate_results(const ir::Program& p, const std::vector<TensorType>& types);
std::vector<Array> allocate_results(const std::string& label, const std::vector<TensorType>& types);

}  // namespace fluxion::runtime
