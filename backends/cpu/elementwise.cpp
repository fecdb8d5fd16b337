// Scalar code for elementwise ops, views and reductions' combine step. The semantics follow the
// interpreter's rules exactly (NaN propagation, i32 wrapping and division, saturating
// float-to-int conversion); only the rounding of transcendental functions differs.
#include <algorithm>
#include <limits>

#include "backends/cpu/codegen.h"
#include "fluxion/error.h"

namespace fluxion::cpu {

using ir::Op;
using llvm::Value;

Value* KernelEmitter::intrinsic(llvm::Intrinsic::ID id, std::vector<Value*> args) {
  if (lanes_ > 0) {
    // LLVM's code generator expands these on vectors into a scalar call per lane.
    DType t = args[0]->getType()->getScalarType()->isDoubleTy() ? DType::f64 : DType::f32;
    switch (id) {
      case llvm::Intrinsic::exp: return vector_math("expf", "exp", t, args);
      case llvm::Intrinsic::log: return vector_math("logf", "log", t, args);
      case llvm::Intrinsic::sin: return vector_math("sinf", "sin", t, args);
      case llvm::Intrinsic::cos: return vector_math("cosf", "cos", t, args);
      case llvm::Intrinsic::pow: return vector_math("powf", "pow", t, args);
      default: break;
    }
  }
  return b_.CreateIntrinsic(id, {args[0]->getType()}, args);
}

Value* KernelEmitter::math(const char* f32_name, const char* f64_name, DType t, std::vector<Value*> args) {
  if (lanes_ > 0) return vector_math(f32_name, f64_name, t, args);
  llvm::Type* ty = reg_type(c_, t);
  std::vector<llvm::Type*> params(args.size(), ty);
  llvm::FunctionCallee f = m_.getOrInsertFunction(t == DType::f32 ? f32_name : f64_name, llvm::FunctionType::get(ty, params, false));
  if (auto* fn = llvm::dyn_cast<llvm::Function>(f.getCallee())) {
    fn->setDoesNotThrow();
    fn->setDoesNotAccessMemory();
  }
  return b_.CreateCall(f, args);
}

Value* KernelEmitter::is_nan(Value* x) { return b_.CreateFCmpUNO(x, x); }

Value* KernelEmitter::elementwise(const ir::Node& n, const std::vector<Value*>& x, DType in, DType out) {
  bool fp = is_float(in);
  llvm::Type* ty = reg_type(c_, in);
  auto zero = [&] { return constant(in, 0); };
  auto one = [&] { return constant(in, 1); };
  switch (n.op) {
    case Op::Neg: return fp ? b_.CreateFNeg(x[0]) : b_.CreateSub(zero(), x[0]);
    case Op::Abs: return fp ? intrinsic(llvm::Intrinsic::fabs, {x[0]}) : intrinsic(llvm::Intrinsic::abs, {x[0], b_.getFalse()});
    case Op::Sign:
      if (fp) {
        return b_.CreateSelect(b_.CreateFCmpOGT(x[0], zero()), one(),
                               b_.CreateSelect(b_.CreateFCmpOLT(x[0], zero()), constant(in, -1), x[0]));
      }
      return b_.CreateSelect(b_.CreateICmpSGT(x[0], zero()), one(),
                             b_.CreateSelect(b_.CreateICmpSLT(x[0], zero()), constant(in, -1), zero()));
    case Op::Square: return fp ? b_.CreateFMul(x[0], x[0]) : b_.CreateMul(x[0], x[0]);
    case Op::Relu: return fp ? intrinsic(llvm::Intrinsic::maximum, {x[0], zero()}) : intrinsic(llvm::Intrinsic::smax, {x[0], zero()});
    case Op::Exp: return intrinsic(llvm::Intrinsic::exp, {x[0]});
    case Op::Expm1: return math("expm1f", "expm1", in, {x[0]});
    case Op::Log: return intrinsic(llvm::Intrinsic::log, {x[0]});
    case Op::Log1p: return math("log1pf", "log1p", in, {x[0]});
    case Op::Sqrt: return intrinsic(llvm::Intrinsic::sqrt, {x[0]});
    case Op::Rsqrt: return b_.CreateFDiv(one(), intrinsic(llvm::Intrinsic::sqrt, {x[0]}));
    case Op::Sin: return intrinsic(llvm::Intrinsic::sin, {x[0]});
    case Op::Cos: return intrinsic(llvm::Intrinsic::cos, {x[0]});
    case Op::Tanh: return math("tanhf", "tanh", in, {x[0]});
    case Op::Sigmoid: {
      // e = exp(-|x|) never overflows; sigmoid is 1/(1+e) for x >= 0 and e/(1+e) below.
      Value* e = intrinsic(llvm::Intrinsic::exp, {b_.CreateFNeg(intrinsic(llvm::Intrinsic::fabs, {x[0]}))});
      Value* r = b_.CreateFDiv(one(), b_.CreateFAdd(one(), e));
      return b_.CreateSelect(b_.CreateFCmpOGE(x[0], zero()), r, b_.CreateFMul(e, r));
    }
    case Op::Softplus: {
      Value* e = intrinsic(llvm::Intrinsic::exp, {b_.CreateFNeg(intrinsic(llvm::Intrinsic::fabs, {x[0]}))});
      Value* pos = b_.CreateSelect(is_nan(x[0]), x[0], intrinsic(llvm::Intrinsic::maxnum, {x[0], zero()}));
      return b_.CreateFAdd(pos, math("log1pf", "log1p", in, {e}));
    }
    case Op::Erf: return math("erff", "erf", in, {x[0]});
    case Op::Floor: return intrinsic(llvm::Intrinsic::floor, {x[0]});
    case Op::Not: return b_.CreateNot(x[0]);
    case Op::StopGradient: return x[0];
    case Op::Add: return fp ? b_.CreateFAdd(x[0], x[1]) : b_.CreateAdd(x[0], x[1]);
    case Op::Sub: return fp ? b_.CreateFSub(x[0], x[1]) : b_.CreateSub(x[0], x[1]);
    case Op::Mul: return fp ? b_.CreateFMul(x[0], x[1]) : b_.CreateMul(x[0], x[1]);
    case Op::Div: {
      if (fp) return b_.CreateFDiv(x[0], x[1]);
      // x / 0 = 0, and INT_MIN / -1 wraps, as the interpreter defines them.
      Value* zero_div = b_.CreateICmpEQ(x[1], zero());
      Value* minus_one = b_.CreateICmpEQ(x[1], constant(in, -1));
      Value* safe = b_.CreateSelect(b_.CreateOr(zero_div, minus_one), one(), x[1]);
      Value* q = b_.CreateSDiv(x[0], safe);
      return b_.CreateSelect(zero_div, zero(), b_.CreateSelect(minus_one, b_.CreateSub(zero(), x[0]), q));
    }
    case Op::Max: return fp ? intrinsic(llvm::Intrinsic::maximum, {x[0], x[1]}) : intrinsic(llvm::Intrinsic::smax, {x[0], x[1]});
    case Op::Min: return fp ? intrinsic(llvm::Intrinsic::minimum, {x[0], x[1]}) : intrinsic(llvm::Intrinsic::smin, {x[0], x[1]});
    case Op::Pow: return intrinsic(llvm::Intrinsic::pow, {x[0], x[1]});
    case Op::Atan2: return math("atan2f", "atan2", in, {x[0], x[1]});
    case Op::And: return b_.CreateAnd(x[0], x[1]);
    case Op::Or: return b_.CreateOr(x[0], x[1]);
    case Op::Eq: return fp ? b_.CreateFCmpOEQ(x[0], x[1]) : b_.CreateICmpEQ(x[0], x[1]);
    case Op::Ne: return fp ? b_.CreateFCmpUNE(x[0], x[1]) : b_.CreateICmpNE(x[0], x[1]);
    case Op::Lt: return fp ? b_.CreateFCmpOLT(x[0], x[1]) : b_.CreateICmpSLT(x[0], x[1]);
    case Op::Le: return fp ? b_.CreateFCmpOLE(x[0], x[1]) : b_.CreateICmpSLE(x[0], x[1]);
    case Op::Gt: return fp ? b_.CreateFCmpOGT(x[0], x[1]) : b_.CreateICmpSGT(x[0], x[1]);
    case Op::Ge: return fp ? b_.CreateFCmpOGE(x[0], x[1]) : b_.CreateICmpSGE(x[0], x[1]);
    case Op::Select: return b_.CreateSelect(x[0], x[1], x[2]);
    case Op::Convert: {
      llvm::Type* to = reg_type(c_, out);
      if (in == out) return x[0];
      if (out == DType::boolean) return fp ? b_.CreateFCmpUNE(x[0], zero()) : b_.CreateICmpNE(x[0], zero());
      if (in == DType::boolean) return is_float(out) ? b_.CreateUIToFP(x[0], to) : b_.CreateZExt(x[0], to);
      if (fp && is_float(out)) return b_.CreateFPCast(x[0], to);
      if (fp) return b_.CreateIntrinsic(llvm::Intrinsic::fptosi_sat, {to, ty}, {x[0]});
      return b_.CreateSIToFP(x[0], to);
    }
    default: break;
  }
  detail::fail(ir::op_name(n.op), "internal error: not an elementwise op in the CPU code generator");
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
  if (kernel::is_view_op(n.op)) return view(n, res, idx);
  if (k_.kind == kernel::KernelKind::StraightLine &&
      (ir::op_info(n.op).cls == ir::OpClass::Reduce || ir::op_info(n.op).cls == ir::OpClass::MatMul)) {
    return fold(n, idx);
  }
  return gathering(n, idx);
}

}  // namespace fluxion::cpu
