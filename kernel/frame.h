// A kernel's frame: which values it computes at each index, which it reads from memory or
// through a view, and which it stores. Decided once here for every backend's emitter, which
// then only renders each decision (LLVM values on the CPU, GLSL text on Vulkan).
#pragma once

#include <cstdint>
#include <vector>

#include "ir/ir.h"
#include "kernel/kernel_ir.h"

namespace fluxion::kernel {

class KernelFrame {
 public:
  // Where an emitter takes value v's element at an index from.
  enum class Source : uint8_t {
    Computed,  // computed from its operands in this kernel
    Splat,     // a one-element constant, an immediate
    View,      // through its view's index math (even when a copy kernel also stores it: this
               // kernel was ordered after the view's operands, not necessarily after the copy)
    Memory,    // loaded from its buffer
  };

  // The frame of kernel k run by `plan` (its own, or the one a loop shader runs it by). A reduction, and the root of a
  // product or scatter, accumulate into their results' memory, except in a straight-line kernel, and except a root the
  // plan computes one element at a time (a GPU's direct or in-loop convolution).
  KernelFrame(const ir::Region& r, const RegionSchedule& s, const Kernel& k, const KernelPlan& plan);

  Source source(ir::ValueId v) const;
  bool computed(ir::ValueId v) const { return computed_[static_cast<size_t>(v)]; }
  // Whether the kernel stores v's elements into a buffer of v's own (a slot or a result).
  bool stored(ir::ValueId v) const;
  // The node that produces v, or nullptr for a parameter.
  const ir::Node* producer(ir::ValueId v) const;
  const std::vector<int32_t>& producers() const { return producer_; }
  // The value whose bytes v occupies (v itself unless it is an alias).
  ir::ValueId storage_of(ir::ValueId v) const;
  // Whether a node the kernel owns is a reduction.
  bool reduces() const;
  // Whether the kernel reads and writes only arrays of its own element count, elementwise, and
  // reduces only over every axis: then one flat index serves every array.
  bool collapsible() const;

 private:
  const ir::Region& region_;
  const RegionSchedule& schedule_;
  const Kernel& kernel_;
  std::vector<int32_t> producer_;
  std::vector<bool> computed_;
};

// Whether `plan` computes the root of MatMul kernel k one output element at a time instead of
// as a tiled product.
bool root_per_element(const ir::Region& r, const Kernel& k, const KernelPlan& plan);

// The product a MatMul kernel computes: C[b][i][j] = sum over k of A[b][i][k] B[b][k][j], a
// convolution read as im2col (one batch index, its image, or none).
struct ProductDims {
  Shape batch;
  int64_t M = 0, N = 0, K = 0;
};
ProductDims product_dims(const ir::Region& r, const Kernel& k);

}  // namespace fluxion::kernel
