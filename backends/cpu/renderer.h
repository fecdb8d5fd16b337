// The primitives of the shared per-element lowering (jit/kernel/lowering.h) as LLVM values:
// scalars, or vectors of lanes_ while KernelEmitter::vector_node emits elementwise code.
// Indices are i64.
#pragma once

#include <algorithm>
#include <string_view>
#include <utility>
#include <vector>

#include "backends/cpu/codegen.h"
#include "jit/kernel/lowering.h"

namespace fluxion::cpu {

class KernelEmitter::Renderer {
 public:
  using V = llvm::Value*;
  explicit Renderer(KernelEmitter& e) : e_(e), b_(e.b_) {}

  // Elements.
  V constant(DType t, double v) { return e_.constant(t, v); }
  V neg(V a, DType t) { return is_float(t) ? b_.CreateFNeg(a) : b_.CreateSub(e_.constant(t, 0), a); }
  V add(V a, V b, DType t) { return is_float(t) ? b_.CreateFAdd(a, b) : b_.CreateAdd(a, b); }
  V sub(V a, V b, DType t) { return is_float(t) ? b_.CreateFSub(a, b) : b_.CreateSub(a, b); }
  V mul(V a, V b, DType t) { return is_float(t) ? b_.CreateFMul(a, b) : b_.CreateMul(a, b); }
  V fdiv(V a, V b, DType) { return b_.CreateFDiv(a, b); }
  V idiv(V a, V b) { return b_.CreateSDiv(a, b); }
  V mul_add(V x, V y, V acc, DType t) {
    if (!is_float(t)) return b_.CreateAdd(acc, b_.CreateMul(x, y));
    return b_.CreateIntrinsic(llvm::Intrinsic::fmuladd, {x->getType()}, {x, y, acc});
  }
  V sum(V acc, V x, DType t) {
    if (!is_float(t)) return b_.CreateAdd(acc, x);
    // Reassociation lets the loop vectoriser split the sum into vector lanes.
    llvm::FastMathFlags fmf;
    fmf.setAllowReassoc();
    auto* add = llvm::cast<llvm::Instruction>(b_.CreateFAdd(acc, x));
    add->setFastMathFlags(fmf);
    return add;
  }
  V compare(kernel::Compare c, V a, V b, DType t) {
    using P = llvm::CmpInst::Predicate;
    static constexpr P kFloat[] = {P::FCMP_OEQ, P::FCMP_UNE, P::FCMP_OLT, P::FCMP_OLE, P::FCMP_OGT, P::FCMP_OGE};
    auto k = static_cast<size_t>(c);
    return is_float(t) ? b_.CreateFCmp(kFloat[k], a, b) : index_compare(c, a, b);
  }
  V select(V c, V a, V b) { return b_.CreateSelect(c, a, b); }
  V logic_and(V a, V b) { return b_.CreateAnd(a, b); }
  V logic_or(V a, V b) { return b_.CreateOr(a, b); }
  V logic_not(V a) { return b_.CreateNot(a); }
  V is_nan(V a) { return e_.is_nan(a); }
  V abs(V a, DType t) {
    return is_float(t) ? e_.intrinsic(llvm::Intrinsic::fabs, {a})
                       : e_.intrinsic(llvm::Intrinsic::abs, {a, b_.getFalse()});
  }
  V max(V a, V b, DType t) {
    return e_.intrinsic(is_float(t) ? llvm::Intrinsic::maximum : llvm::Intrinsic::smax, {a, b});
  }
  V min(V a, V b, DType t) {
    return e_.intrinsic(is_float(t) ? llvm::Intrinsic::minimum : llvm::Intrinsic::smin, {a, b});
  }
  // LLVM's own intrinsics where it has them (it folds and vectorises those), the C library's
  // function otherwise.
  V math(std::string_view f, DType t, std::vector<V> args) {
    static const std::pair<std::string_view, llvm::Intrinsic::ID> kIntrinsics[] = {
        {"exp", llvm::Intrinsic::exp},    {"log", llvm::Intrinsic::log}, {"sqrt", llvm::Intrinsic::sqrt},
        {"sin", llvm::Intrinsic::sin},    {"cos", llvm::Intrinsic::cos}, {"pow", llvm::Intrinsic::pow},
        {"floor", llvm::Intrinsic::floor}};
    for (const auto& [name, id] : kIntrinsics) {
      if (name == f) return e_.intrinsic(id, std::move(args));
    }
    return e_.math(f, t, std::move(args));
  }
  V convert(V a, DType from, DType to) {
    llvm::Type* ty = reg_type(e_.c_, to);
    if (auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(a->getType()))
      ty = llvm::FixedVectorType::get(ty, vt->getNumElements());
    if (is_float(from)) return is_float(to) ? b_.CreateFPCast(a, ty) : b_.CreateFPToSI(a, ty);
    return b_.CreateSIToFP(a, ty);
  }

