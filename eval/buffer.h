// The interpreter's value representation and the declarations of its per-family rules.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "fluxion/array.h"
#include "fluxion/dtype.h"
#include "ir/ir.h"

namespace fluxion::eval {

// A value: its type and its elements as doubles, row-major. Every element already holds a
// value representable in the dtype (see round_to).
struct Buffer {
  TensorType type;
  std::vector<double> v;
};
using Value = std::shared_ptr<const Buffer>;

// The value a dtype stores for x: f32 rounds to float, i32 wraps to 32 bits (two's
// complement), bool is x != 0.
double round_to(DType t, double x);
// A zero-filled buffer of type t.
Buffer zeros(const TensorType& t);
// The flat row-major position of multi-index idx.
int64_t ravel(const std::vector<int64_t>& idx, const Shape& s);
// The multi-index after idx in row-major order (all zeros after the last), in place: a loop over
// every element walks its index without allocating one per element.
void next_index(std::vector<int64_t>& idx, const Shape& s);

// A buffer's elements in an Array of its dtype.
Array to_array(const Buffer& b);

// One rule per op family; each returns the node's single result of type `out`.
Buffer eval_elementwise(const ir::Node& n, const std::vector<Value>& in, const TensorType& out);
Buffer eval_reduce(const ir::Node& n, const Buffer& x, const TensorType& out);
Buffer eval_matmul(const Buffer& a, const Buffer& b, const TensorType& out);
// conv2d and its two gradients (operands as the op takes them).
Buffer eval_conv(const ir::Node& n, const Buffer& a, const Buffer& b, const TensorType& out);
// max/avg pooling and their gradients.
Buffer eval_pool(const ir::Node& n, const std::vector<Value>& in, const TensorType& out);
Buffer eval_movement(const ir::Node& n, const std::vector<Value>& in, const TensorType& out);
Buffer eval_random(const ir::Node& n, const std::vector<Value>& in, const TensorType& out);
// The collectives, through the installed communicator (collective.h).
Buffer eval_collective(const ir::Node& n, const std::vector<Value>& in, const TensorType& out);
// scan, while, cond: run their regions.
std::vector<Value> eval_control(const ir::Node& n, const std::vector<Value>& in);

// Runs a region on argument values (one per parameter) and returns its results.
std::vector<Value> eval_region(const ir::Region& r, const std::vector<Value>& args);

}  // namespace fluxion::eval
