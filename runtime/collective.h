// The host side of the collective ops (ops.def): what the interpreter, the CPU program and the
// Vulkan program's host steps all call, so that every backend exchanges and reduces the same
// bytes in the same order.
#pragma once

#include <cstdint>
#include <future>

#include "ir/ir.h"

namespace fluxion::runtime {

// One collective node's run-time description: its op, operand dtype and element count, and the
// attributes it was traced with.
struct CollectiveCall {
  ir::Op op = ir::Op::AllReduceSum;
  DType dtype = DType::f32;
  int64_t count = 0;  // operand elements (none for rank_index)
  int64_t ranks = 1;
  int64_t root = 0;
  // Which of its program's collectives it is (1-based, in program order, nested regions
  // included) and how many there are, for the watchdog's message; 0 when unknown.
  int64_t position = 0, collectives = 0;
};

// The description of collective node n (whose operand has type `operand`), and when `program`
// is given, its position among the program's collectives.
CollectiveCall collective_call(const ir::Node& n, const TensorType& operand, const ir::Program* program = nullptr);

// Runs `call` on the installed communicator: reads the operand at `in` (dtype-sized elements),
// writes the result at `out` (which may not overlap it). Raises Error when the job's size is not
// the program's, or when the engine fails.
void run_collective(const CollectiveCall& call, const void* in, void* out);

// Runs `call` on the process's communication thread, after the collectives started before it
// (so every rank issues them in the order its program starts them); `in` and `out` must stay
// valid until the future is ready. The future rethrows run_collective's Error.
std::future<void> start_collective(const CollectiveCall& call, const void* in, void* out);
// Runs `call` after the collectives started before it, on the calling thread (when none is
// running: no hand-off) or the communication thread.
void run_collective_in_order(const CollectiveCall& call, const void* in, void* out);

}  // namespace fluxion::runtime
