// How each dtype's elements are held in registers and in memory, and the conversions between
// the two. The 16-bit floats are computed in float registers: every value they hold is one of
// the format's, rounded after each op (round_to), so loads and stores convert exactly. f16
// converts through LLVM's half type (F16C instructions, or the compiler runtime's conversions);
// bf16 with integer operations (LLVM's bfloat conversions are runtime calls without
// AVX-512-BF16).
#include "backends/cpu/codegen.h"

namespace fluxion::cpu {

using llvm::Value;

llvm::Type* reg_type(llvm::LLVMContext& c, DType t) {
  switch (t) {
    case DType::f32:
    case DType::f16:
    case DType::bf16: return llvm::Type::getFloatTy(c);
    case DType::f64: return llvm::Type::getDoubleTy(c);
    case DType::i32: return llvm::Type::getInt32Ty(c);
    case DType::boolean: return llvm::Type::getInt1Ty(c);
  }
  return nullptr;
}

llvm::Type* mem_type(llvm::LLVMContext& c, DType t) {
  if (t == DType::boolean) return llvm::Type::getInt8Ty(c);
  if (is_half(t)) return llvm::Type::getInt16Ty(c);
  return reg_type(c, t);
}

VectorTypes vector_types(llvm::LLVMContext& c, DType t, int lanes) {
  llvm::Type* et = reg_type(c, t);
  auto size = static_cast<uint64_t>(dtype_size(t));
  return {et, llvm::FixedVectorType::get(et, static_cast<unsigned>(lanes)), llvm::Align(size),
          llvm::Align(size * static_cast<uint64_t>(lanes))};
}

namespace {

// `element`, or a vector of it as wide as `like`.
llvm::Type* same_lanes(const Value* like, llvm::Type* element) {
  if (auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(like->getType()))
    return llvm::FixedVectorType::get(element, vt->getNumElements());
  return element;
}

llvm::Constant* splat(const Value* like, llvm::Constant* c) {
  if (auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(like->getType()))
    return llvm::ConstantVector::getSplat(vt->getElementCount(), c);
  return c;
}

// A double rounded to float toward zero, with the last bit set when that was inexact (rounding to
// odd): float's 24 bits then round once more to f16 or bf16 as the double would have, where
// rounding to nearest twice could land on the other side of a tie.
Value* round_to_odd_float(llvm::IRBuilder<>& b, Value* x) {
  llvm::Type* f32 = same_lanes(x, b.getFloatTy());
  llvm::Type* i32 = same_lanes(x, b.getInt32Ty());
  Value* nearest = b.CreateFPTrunc(x, f32);
  Value* back = b.CreateFPExt(nearest, x->getType());
  Value* bits = b.CreateBitCast(nearest, i32);
  llvm::Function* fabs =
      llvm::Intrinsic::getDeclaration(b.GetInsertBlock()->getModule(), llvm::Intrinsic::fabs, {x->getType()});
  Value* overshot = b.CreateFCmpOGT(b.CreateCall(fabs, {back}), b.CreateCall(fabs, {x}));
  Value* one = splat(x, b.getInt32(1));
  Value* toward_zero = b.CreateSelect(overshot, b.CreateSub(bits, one), bits);
  Value* inexact = b.CreateFCmpONE(back, x);
  return b.CreateBitCast(b.CreateSelect(inexact, b.CreateOr(toward_zero, one), bits), f32);
}

}  // namespace

Value* from_memory(llvm::IRBuilder<>& b, DType t, Value* x) {
  switch (t) {
    case DType::boolean: return b.CreateICmpNE(x, splat(x, b.getInt8(0)));
    case DType::f16:
      return b.CreateFPExt(b.CreateBitCast(x, same_lanes(x, b.getHalfTy())), same_lanes(x, b.getFloatTy()));
    case DType::bf16:
      return b.CreateBitCast(b.CreateShl(b.CreateZExt(x, same_lanes(x, b.getInt32Ty())), splat(x, b.getInt32(16))),
                             same_lanes(x, b.getFloatTy()));
    default: return x;
  }
}

Value* to_memory(llvm::IRBuilder<>& b, DType t, Value* x) {
  switch (t) {
    case DType::boolean: return b.CreateZExt(x, same_lanes(x, b.getInt8Ty()));
    case DType::f16:
      return b.CreateBitCast(b.CreateFPTrunc(x, same_lanes(x, b.getHalfTy())), same_lanes(x, b.getInt16Ty()));
    case DType::bf16:
      return b.CreateTrunc(b.CreateLShr(b.CreateBitCast(x, same_lanes(x, b.getInt32Ty())), splat(x, b.getInt32(16))),
                           same_lanes(x, b.getInt16Ty()));
    default: return x;
  }
}

Value* round_to(llvm::IRBuilder<>& b, DType t, Value* x) {
  if (!is_half(t)) return x;
  if (x->getType()->getScalarType()->isDoubleTy()) x = round_to_odd_float(b, x);
  if (t == DType::f16) return b.CreateFPExt(b.CreateFPTrunc(x, same_lanes(x, b.getHalfTy())), x->getType());
  // bf16: round the float's bits to their upper 16, ties to even; a NaN stays a quiet NaN.
  llvm::Type* i32 = same_lanes(x, b.getInt32Ty());
  Value* bits = b.CreateBitCast(x, i32);
  Value* odd = b.CreateAnd(b.CreateLShr(bits, splat(x, b.getInt32(16))), splat(x, b.getInt32(1)));
  Value* rounded = b.CreateAdd(bits, b.CreateAdd(odd, splat(x, b.getInt32(0x7fff))));
  Value* nan = b.CreateOr(bits, splat(x, b.getInt32(0x00400000)));
  Value* kept = b.CreateSelect(b.CreateFCmpUNO(x, x), nan, rounded);
  return b.CreateBitCast(b.CreateAnd(kept, splat(x, b.getInt32(0xffff0000u))), x->getType());
}

}  // namespace fluxion::cpu