  // Indices. No wrap flags on additions: offsets may be negative before they are checked.
  V index(int64_t c) { return e_.i64(c); }
  V index_add(V a, V b) { return b_.CreateAdd(a, b, "", false, true); }
  V index_sub(V a, V b) { return b_.CreateSub(a, b, "", false, true); }
  V index_mul(V a, V b) { return b_.CreateMul(a, b, "", false, true); }
  // Unsigned: cheaper, and exact where the contract asks it to be (a >= 0).
  V index_div(V a, int64_t d) { return b_.CreateUDiv(a, e_.i64(d)); }
  V index_rem(V a, int64_t d) { return b_.CreateURem(a, e_.i64(d)); }
  V index_compare(kernel::Compare c, V a, V b) {
    using P = llvm::CmpInst::Predicate;
    static constexpr P kInt[] = {P::ICMP_EQ, P::ICMP_NE, P::ICMP_SLT, P::ICMP_SLE, P::ICMP_SGT, P::ICMP_SGE};
    return b_.CreateICmp(kInt[static_cast<size_t>(c)], a, b);
  }
  V clamp_index(V i, int64_t dim) {
    // Folded when the index is known (straight-line kernels): the intrinsic calls would not
    // fold, and every element would then compute its operand again.
    if (auto* c = llvm::dyn_cast<llvm::ConstantInt>(i))
      return e_.i64(std::clamp<int64_t>(c->getSExtValue(), 0, std::max<int64_t>(dim - 1, 0)));
    return e_.intrinsic(llvm::Intrinsic::smin, {e_.intrinsic(llvm::Intrinsic::smax, {i, e_.i64(0)}), e_.i64(dim - 1)});
  }
  V bind(V i) { return i; }
  V bind(V x, DType) { return x; }
  V element_to_index(V x) { return b_.CreateSExt(x, b_.getInt64Ty()); }
  V index_to_element(V i, DType t) {
    return is_float(t) ? b_.CreateSIToFP(i, reg_type(e_.c_, t)) : b_.CreateTrunc(i, reg_type(e_.c_, t));
  }

  // Data and control.
  V at(ir::ValueId v, const std::vector<V>& idx) { return e_.at(v, idx); }
  template <class Body>
  std::vector<V> loop(int64_t lo, int64_t hi, const std::vector<kernel::Carried<V>>& carried, Body&& body) {
    std::vector<V> init;
    for (const auto& c : carried) init.push_back(c.init);
    // Values computed inside the loop do not dominate the code after it.
    auto saved = e_.memo_;
    auto out = emit_for(b_, e_.i64(lo), e_.i64(hi), init, [&](V i, const std::vector<V>& s) { return body(i, s); });
    e_.memo_ = std::move(saved);
    return out;
  }
  // The reference evaluator's Philox streams, called in the runtime (runtime.cpp).
  V random(ir::Op op, DType t, V key0, V key1, V counter) {
    auto f = e_.m_.getOrInsertFunction("fx_rng", b_.getDoubleTy(), b_.getInt32Ty(), b_.getInt32Ty(), b_.getInt64Ty(),
                                       b_.getInt32Ty());
    int kind = op == ir::Op::RngNormal ? 2 : t == DType::f32 ? 0 : 1;
    V x = b_.CreateCall(f, {key0, key1, counter, b_.getInt32(static_cast<uint32_t>(kind))});
    return t == DType::f32 ? b_.CreateFPTrunc(x, b_.getFloatTy()) : x;
  }
  V rng_fold(V key0, V key1, V data, V word) {
    auto f = e_.m_.getOrInsertFunction("fx_rng_fold", b_.getInt32Ty(), b_.getInt32Ty(), b_.getInt32Ty(),
                                       b_.getInt32Ty(), b_.getInt64Ty());
    return b_.CreateCall(f, {key0, key1, data, word});
  }

 private:
  KernelEmitter& e_;
  llvm::IRBuilder<>& b_;
};

}  // namespace fluxion::cpu
