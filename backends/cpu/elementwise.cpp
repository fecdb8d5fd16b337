// Scalar code for elementwise ops, views and reductions' combine step. The semantics follow the
// interpreter's rules exactly (NaN propagation, i32 wrapping and division, saturating
// float-to-int conversion); only the rounding of transcendental functions differs.
#include <algorithm>
#include <limits>

#include "backends/cpu/codegen.h"
#include "backends/cpu/native.h"
#include "fluxion/error.h"
#include "jit/kernel/elementwise_lowering.h"

namespace fluxion::cpu {

using ir::Op;
using llvm::Value;

Value* KernelEmitter::intrinsic(llvm::Intrinsic::ID id, std::vector<Value*> args) {
  if (lanes_ > 0) {
    // LLVM's code generator expands these on vectors into a scalar call per lane.
    DType t = args[0]->getType()->getScalarType()->isDoubleTy() ? DType::f64 : DType::f32;
    switch (id) {
      case llvm::Intrinsic::exp: return vector_math("exp", t, args);
      case llvm::Intrinsic::log: return vector_math("log", t, args);
      case llvm::Intrinsic::sin: return vector_math("sin", t, args);
      case llvm::Intrinsic::cos: return vector_math("cos", t, args);
      case llvm::Intrinsic::pow: return vector_math("pow", t, args);
      default: break;
    }
  }
  return b_.CreateIntrinsic(id, {args[0]->getType()}, args);
}

Value* KernelEmitter::math(std::string_view name, DType t, std::vector<Value*> args) {
  if (lanes_ > 0) return vector_math(name, t, args);
  llvm::Type* ty = reg_type(c_, t);
  std::vector<llvm::Type*> params(args.size(), ty);
  llvm::FunctionCallee f = m_.getOrInsertFunction(libm_name(name, t), llvm::FunctionType::get(ty, params, false));
  if (auto* fn = llvm::dyn_cast<llvm::Function>(f.getCallee())) {
    fn->setDoesNotThrow();
    fn->setDoesNotAccessMemory();
  }
  return b_.CreateCall(f, args);
}

Value* KernelEmitter::is_nan(Value* x) { return b_.CreateFCmpUNO(x, x); }

// The elementwise primitives of kernel::lower_elementwise as LLVM values (scalars, or vectors
// of lanes_ while a vector node is emitted).
class KernelEmitter::ScalarOps {
 public:
  explicit ScalarOps(KernelEmitter& e) : e_(e), b_(e.b_) {}
  Value* constant(DType t, double v) { return e_.constant(t, v); }
  Value* neg(Value* a, DType t) { return is_float(t) ? b_.CreateFNeg(a) : b_.CreateSub(e_.constant(t, 0), a); }
  Value* add(Value* a, Value* b, DType t) { return is_float(t) ? b_.CreateFAdd(a, b) : b_.CreateAdd(a, b); }
  Value* sub(Value* a, Value* b, DType t) { return is_float(t) ? b_.CreateFSub(a, b) : b_.CreateSub(a, b); }
  Value* mul(Value* a, Value* b, DType t) { return is_float(t) ? b_.CreateFMul(a, b) : b_.CreateMul(a, b); }
  Value* fdiv(Value* a, Value* b, DType) { return b_.CreateFDiv(a, b); }
  Value* idiv(Value* a, Value* b) { return b_.CreateSDiv(a, b); }
  Value* compare(kernel::Compare c, Value* a, Value* b, DType t) {
    using P = llvm::CmpInst::Predicate;
    static constexpr P kFloat[] = {P::FCMP_OEQ, P::FCMP_UNE, P::FCMP_OLT, P::FCMP_OLE, P::FCMP_OGT, P::FCMP_OGE};
    static constexpr P kInt[] = {P::ICMP_EQ, P::ICMP_NE, P::ICMP_SLT, P::ICMP_SLE, P::ICMP_SGT, P::ICMP_SGE};
    auto k = static_cast<size_t>(c);
    return is_float(t) ? b_.CreateFCmp(kFloat[k], a, b) : b_.CreateICmp(kInt[k], a, b);
  }
  Value* select(Value* c, Value* a, Value* b) { return b_.CreateSelect(c, a, b); }
  Value* logic_and(Value* a, Value* b) { return b_.CreateAnd(a, b); }
  Value* logic_or(Value* a, Value* b) { return b_.CreateOr(a, b); }
  Value* logic_not(Value* a) { return b_.CreateNot(a); }
  Value* is_nan(Value* a) { return e_.is_nan(a); }
  Value* abs(Value* a, DType t) {
    return is_float(t) ? e_.intrinsic(llvm::Intrinsic::fabs, {a})
                       : e_.intrinsic(llvm::Intrinsic::abs, {a, b_.getFalse()});
  }
  Value* max(Value* a, Value* b, DType t) {
    return e_.intrinsic(is_float(t) ? llvm::Intrinsic::maximum : llvm::Intrinsic::smax, {a, b});
  }
  Value* min(Value* a, Value* b, DType t) {
    return e_.intrinsic(is_float(t) ? llvm::Intrinsic::minimum : llvm::Intrinsic::smin, {a, b});
  }
  // LLVM's own intrinsics where it has them (it folds and vectorises those), the C library's
  // function otherwise.
  Value* math(std::string_view f, DType t, std::vector<Value*> args) {
    static const std::pair<std::string_view, llvm::Intrinsic::ID> kIntrinsics[] = {
        {"exp", llvm::Intrinsic::exp},    {"log", llvm::Intrinsic::log}, {"sqrt", llvm::Intrinsic::sqrt},
        {"sin", llvm::Intrinsic::sin},    {"cos", llvm::Intrinsic::cos}, {"pow", llvm::Intrinsic::pow},
        {"floor", llvm::Intrinsic::floor}};
    for (const auto& [name, id] : kIntrinsics) {
      if (name == f) return e_.intrinsic(id, std::move(args));
    }
    return e_.math(f, t, std::move(args));
  }
  Value* convert(Value* a, DType from, DType to) {
    llvm::Type* ty = reg_type(e_.c_, to);
    if (auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(a->getType()))
      ty = llvm::FixedVectorType::get(ty, vt->getNumElements());
    if (is_float(from)) return is_float(to) ? b_.CreateFPCast(a, ty) : b_.CreateFPToSI(a, ty);
    return b_.CreateSIToFP(a, ty);
  }

