// Straight-line kernels (kernel::KernelKind::StraightLine): a small region as one block of code.
#include <utility>

#include "backends/cpu/codegen.h"
#include "backends/cpu/native.h"

namespace fluxion::cpu {

using llvm::Value;

namespace {

// The constant multi-index of row-major position `flat` in `shape`.
Index index_of(llvm::IRBuilder<>& b, const Shape& shape, int64_t flat) {
  Index idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = b.getInt64(static_cast<uint64_t>(flat % shape[d]));
    flat /= shape[d];
  }
  return idx;
}

// The vector width for elementwise node n in a straight-line kernel (0: scalar code): float
// operations on at least two elements, in as few host vectors as hold them.
unsigned vector_lanes(const ir::Region& r, const ir::Node& n, int vector_bytes) {
  ir::OpClass cls = ir::op_info(n.op).cls;
  bool elementwise = cls == ir::OpClass::Unary || cls == ir::OpClass::Binary || cls == ir::OpClass::Compare ||
                     cls == ir::OpClass::Select;
  DType in = r.type(n.operands.back()).dtype;
  int64_t count = r.type(n.results[0]).numel();
  if (!elementwise || !is_float(in) || count < 2) return 0;
  int64_t widest = vector_bytes / dtype_size(register_dtype(in));
  int64_t lanes = 2;
  while (lanes < count && lanes < widest) lanes *= 2;
  return static_cast<unsigned>(lanes);
}

}  // namespace

void KernelEmitter::vector_node(const ir::Node& n, unsigned lanes) {
  ir::ValueId v = n.results[0];
  const Shape& shape = region_.type(v).shape;
  int64_t count = numel(shape);
  DType in = region_.type(n.operands.back()).dtype, out = region_.type(v).dtype;
  for (int64_t first = 0; first < count; first += lanes) {
    std::vector<Value*> xs;
    for (ir::ValueId o : n.operands) {
      DType t = region_.type(o).dtype;
      Value* x = llvm::PoisonValue::get(llvm::FixedVectorType::get(reg_type(context_, t), lanes));
      for (unsigned l = 0; l < lanes; ++l) {
        // Lanes past the end hold zeros: computed and dropped, never read.
        Value* e = first + l < count ? at(o, index_of(builder_, shape, first + l)) : constant(t, 0);
        x = builder_.CreateInsertElement(x, e, builder_.getInt64(l));
      }
      xs.push_back(x);
    }
    lanes_ = lanes;
    Value* y = elementwise(n, xs, in, out);
    lanes_ = 0;
    for (unsigned l = 0; l < lanes && first + l < count; ++l) {
      memo_[{v, index_of(builder_, shape, first + l)}] = builder_.CreateExtractElement(y, builder_.getInt64(l));
    }
  }
}

Value* KernelEmitter::vector_math(std::string_view name, DType t, const std::vector<Value*>& args) {
  auto* vt = llvm::cast<llvm::FixedVectorType>(args[0]->getType());
  unsigned lanes = vt->getNumElements();
  std::string variant = libmvec_variant(libm_name(name, t), static_cast<int>(lanes), static_cast<int>(dtype_size(t)),
                                        static_cast<int>(args.size()));
  if (!variant.empty()) {
    std::vector<llvm::Type*> params(args.size(), vt);
    llvm::FunctionCallee f = module_.getOrInsertFunction(variant, llvm::FunctionType::get(vt, params, false));
    if (auto* fn = llvm::dyn_cast<llvm::Function>(f.getCallee())) {
      fn->setDoesNotThrow();
      fn->setDoesNotAccessMemory();
    }
    return builder_.CreateCall(f, args);
  }
  unsigned saved = std::exchange(lanes_, 0);
  Value* y = llvm::PoisonValue::get(vt);
  for (unsigned l = 0; l < lanes; ++l) {
    std::vector<Value*> scalars;
    for (Value* a : args) scalars.push_back(builder_.CreateExtractElement(a, builder_.getInt64(l)));
    y = builder_.CreateInsertElement(y, math(name, t, scalars), builder_.getInt64(l));
  }
  lanes_ = saved;
  return y;
}

