// The primitives of the shared per-element lowering (kernel/lowering.h) as LLVM values:
// scalars, or vectors of lanes_ while KernelEmitter::vector_node emits elementwise code.
// Indices are i64.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <string_view>
#include <utility>
#include <vector>

#include "backends/cpu/codegen.h"
#include "kernel/lowering.h"
#include "runtime/philox.h"

namespace fluxion::cpu {

class KernelEmitter::Renderer {
 public:
  using V = llvm::Value*;
  explicit Renderer(KernelEmitter& e) : emitter_(e), builder_(e.builder_) {}

  // Elements.
  V constant(DType t, double v) { return emitter_.constant(t, v); }
  V neg(V a, DType t) { return is_float(t) ? builder_.CreateFNeg(a) : builder_.CreateSub(emitter_.constant(t, 0), a); }
  V add(V a, V b, DType t) { return is_float(t) ? builder_.CreateFAdd(a, b) : builder_.CreateAdd(a, b); }
  V sub(V a, V b, DType t) { return is_float(t) ? builder_.CreateFSub(a, b) : builder_.CreateSub(a, b); }
  V mul(V a, V b, DType t) { return is_float(t) ? builder_.CreateFMul(a, b) : builder_.CreateMul(a, b); }
  V fdiv(V a, V b, DType) { return builder_.CreateFDiv(a, b); }
  V idiv(V a, V b) { return builder_.CreateSDiv(a, b); }
  V mul_add(V x, V y, V acc, DType t) {
    if (!is_float(t)) return builder_.CreateAdd(acc, builder_.CreateMul(x, y));
    return builder_.CreateIntrinsic(llvm::Intrinsic::fmuladd, {x->getType()}, {x, y, acc});
  }
  V sum(V acc, V x, DType t) {
    if (!is_float(t)) return builder_.CreateAdd(acc, x);
    // Reassociation lets the loop vectoriser split the sum into vector lanes.
    llvm::FastMathFlags fmf;
    fmf.setAllowReassoc();
    auto* add = llvm::cast<llvm::Instruction>(builder_.CreateFAdd(acc, x));
    add->setFastMathFlags(fmf);
    return add;
  }
  V compare(kernel::Compare c, V a, V b, DType t) {
    using P = llvm::CmpInst::Predicate;
    static constexpr P kFloat[] = {P::FCMP_OEQ, P::FCMP_UNE, P::FCMP_OLT, P::FCMP_OLE, P::FCMP_OGT, P::FCMP_OGE};
    auto k = static_cast<size_t>(c);
    return is_float(t) ? builder_.CreateFCmp(kFloat[k], a, b) : index_compare(c, a, b);
  }
  V select(V c, V a, V b) { return builder_.CreateSelect(c, a, b); }
  V logic_and(V a, V b) { return builder_.CreateAnd(a, b); }
  V logic_or(V a, V b) { return builder_.CreateOr(a, b); }
  V logic_not(V a) { return builder_.CreateNot(a); }
  V is_nan(V a) { return emitter_.is_nan(a); }
  V abs(V a, DType t) {
    return is_float(t) ? emitter_.intrinsic(llvm::Intrinsic::fabs, {a})
                       : emitter_.intrinsic(llvm::Intrinsic::abs, {a, builder_.getFalse()});
  }
  V max(V a, V b, DType t) {
    return emitter_.intrinsic(is_float(t) ? llvm::Intrinsic::maximum : llvm::Intrinsic::smax, {a, b});
  }
  V min(V a, V b, DType t) {
    return emitter_.intrinsic(is_float(t) ? llvm::Intrinsic::minimum : llvm::Intrinsic::smin, {a, b});
  }
  // LLVM's own intrinsics for the correctly rounded operations (one result, scalar or vector),
  // the math library's functions otherwise (KernelEmitter::math).
  V math(std::string_view f, DType t, std::vector<V> args) {
    static const std::pair<std::string_view, llvm::Intrinsic::ID> kIntrinsics[] = {{"sqrt", llvm::Intrinsic::sqrt},
                                                                                   {"floor", llvm::Intrinsic::floor}};
    for (const auto& [name, id] : kIntrinsics) {
      if (name == f) return emitter_.intrinsic(id, std::move(args));
    }
    return emitter_.math(f, t, std::move(args));
  }
  V round_to(V x, DType t) { return fluxion::cpu::round_to(builder_, t, x); }
  V convert(V a, DType from, DType to) {
    // To f16 or bf16 from a dtype wider than f32, a double that compute() rounds once: rounding
    // to f32 first could round twice.
    if (is_half(to) && (from == DType::f64 || from == DType::i32)) to = DType::f64;
    llvm::Type* ty = reg_type(emitter_.context_, to);
    if (auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(a->getType()))
      ty = llvm::FixedVectorType::get(ty, vt->getNumElements());
    if (is_float(from)) return is_float(to) ? builder_.CreateFPCast(a, ty) : builder_.CreateFPToSI(a, ty);
    return builder_.CreateSIToFP(a, ty);
  }