 private:
  KernelEmitter& e_;
  llvm::IRBuilder<>& b_;
};

Value* KernelEmitter::elementwise(const ir::Node& n, const std::vector<Value*>& x, DType in, DType out) {
  ScalarOps ops(*this);
  return kernel::lower_elementwise(ops, n, x, in, out);
}

Value* KernelEmitter::reduce_identity(Op op, DType t) {
  double inf = std::numeric_limits<double>::infinity();
  bool i = t == DType::i32;
  switch (op) {
    case Op::ReduceMax: return constant(t, i ? std::numeric_limits<int32_t>::min() : -inf);
    case Op::ReduceMin: return constant(t, i ? std::numeric_limits<int32_t>::max() : inf);
    default: return constant(t, 0);
  }
}

Value* KernelEmitter::combine(Op op, DType t, Value* acc, Value* x) {
  bool fp = is_float(t);
  switch (op) {
    case Op::ReduceMax: return fp ? intrinsic(llvm::Intrinsic::maximum, {acc, x}) : intrinsic(llvm::Intrinsic::smax, {acc, x});
    case Op::ReduceMin: return fp ? intrinsic(llvm::Intrinsic::minimum, {acc, x}) : intrinsic(llvm::Intrinsic::smin, {acc, x});
    default: {
      if (!fp) return b_.CreateAdd(acc, x);
      // Reassociation lets the loop vectorizer split the sum into vector lanes.
      llvm::FastMathFlags fmf;
      fmf.setAllowReassoc();
      auto* add = llvm::cast<llvm::Instruction>(b_.CreateFAdd(acc, x));
      add->setFastMathFlags(fmf);
      return add;
    }
  }
}

Value* KernelEmitter::view(const ir::Node& n, ir::ValueId v, const Index& idx) {
  const Shape& out = r_.type(v).shape;
  const Shape& in = r_.type(n.operands[0]).shape;
  auto clamp = [&](Value* i, int64_t dim) -> Value* {
    // Folded when the index is known (straight-line kernels): the intrinsic calls would not
    // fold, and every element would then compute its operand again.
    if (auto* c = llvm::dyn_cast<llvm::ConstantInt>(i)) return i64(std::clamp<int64_t>(c->getSExtValue(), 0, std::max<int64_t>(dim - 1, 0)));
    return intrinsic(llvm::Intrinsic::smin, {intrinsic(llvm::Intrinsic::smax, {i, i64(0)}), i64(dim - 1)});
  };
  Index src;
  switch (n.op) {
    case Op::Reshape: {
      if (idx.size() != out.size() || numel(in) == 0) {  // a collapsed kernel's linear index
        Value* f = flat(idx, out);
        src.assign(in.size(), nullptr);
        for (size_t d = in.size(); d-- > 0;) {
          src[d] = d == 0 ? f : b_.CreateURem(f, i64(in[d]));
          if (d > 0) f = b_.CreateUDiv(f, i64(in[d]));
        }
        return at(n.operands[0], src);
      }
      // Runs of dimensions with equal element counts on both sides: a run that is one
      // dimension on each side keeps its index; others are flattened and split again within
      // the run only. Unit dimensions read index 0. A divide per dimension would run at every
      // read, and a reader such as col2im reads 25 reshaped slices per element
      // (docs/performance.md, "Kernel choices, measured").
      std::vector<size_t> on, inn;
      for (size_t d = 0; d < out.size(); ++d) {
        if (out[d] != 1) on.push_back(d);
      }
      for (size_t d = 0; d < in.size(); ++d) {
        if (in[d] != 1) inn.push_back(d);
      }
      src.assign(in.size(), i64(0));
      for (size_t i = 0, k = 0; i < on.size();) {
        size_t i1 = i + 1, k1 = k + 1;
        int64_t po = out[on[i]], pi = in[inn[k]];
        while (po != pi) {
          if (po < pi) {
            po *= out[on[i1++]];
          } else {
            pi *= in[inn[k1++]];
          }
        }
        if (i1 - i == 1 && k1 - k == 1) {
          src[inn[k]] = idx[on[i]];
        } else {
          Value* f = idx[on[i]];
          for (size_t d = i + 1; d < i1; ++d) f = b_.CreateAdd(b_.CreateMul(f, i64(out[on[d]]), "", true, true), idx[on[d]], "", true, true);
          for (size_t d = k1; d-- > k;) {
            src[inn[d]] = d == k ? f : b_.CreateURem(f, i64(in[inn[d]]));
            if (d > k) f = b_.CreateUDiv(f, i64(in[inn[d]]));
          }
        }
        i = i1, k = k1;
      }
      return at(n.operands[0], src);
    }
    case Op::Transpose:
      src.assign(in.size(), nullptr);
      for (size_t i = 0; i < n.attrs.perm.size(); ++i) src[static_cast<size_t>(n.attrs.perm[i])] = idx[i];
      return at(n.operands[0], src);
    case Op::Broadcast: {
      size_t off = out.size() - in.size();
      for (size_t d = 0; d < in.size(); ++d) src.push_back(in[d] == 1 ? i64(0) : idx[d + off]);
      return at(n.operands[0], src);
    }
    case Op::Slice:
      for (size_t d = 0; d < in.size(); ++d) {
        src.push_back(b_.CreateAdd(i64(n.attrs.starts[d]), b_.CreateMul(idx[d], i64(n.attrs.strides[d]))));
      }
      return at(n.operands[0], src);
    case Op::Pad: {
      Value* valid = b_.getTrue();
      for (size_t d = 0; d < in.size(); ++d) {
        Value* t = b_.CreateSub(idx[d], i64(n.attrs.padding[2 * d]));
        Value* q = b_.CreateSDiv(t, i64(n.attrs.strides[d]));
        valid = b_.CreateAnd(valid, b_.CreateICmpSGE(t, i64(0)));
        valid = b_.CreateAnd(valid, b_.CreateICmpEQ(b_.CreateSRem(t, i64(n.attrs.strides[d])), i64(0)));
        valid = b_.CreateAnd(valid, b_.CreateICmpSLT(q, i64(in[d])));
        src.push_back(clamp(q, in[d]));
      }
      if (numel(in) == 0) return constant(r_.type(v).dtype, 0);
      return b_.CreateSelect(valid, at(n.operands[0], src), constant(r_.type(v).dtype, 0));
    }
    case Op::Concat: {
      size_t ax = static_cast<size_t>(n.attrs.axes[0]);
      Value* result = nullptr;
      int64_t offset = 0;
      for (ir::ValueId part : n.operands) {
        int64_t size = r_.type(part).shape[ax];
        if (size == 0) continue;
        Value* local = b_.CreateSub(idx[ax], i64(offset));
        Index pi = idx;
        pi[ax] = clamp(local, size);
        Value* x = at(part, pi);
        result = result ? b_.CreateSelect(b_.CreateICmpSGE(local, i64(0)), x, result) : x;
        offset += size;
      }
      return result;
    }
    case Op::Gather: {
      size_t ax = static_cast<size_t>(n.attrs.axes[0]);
      Value* i = b_.CreateSExt(at(n.operands[1], idx), b_.getInt64Ty());
      src = idx;
      src[ax] = clamp(i, in[ax]);
      return at(n.operands[0], src);
    }
    case Op::Take: {
      size_t ax = static_cast<size_t>(n.attrs.axes[0]);
      size_t ir_rank = r_.type(n.operands[1]).shape.size();
      Index ii(idx.begin() + static_cast<long>(ax), idx.begin() + static_cast<long>(ax + ir_rank));
      Value* i = b_.CreateSExt(at(n.operands[1], ii), b_.getInt64Ty());
      src.assign(idx.begin(), idx.begin() + static_cast<long>(ax));
      src.push_back(clamp(i, in[ax]));
      src.insert(src.end(), idx.begin() + static_cast<long>(ax + ir_rank), idx.end());
      return at(n.operands[0], src);
    }
    default: break;
  }
  detail::fail(ir::op_name(n.op), "internal error: not a view op in the CPU code generator");
}

Value* KernelEmitter::compute(const ir::Node& n, const Index& idx) {
  ir::ValueId res = n.results[0];
  DType out = r_.type(res).dtype;
  switch (ir::op_info(n.op).cls) {
    case ir::OpClass::Unary:
    case ir::OpClass::Binary:
    case ir::OpClass::Compare:
    case ir::OpClass::Select:
    case ir::OpClass::Convert: {
      std::vector<Value*> x;
      for (ir::ValueId o : n.operands) x.push_back(at(o, idx));
      return elementwise(n, x, r_.type(n.operands.back()).dtype, out);
    }
    case ir::OpClass::Constant: return constant(out, n.attrs.data.size() == 1 ? n.attrs.data[0] : 0);
    case ir::OpClass::Iota: {
      Value* i = idx[static_cast<size_t>(n.attrs.axes[0])];
      return is_float(out) ? b_.CreateSIToFP(i, reg_type(c_, out)) : b_.CreateTrunc(i, reg_type(c_, out));
    }
    default: break;
  }
  if (ir::is_view(n.op)) return view(n, res, idx);
  if (k_.kind == kernel::KernelKind::StraightLine &&
      (ir::op_info(n.op).cls == ir::OpClass::Reduce || ir::op_info(n.op).cls == ir::OpClass::MatMul)) {
    return fold(n, idx);
  }
  return gathering(n, idx);
}

}  // namespace fluxion::cpu