void KernelEmitter::straight_line() {
  // Node by node, every element of a node next to the others: the SLP vectorizer then finds
  // isomorphic groups (12 sigmoids, not sigmoids interleaved with the sum that reads them).
  // Views are index math only.
  for (size_t n : kernel_.nodes) {
    const ir::Node& node = region_.nodes[n];
    if (ir::is_view(node.op) || node.op == ir::Op::Constant) continue;
    if (unsigned lanes = vector_lanes(region_, node, target_.vector_bytes)) {
      vector_node(node, lanes);
      continue;
    }
    for (ir::ValueId v : node.results) {
      for (int64_t e = 0; e < region_.type(v).numel(); ++e) at(v, index_of(builder_, region_.type(v).shape, e));
    }
  }
  // Every element is computed before any is stored: a result may share bytes with a parameter
  // that a later element still reads.
  std::vector<std::pair<ir::ValueId, std::vector<Value*>>> results;
  for (size_t n : kernel_.nodes) {
    for (ir::ValueId v : region_.nodes[n].results) {
      if (schedule_.storage[static_cast<size_t>(v)] != kernel::Storage::Slot) continue;
      const Shape& shape = region_.type(v).shape;
      std::vector<Value*> elems;
      for (int64_t e = 0; e < numel(shape); ++e) elems.push_back(at(v, index_of(builder_, shape, e)));
      results.emplace_back(v, std::move(elems));
    }
  }
  for (const auto& [v, elems] : results) {
    for (size_t e = 0; e < elems.size(); ++e)
      store(v, index_of(builder_, region_.type(v).shape, static_cast<int64_t>(e)), elems[e]);
  }
}

Value* KernelEmitter::fold(const ir::Node& n, const Index& idx) {
  ir::ValueId x = n.operands[0];
  const Shape& in = region_.type(x).shape;
  DType t = region_.type(n.results[0]).dtype;
  // The terms of the sum (or reduction): for a matmul [..., m, k] x [..., k, n] at [..., i, j]
  // the products a[..., i, k] b[..., k, j]; for a reduction the elements at the folded indices.
  std::vector<Value*> terms, factors;
  if (n.op == ir::Op::MatMul) {
    size_t rank = in.size();
    for (int64_t k = 0; k < in[rank - 1]; ++k) {
      Index ia = idx, ib = idx;
      ia[rank - 1] = i64(k);
      ib[rank - 2] = i64(k);
      terms.push_back(at(x, ia));
      factors.push_back(at(n.operands[1], ib));
    }
  } else {
    const std::vector<int64_t>& axes = n.attrs.axes;
    auto folded = [&](size_t d) { return std::find(axes.begin(), axes.end(), static_cast<int64_t>(d)) != axes.end(); };
    Shape extent;
    for (size_t d = 0; d < in.size(); ++d) {
      if (folded(d)) extent.push_back(in[d]);
    }
    for (int64_t e = 0; e < numel(extent); ++e) {
      Index inner = index_of(builder_, extent, e), full;
      size_t kept = 0, fi = 0;
      for (size_t d = 0; d < in.size(); ++d) full.push_back(folded(d) ? inner[fi++] : idx[kept++]);
      terms.push_back(at(x, full));
    }
  }
  ir::Op combine_op = n.op == ir::Op::MatMul ? ir::Op::ReduceSum : n.op;
  if (terms.empty()) return reduce_identity(combine_op, t);
  int64_t widest = target_.vector_bytes / dtype_size(t);
  if (combine_op == ir::Op::ReduceSum && is_float(t) && terms.size() >= 4) {
    // A float sum as vector products and one reassociating horizontal add (zero lanes pad).
    int64_t lanes = 2;
    while (lanes < static_cast<int64_t>(terms.size()) && lanes < widest) lanes *= 2;
    auto vector_of = [&](const std::vector<Value*>& v, size_t first) {
      Value* vec =
          llvm::PoisonValue::get(llvm::FixedVectorType::get(reg_type(context_, t), static_cast<unsigned>(lanes)));
      for (int64_t l = 0; l < lanes; ++l) {
        size_t e = first + static_cast<size_t>(l);
        vec = builder_.CreateInsertElement(vec, e < v.size() ? v[e] : constant(t, 0),
                                           builder_.getInt64(static_cast<uint64_t>(l)));
      }
      return vec;
    };
    Value* sum = nullptr;
    for (size_t first = 0; first < terms.size(); first += static_cast<size_t>(lanes)) {
      Value* part = vector_of(terms, first);
      if (!factors.empty()) part = builder_.CreateFMul(part, vector_of(factors, first));
      sum = sum ? builder_.CreateFAdd(sum, part) : part;
    }
    auto* total = llvm::cast<llvm::Instruction>(builder_.CreateFAddReduce(constant(t, 0), sum));
    llvm::FastMathFlags fmf;
    fmf.setAllowReassoc();
    total->setFastMathFlags(fmf);
    return total;
  }
  // A sum starts from +0 as the interpreter's does (-0 + -0 would stay -0); max and min from
  // their first term.
  Value* acc = combine_op == ir::Op::ReduceSum ? reduce_identity(combine_op, t) : nullptr;
  for (size_t e = 0; e < terms.size(); ++e) {
    Value* term = factors.empty() ? terms[e]
                  : is_float(t)   ? builder_.CreateFMul(terms[e], factors[e])
                                  : builder_.CreateMul(terms[e], factors[e]);
    acc = acc ? combine(combine_op, t, acc, term) : term;
  }
  return acc;
}

}  // namespace fluxion::cpu