  // Indices. No wrap flags on additions: offsets may be negative before they are checked.
  V index(int64_t c) { return emitter_.i64(c); }
  V index_add(V a, V b) { return builder_.CreateAdd(a, b, "", false, true); }
  V index_sub(V a, V b) { return builder_.CreateSub(a, b, "", false, true); }
  V index_mul(V a, V b) { return builder_.CreateMul(a, b, "", false, true); }
  // Unsigned: cheaper, and exact where the contract asks it to be (a >= 0).
  V index_div(V a, int64_t d) { return builder_.CreateUDiv(a, emitter_.i64(d)); }
  V index_rem(V a, int64_t d) { return builder_.CreateURem(a, emitter_.i64(d)); }
  V index_compare(kernel::Compare c, V a, V b) {
    using P = llvm::CmpInst::Predicate;
    static constexpr P kInt[] = {P::ICMP_EQ, P::ICMP_NE, P::ICMP_SLT, P::ICMP_SLE, P::ICMP_SGT, P::ICMP_SGE};
    return builder_.CreateICmp(kInt[static_cast<size_t>(c)], a, b);
  }
  V clamp_index(V i, int64_t dim) {
    // Folded when the index is known (straight-line kernels): the intrinsic calls would not
    // fold, and every element would then compute its operand again.
    if (auto* c = llvm::dyn_cast<llvm::ConstantInt>(i))
      return emitter_.i64(std::clamp<int64_t>(c->getSExtValue(), 0, std::max<int64_t>(dim - 1, 0)));
    return emitter_.intrinsic(llvm::Intrinsic::smin,
                              {emitter_.intrinsic(llvm::Intrinsic::smax, {i, emitter_.i64(0)}), emitter_.i64(dim - 1)});
  }
  V bind(V i) { return i; }
  V bind(V x, DType) { return x; }
  V element_to_index(V x) { return builder_.CreateSExt(x, builder_.getInt64Ty()); }
  V index_to_element(V i, DType t) {
    return is_float(t) ? builder_.CreateSIToFP(i, reg_type(emitter_.context_, t))
                       : builder_.CreateTrunc(i, reg_type(emitter_.context_, t));
  }

