// What a node computes per element, from the shared lowering (kernel/lowering.h) rendered
// as LLVM values (renderer.h), and the math calls it renders to: LLVM intrinsics for exact
// operations, and scalar_math's functions (libmvec, or libm where it has none) for the rest. The semantics follow the
// reference evaluator's exactly; only the rounding of transcendental functions differs.
#include "backends/cpu/native.h"
#include "backends/cpu/renderer.h"
#include "kernel/node_lowering.h"

namespace fluxion::cpu {

using ir::Op;
using llvm::Value;

Value* KernelEmitter::intrinsic(llvm::Intrinsic::ID id, std::vector<Value*> args) {
  return builder_.CreateIntrinsic(id, {args[0]->getType()}, args);
}

Value* KernelEmitter::math(std::string_view name, DType t, std::vector<Value*> args) {
  t = register_dtype(t);
  if (lanes_ > 0) return vector_math(name, t, args);
  return builder_.CreateCall(
      scalar_math(module_, libm_name(name, t), reg_type(context_, t), static_cast<int>(args.size())), args);
}

Value* KernelEmitter::is_nan(Value* x) { return builder_.CreateFCmpUNO(x, x); }

// f16 and bf16 results are computed in float and rounded once per op, as the reference
// evaluator rounds its double result: for the correctly rounded operations (+ - * / sqrt, and
// conversions) the bits are the same.
Value* KernelEmitter::elementwise(const ir::Node& n, const std::vector<Value*>& x, DType in, DType out) {
  Renderer render(*this);
  return kernel::rounded(render, n, kernel::lower_elementwise(render, n, x, in, out), out);
}

Value* KernelEmitter::reduce_identity(Op op, DType t) {
  Renderer render(*this);
  return kernel::reduce_identity(render, op, t);
}

Value* KernelEmitter::combine(Op op, DType t, Value* acc, Value* x) {
  Renderer render(*this);
  return kernel::combine(render, op, t, acc, x);
}

Value* KernelEmitter::view(const ir::Node& n, ir::ValueId v, const Index& idx) {
  Renderer render(*this);
  return kernel::lower_view(render, region_, n, v, idx);
}

Value* KernelEmitter::compute(const ir::Node& n, const Index& idx) {
  ir::OpClass cls = ir::op_info(n.op).cls;
  if (kernel_.kind == kernel::KernelKind::StraightLine && (cls == ir::OpClass::Reduce || cls == ir::OpClass::MatMul))
    return fold(n, idx);
  Renderer render(*this);
  return kernel::lower_node(render, region_, n, idx);
}

}  // namespace fluxion::cpu