  // Data and control.
  V at(ir::ValueId v, const std::vector<V>& idx) { return emitter_.at(v, idx); }
  V at_flat(ir::ValueId v, V flat) { return emitter_.at_flat(v, flat); }
  void store_flat(ir::ValueId v, V flat, V x) { emitter_.store_flat(v, flat, x); }
  template <class Body>
  void when(V cond, Body&& body) {
    auto saved = emitter_.memo_;
    emit_if(builder_, cond, body);
    emitter_.memo_ = std::move(saved);
  }
  template <class Body>
  std::vector<V> loop(int64_t lo, int64_t hi, const std::vector<kernel::Carried<V>>& carried, Body&& body) {
    std::vector<V> init;
    for (const auto& c : carried) init.push_back(c.init);
    // Values computed inside the loop do not dominate the code after it.
    auto saved = emitter_.memo_;
    auto out = emit_for(builder_, emitter_.i64(lo), emitter_.i64(hi), init,
                        [&](V i, const std::vector<V>& s) { return body(i, s); });
    emitter_.memo_ = std::move(saved);
    return out;
  }
  // Uniform numbers: Philox inline (runtime/philox.h's rounds, unrolled), so that a kernel
  // drawing dropout masks vectorises instead of calling the runtime per element. Normal numbers
  // (initialisers, rarely in a hot loop) call the runtime's recipe (runtime.cpp).
  V random(ir::Op op, DType t, V key0, V key1, V counter) {
    if (op == ir::Op::RngUniform) return uniform(t, key0, key1, counter);
    auto f = emitter_.module_.getOrInsertFunction("fx_rng", builder_.getDoubleTy(), builder_.getInt32Ty(),
                                                  builder_.getInt32Ty(), builder_.getInt64Ty(), builder_.getInt32Ty());
    int kind = op == ir::Op::RngNormal ? 2 : t == DType::f32 ? 0 : 1;
    V x = builder_.CreateCall(f, {key0, key1, counter, builder_.getInt32(static_cast<uint32_t>(kind))});
    // f16 and bf16 draws are rounded from the double (compute() rounds them), not from a float.
    return t == DType::f32 ? builder_.CreateFPTrunc(x, builder_.getFloatTy()) : x;
  }
  V uniform(DType t, V key0, V key1, V counter) {
    llvm::Type* i32 = builder_.getInt32Ty();
    llvm::Type* i64 = builder_.getInt64Ty();
    std::array<V, 4> c{builder_.CreateTrunc(counter, i32), builder_.CreateTrunc(builder_.CreateLShr(counter, 32), i32),
                       builder_.getInt32(0), builder_.getInt32(0)};
    V k0 = key0, k1 = key1;
    auto product = [&](V x, uint32_t m) {
      return builder_.CreateMul(builder_.CreateZExt(x, i64), builder_.getInt64(m));
    };
    auto high = [&](V p) { return builder_.CreateTrunc(builder_.CreateLShr(p, 32), i32); };
    for (int round = 0; round < 10; ++round) {
      V p0 = product(c[0], 0xD2511F53u), p1 = product(c[2], 0xCD9E8D57u);
      c = {builder_.CreateXor(builder_.CreateXor(high(p1), c[1]), k0), builder_.CreateTrunc(p1, i32),
           builder_.CreateXor(builder_.CreateXor(high(p0), c[3]), k1), builder_.CreateTrunc(p0, i32)};
      k0 = builder_.CreateAdd(k0, builder_.getInt32(0x9E3779B9u));
      k1 = builder_.CreateAdd(k1, builder_.getInt32(0xBB67AE85u));
    }
    // The interpreter's conversions, exact in every width: the format's significant bits of word
    // 0 (24 for f32, 11 for f16, 8 for bf16; runtime/philox.h), 53 bits of words 0 and 1 for f64.
    if (t != DType::f64) {
      int kept = runtime::philox::uniform_bits(t);
      V bits =
          builder_.CreateUIToFP(builder_.CreateLShr(c[0], static_cast<uint64_t>(32 - kept)), builder_.getFloatTy());
      return builder_.CreateFMul(bits, llvm::ConstantFP::get(builder_.getFloatTy(), std::ldexp(1.0, -kept)));
    }
    V wide = builder_.CreateOr(builder_.CreateShl(builder_.CreateZExt(c[0], i64), 32), builder_.CreateZExt(c[1], i64));
    V bits = builder_.CreateUIToFP(builder_.CreateLShr(wide, 11), builder_.getDoubleTy());
    return builder_.CreateFMul(bits, llvm::ConstantFP::get(builder_.getDoubleTy(), 0x1p-53));
  }
  V rng_fold(V key0, V key1, V data, V word) {
    auto f = emitter_.module_.getOrInsertFunction("fx_rng_fold", builder_.getInt32Ty(), builder_.getInt32Ty(),
                                                  builder_.getInt32Ty(), builder_.getInt32Ty(), builder_.getInt64Ty());
    return builder_.CreateCall(f, {key0, key1, data, word});
  }

 private:
  KernelEmitter& emitter_;
  llvm::IRBuilder<>& builder_;
};

}  // namespace fluxion::cpu
