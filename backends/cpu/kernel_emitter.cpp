// KernelEmitter: the loop nest of a Loop kernel, index math for views, loads and stores.
#include <algorithm>
#include <utility>

#include <llvm/IR/MDBuilder.h>

#include "backends/cpu/codegen.h"
#include "fluxion/error.h"
#include "fluxion/half.h"

using fluxion::ir::Op;

namespace fluxion::cpu {

using llvm::Value;

void emit_if(llvm::IRBuilder<>& b, Value* cond, const std::function<void()>& then) {
  llvm::Function* f = b.GetInsertBlock()->getParent();
  auto* yes = llvm::BasicBlock::Create(b.getContext(), "then", f);
  auto* after = llvm::BasicBlock::Create(b.getContext(), "endif", f);
  b.CreateCondBr(cond, yes, after);
  b.SetInsertPoint(yes);
  then();
  b.CreateBr(after);
  b.SetInsertPoint(after);
}

namespace {

// Loops emit_for has left rolled on this thread: a loop whose body left none is innermost once
// the loops in it are unrolled. And the instructions their unrolling adds to the code emitted.
thread_local uint64_t rolled_loops = 0;
thread_local int64_t unrolled_growth = 0;

// Iterations of the loop from lo to hi when both are constants, else -1.
int64_t constant_trips(Value* lo, Value* hi) {
  auto* l = llvm::dyn_cast<llvm::ConstantInt>(lo);
  auto* h = llvm::dyn_cast<llvm::ConstantInt>(hi);
  return l && h ? std::max<int64_t>(0, h->getSExtValue() - l->getSExtValue()) : -1;
}

// Instructions of a loop's body: block `first` and the blocks after `last_before` (emit_for
// appends the blocks a body makes to the function).
int64_t body_instructions(llvm::BasicBlock* first, llvm::BasicBlock* last_before) {
  int64_t n = static_cast<int64_t>(first->size());
  for (auto it = std::next(last_before->getIterator()); it != first->getParent()->end(); ++it)
    n += static_cast<int64_t>(it->size());
  return n;
}

}  // namespace

std::vector<Value*> emit_for(llvm::IRBuilder<>& b, Value* lo, Value* hi, const std::vector<Value*>& carried,
                             const std::function<std::vector<Value*>(Value*, const std::vector<Value*>&)>& body, LoopHint hint) {
  uint64_t rolled_before = rolled_loops;
  int64_t growth_before = unrolled_growth;
  llvm::Function* f = b.GetInsertBlock()->getParent();
  llvm::LLVMContext& c = b.getContext();
  llvm::BasicBlock* pre = b.GetInsertBlock();
  auto* head = llvm::BasicBlock::Create(c, "loop", f);
  auto* loop_body = llvm::BasicBlock::Create(c, "body", f);
  auto* exit = llvm::BasicBlock::Create(c, "exit", f);
  b.CreateBr(head);
  b.SetInsertPoint(head);
  llvm::PHINode* i = b.CreatePHI(b.getInt64Ty(), 2, "i");
  i->addIncoming(lo, pre);
  std::vector<llvm::PHINode*> phis;
  std::vector<Value*> cur;
  for (Value* v : carried) {
    llvm::PHINode* p = b.CreatePHI(v->getType(), 2);
    p->addIncoming(v, pre);
    phis.push_back(p);
    cur.push_back(p);
  }
  b.CreateCondBr(b.CreateICmpSLT(i, hi), loop_body, exit);
  b.SetInsertPoint(loop_body);
  std::vector<Value*> next = body(i, cur);
  // A small loop of a few constant iterations, its inner loops unrolled, is unrolled, as LLVM's
  // unroller would have (a pooling window's taps; a narrow panel's packing, whose 16 columns then
  // load as a vector, not as a gather).
  int64_t trips = constant_trips(lo, hi);
  int64_t written = body_instructions(loop_body, exit);
  int64_t size = written + unrolled_growth - growth_before;
  if (hint == LoopHint::None && rolled_loops == rolled_before && trips >= 0 && trips <= kMaxUnrolledTrips &&
      trips * size <= kMaxUnrolledInstructions) {
    hint = LoopHint::Unrolled;
    unrolled_growth = growth_before + trips * size - written;
  } else {
    ++rolled_loops;
  }
  Value* inc = b.CreateAdd(i, b.getInt64(1), "", true, true);
  llvm::BasicBlock* latch = b.GetInsertBlock();
  llvm::BranchInst* back = b.CreateBr(head);
  if (hint != LoopHint::None) {
    auto named = [&](const char* name, llvm::Constant* value) {
      std::vector<llvm::Metadata*> fields{llvm::MDString::get(c, name)};
      if (value) fields.push_back(llvm::ConstantAsMetadata::get(value));
      return llvm::MDNode::get(c, fields);
    };
    llvm::MDNode* property = hint == LoopHint::Vectorize ? named("llvm.loop.vectorize.enable", b.getTrue())
                             : hint == LoopHint::Rolled  ? named("llvm.loop.unroll.disable", nullptr)
                             : hint == LoopHint::Paired  ? named("llvm.loop.unroll.count", b.getInt32(2))
                                                         : named("llvm.loop.unroll.full", nullptr);
    llvm::MDNode* loop = llvm::MDNode::getDistinct(c, {nullptr, property});
    loop->replaceOperandWith(0, loop);
    back->setMetadata(llvm::LLVMContext::MD_loop, loop);
  }
  i->addIncoming(inc, latch);
  for (size_t k = 0; k < phis.size(); ++k) phis[k]->addIncoming(next[k], latch);
  b.SetInsertPoint(exit);
  return cur;
}

KernelEmitter::KernelEmitter(const ir::Region& r, const kernel::RegionSchedule& s, const kernel::Kernel& k,
                             const Target& target, llvm::Module& m, llvm::IRBuilder<>& b)
    : region_(r),
      schedule_(s),
      kernel_(k),
      target_(target),
      module_(m),
      builder_(b),
      context_(m.getContext()),
      frame_(r, s, k, k.plan) {}

Value* KernelEmitter::i64(int64_t v) { return builder_.getInt64(static_cast<uint64_t>(v)); }

Value* KernelEmitter::constant(DType t, double v) {
  if (lanes_ > 0) {
    unsigned lanes = std::exchange(lanes_, 0);
    auto* splat = llvm::ConstantVector::getSplat(llvm::ElementCount::getFixed(lanes), llvm::cast<llvm::Constant>(constant(t, v)));
    lanes_ = lanes;
    return splat;
  }
  switch (t) {
    case DType::f32:
      return llvm::ConstantFP::get(llvm::Type::getFloatTy(context_), static_cast<double>(static_cast<float>(v)));
    case DType::f64: return llvm::ConstantFP::get(llvm::Type::getDoubleTy(context_), v);
    case DType::i32: return builder_.getInt32(static_cast<uint32_t>(static_cast<int32_t>(v)));
    case DType::boolean: return builder_.getInt1(v != 0);
    case DType::f16: return llvm::ConstantFP::get(llvm::Type::getFloatTy(context_), f16_value(f16_bits(v)));
    case DType::bf16: return llvm::ConstantFP::get(llvm::Type::getFloatTy(context_), bf16_value(bf16_bits(v)));
  }
  return nullptr;
}

Value* KernelEmitter::flat(const Index& idx, const Shape& shape) {
  // In a collapsed kernel every array has the kernel's element count and one linear index.
  if (collapsed_ && idx.size() == 1 && shape.size() != 1) return idx[0];
  Value* f = i64(0);
  for (size_t d = 0; d < shape.size(); ++d) {
    f = d == 0 ? idx[0]
               : builder_.CreateAdd(builder_.CreateMul(f, i64(shape[d]), "", true, true), idx[d], "", true, true);
  }
  return f;
}

Value* KernelEmitter::pointer(ir::ValueId v) {
  if (schedule_.storage[static_cast<size_t>(v)] == kernel::Storage::Alias)
    v = schedule_.alias_of[static_cast<size_t>(v)];
  return table_pointer(v);
}

Value* KernelEmitter::scratch() { return table_pointer(kScratchBuffer); }

Value* KernelEmitter::table_pointer(ir::ValueId v) {
  auto it = pointers_.find(v);
  if (it != pointers_.end()) return it->second;
  // Loaded once, in the entry block, so every use is dominated.
  llvm::IRBuilder<> eb(&*builder_.GetInsertBlock()->getParent()->getEntryBlock().getTerminator());
  Value* slot = eb.CreateConstInBoundsGEP1_64(eb.getPtrTy(), bufs_, buffer_values_.size());
  auto* p = eb.CreateLoad(eb.getPtrTy(), slot);
  buffer_values_.push_back(v);
  pointers_[v] = p;
  return p;
}

// The row's start and the last index as two steps: one flat sum of integer adds becomes 'or'
// chains in LLVM whose flags are later dropped, and a column slice at an offset then loads with
// gathers instead of consecutive vectors.
Value* KernelEmitter::address(ir::ValueId v, const Index& idx) {
  const TensorType& t = region_.type(v);
  llvm::Type* elem = mem_type(context_, t.dtype);
  if (idx.size() < 2) return builder_.CreateInBoundsGEP(elem, pointer(v), flat(idx, t.shape));
  Index outer(idx.begin(), idx.end() - 1);
  Shape outer_shape(t.shape.begin(), t.shape.end() - 1);
  Value* row = builder_.CreateMul(flat(outer, outer_shape), i64(t.shape.back()), "", true, true);
  return builder_.CreateInBoundsGEP(elem, builder_.CreateInBoundsGEP(elem, pointer(v), row), idx.back());
}

Value* KernelEmitter::load(ir::ValueId v, const Index& idx) {
  const TensorType& t = region_.type(v);
  ir::ValueId base = schedule_.storage[static_cast<size_t>(v)] == kernel::Storage::Alias
                         ? schedule_.alias_of[static_cast<size_t>(v)]
                         : v;
  if (schedule_.storage[static_cast<size_t>(base)] == kernel::Storage::None ||
      schedule_.storage[static_cast<size_t>(base)] == kernel::Storage::View) {
    detail::fail("cpu codegen", "internal error: value %" + std::to_string(v) + " is read but has no storage");
  }
  Value* p = address(v, idx);
  return from_memory(builder_, t.dtype, builder_.CreateLoad(mem_type(context_, t.dtype), p));
}

void KernelEmitter::store_flat(ir::ValueId v, Value* f, Value* x) {
  DType t = region_.type(v).dtype;
  builder_.CreateStore(to_memory(builder_, t, x), builder_.CreateInBoundsGEP(mem_type(context_, t), pointer(v), f));
}

void KernelEmitter::store(ir::ValueId v, const Index& idx, Value* x) {
  const TensorType& t = region_.type(v);
  builder_.CreateStore(to_memory(builder_, t.dtype, x), address(v, idx));
}

Value* KernelEmitter::at(ir::ValueId v, const Index& idx) {
  auto key = std::make_pair(v, idx);
  if (auto it = memo_.find(key); it != memo_.end()) return it->second;
  Value* x = nullptr;
  switch (frame_.source(v)) {
    case kernel::KernelFrame::Source::Computed: x = compute(*frame_.producer(v), idx); break;
    case kernel::KernelFrame::Source::Splat:
      x = constant(region_.type(v).dtype, frame_.producer(v)->attrs.data[0]);
      break;
    case kernel::KernelFrame::Source::View: x = view(*frame_.producer(v), v, idx); break;
    case kernel::KernelFrame::Source::Memory: x = load(v, idx); break;
  }
  memo_[key] = x;
  return x;
}

Value* KernelEmitter::at_flat(ir::ValueId v, Value* f) {
  kernel::Storage st = schedule_.storage[static_cast<size_t>(v)];
  const TensorType& t = region_.type(v);
  // A 16-bit element is held widened in f32 registers, so a widening conversion the kernel
  // recomputes (a product's 16-bit operand) reads its operand at the same flat index.
  const ir::Node* p = frame_.producer(v);
  if (frame_.computed(v) && p && kernel::is_widening(region_, *p)) return at_flat(p->operands[0], f);
  if (!frame_.computed(v) &&
      (st == kernel::Storage::Param || st == kernel::Storage::Slot || st == kernel::Storage::Output ||
       st == kernel::Storage::Alias || st == kernel::Storage::Global)) {
    llvm::Type* et = mem_type(context_, t.dtype);
    return from_memory(builder_, t.dtype, builder_.CreateLoad(et, builder_.CreateInBoundsGEP(et, pointer(v), f)));
  }
  Index idx(t.shape.size());
  for (size_t d = t.shape.size(); d-- > 0;) {
    idx[d] = d == 0 ? f : builder_.CreateURem(f, i64(t.shape[d]));
    if (d > 0) f = builder_.CreateUDiv(f, i64(t.shape[d]));
  }
  return at(v, idx);
}

void KernelEmitter::nest(const Shape& shape, Value* lo, Value* hi, const std::function<void(const Index&)>& body) {
  Index idx;
  std::function<void(size_t)> level = [&](size_t d) {
    if (d == shape.size()) {
      body(idx);
      return;
    }
    Value* from = d == 0 ? lo : i64(0);
    Value* to = d == 0 ? hi : i64(shape[d]);
    emit_for(builder_, from, to, {}, [&](Value* i, const std::vector<Value*>&) {
      idx.push_back(i);
      level(d + 1);
      idx.pop_back();
      return std::vector<Value*>{};
    });
  };
  level(0);
}

// Reduction results are accumulated in place: set them to the identity over the part of the
// output this call's range touches. A reduction that folds the range's dimension (0, or a
// product's columns where its parts split them) is whole in every call: the kernel is called
// once, or once per part with partial results of its own. Only a range over dimension 0 is kept
// by a reduction (fuse.cpp splits a product's columns only when every reduction folds them).
void KernelEmitter::init_reductions(Value* lo, Value* hi) {
  int64_t range_axis = kernel_.split_by(kernel::SplitOver::Columns) ? 1 : 0;
  for (size_t n : kernel_.nodes) {
    const ir::Node& node = region_.nodes[n];
    if (ir::op_info(node.op).cls != ir::OpClass::Reduce) continue;
    ir::ValueId out = node.results[0];
    const TensorType& t = region_.type(out);
    bool keeps_range_axis =
        std::find(node.attrs.axes.begin(), node.attrs.axes.end(), range_axis) == node.attrs.axes.end();
    Value* init = reduce_identity(node.op, t.dtype);
    if (t.shape.empty()) {
      store(out, {}, init);
    } else if (keeps_range_axis) {
      nest(t.shape, lo, hi, [&](const Index& idx) { store(out, idx, init); });
    } else {
      nest(t.shape, i64(0), i64(t.shape[0]), [&](const Index& idx) { store(out, idx, init); });
    }
  }
}

// Everything the kernel owns at one index of its space: stores of materialized values and
// accumulation of reductions.
Index KernelEmitter::reduced_index(const ir::Node& node, const Index& idx) {
  Index out;
  for (size_t d = 0; d < idx.size(); ++d) {
    if (std::find(node.attrs.axes.begin(), node.attrs.axes.end(), static_cast<int64_t>(d)) == node.attrs.axes.end()) {
      out.push_back(idx[d]);
    }
  }
  return out;
}

void KernelEmitter::body_at(const Index& idx, const std::vector<std::pair<ir::ValueId, Value*>>& known,
                            std::map<size_t, Value*>* accumulators) {
  memo_.clear();
  for (const auto& [v, x] : known) memo_[{v, idx}] = x;
  for (size_t n : kernel_.nodes) {
    const ir::Node& node = region_.nodes[n];
    if (kernel_.kind == kernel::KernelKind::MatMul && n == kernel_.root) continue;
    if (ir::op_info(node.op).cls == ir::OpClass::Reduce) {
      ir::ValueId res = node.results[0];
      Value* x = at(node.operands[0], idx);
      DType t = region_.type(res).dtype;
      auto acc = accumulators ? accumulators->find(n) : std::map<size_t, Value*>::iterator{};
      if (accumulators && acc != accumulators->end()) {
        acc->second = combine(node.op, t, acc->second, x);
        continue;
      }
      Index out = reduced_index(node, idx);
      store(res, out, combine(node.op, t, load(res, out), x));
      continue;
    }
    for (ir::ValueId v : node.results) {
      kernel::Storage st = schedule_.storage[static_cast<size_t>(v)];
      if (st == kernel::Storage::Slot || st == kernel::Storage::Output) store(v, idx, at(v, idx));
    }
  }
}

// `void name(ptr bufs, rest...)`, with the builder at the start of its body: an entry block
// that only branches on (allocas and buffer pointers go there) and the first block after it.
llvm::Function* KernelEmitter::begin_function(const std::string& name, const std::vector<llvm::Type*>& rest) {
  std::vector<llvm::Type*> params{builder_.getPtrTy()};
  params.insert(params.end(), rest.begin(), rest.end());
  auto* f = llvm::Function::Create(llvm::FunctionType::get(builder_.getVoidTy(), params, false),
                                   llvm::Function::InternalLinkage, name, module_);
  f->addFnAttr(llvm::Attribute::NoUnwind);
  bufs_ = f->getArg(0);
  auto* entry = llvm::BasicBlock::Create(context_, "entry", f);
  auto* start = llvm::BasicBlock::Create(context_, "start", f);
  builder_.SetInsertPoint(entry);
  builder_.CreateBr(start);
  builder_.SetInsertPoint(start);
  return f;
}

void KernelEmitter::vectorised(llvm::Function* f) const {
  // Vectors as wide as the machine has: LLVM's x86 tuning otherwise prefers 256 bits on
  // AVX-512 CPUs and splits wider vectors (the matmul's register tiles among them).
  f->addFnAttr("prefer-vector-width", std::to_string(8 * target_.vector_bytes));
  f->addFnAttr("min-legal-vector-width",
               std::to_string(8 * std::max(target_.vector_bytes, target_.matmul_vector_bytes)));
}

llvm::Function* KernelEmitter::emit(const std::string& name) {
  llvm::Function* f = begin_function(name, {builder_.getInt64Ty(), builder_.getInt64Ty()});
  vectorised(f);
  Value* lo = f->getArg(1);
  Value* hi = f->getArg(2);
  using kernel::Strategy;
  switch (kernel_.plan.strategy) {
    case Strategy::Block: straight_line(); break;
    case Strategy::Rows: scatter(lo, hi); break;
    case Strategy::Tiles:
    case Strategy::Bf16Tiles:
    case Strategy::TransposedTiles:
    case Strategy::Sliding:
    case Strategy::Im2col: product(lo, hi); break;
    case Strategy::Scalar:
      init_reductions(lo, hi);
      body_at({});
      break;
    case Strategy::Flat: {
      // One flat loop instead of a nest: no per-row loop overhead or partial reductions.
      init_reductions(lo, hi);
      collapsed_ = true;
      int64_t n = numel(kernel_.space);
      Value* scale = i64(n / std::max<int64_t>(1, kernel_.space[0]));
      nest({n}, builder_.CreateMul(lo, scale), builder_.CreateMul(hi, scale), [&](const Index& idx) { body_at(idx); });
      collapsed_ = false;
      break;
    }
    case Strategy::PoolWindows:
      init_reductions(lo, hi);
      pool_grad_by_windows(lo, hi);
      break;
    case Strategy::Pieces:
      init_reductions(lo, hi);
      concat_by_pieces(lo, hi);
      break;
    case Strategy::Nest:
      init_reductions(lo, hi);
      nest(kernel_.space, lo, hi, [&](const Index& idx) { body_at(idx); });
      break;
    default:
      detail::fail("cpu codegen", std::string("internal error: a kernel planned '") +
                                      kernel::strategy_name(kernel_.plan.strategy) + "' is not a CPU strategy");
  }
  builder_.CreateRetVoid();
  mark_alias_scopes(f, name);
  return f;
}

llvm::Function* KernelEmitter::emit_pack(const std::string& name) {
  llvm::Function* f = begin_function(name, {builder_.getInt64Ty(), builder_.getInt64Ty()});
  vectorised(f);
  gemm_pack(matmul_gemm(), f->getArg(1), f->getArg(2));
  builder_.CreateRetVoid();
  mark_alias_scopes(f, name);
  return f;
}

// Distinct buffers never overlap where one is written (the memory plan guarantees it): say so
// with one alias scope per buffer, so loops vectorize without run-time overlap checks.
void KernelEmitter::mark_alias_scopes(llvm::Function* f, const std::string& name) {
  llvm::MDBuilder mdb(context_);
  llvm::MDNode* domain = mdb.createAnonymousAliasScopeDomain(name);
  std::vector<llvm::Metadata*> scopes;
  for (size_t i = 0; i < buffer_values_.size(); ++i) scopes.push_back(mdb.createAnonymousAliasScope(domain));
  std::map<Value*, size_t> which;
  for (size_t i = 0; i < buffer_values_.size(); ++i) which[pointers_[buffer_values_[i]]] = i;
  for (llvm::BasicBlock& bb : *f) {
    for (llvm::Instruction& in : bb) {
      Value* ptr = nullptr;
      if (auto* l = llvm::dyn_cast<llvm::LoadInst>(&in)) ptr = l->getPointerOperand();
      if (auto* st = llvm::dyn_cast<llvm::StoreInst>(&in)) ptr = st->getPointerOperand();
      if (!ptr) continue;
      ptr = ptr->stripInBoundsOffsets();
      auto it = which.find(ptr);
      if (it == which.end()) continue;
      std::vector<llvm::Metadata*> others;
      for (size_t j = 0; j < scopes.size(); ++j) {
        if (j != it->second) others.push_back(scopes[j]);
      }
      in.setMetadata(llvm::LLVMContext::MD_alias_scope, llvm::MDNode::get(context_, {scopes[it->second]}));
      in.setMetadata(llvm::LLVMContext::MD_noalias, llvm::MDNode::get(context_, others));
    }
  }
}

llvm::Function* KernelEmitter::emit_combine(const std::string& name) {
  llvm::Function* f = begin_function(name, {builder_.getPtrTy()});
  Value* partials = f->getArg(1);
  kernel::SplitLayout layout = kernel::split_layout(region_, kernel_);
  for (size_t i = 0; i < layout.folded.size(); ++i) {
    const ir::Node& node = region_.nodes[layout.folded[i]];
    // A weight gradient's partial gradients are sums over their images.
    ir::Op op = ir::op_info(node.op).cls == ir::OpClass::Reduce ? node.op : ir::Op::ReduceSum;
    ir::ValueId out = node.results[0];
    const TensorType& t = region_.type(out);
    llvm::Type* et = mem_type(context_, t.dtype);
    auto part = [&](int64_t c, Value* e) {
      Value* base = builder_.CreateConstInBoundsGEP1_64(
          builder_.getInt8Ty(), partials, static_cast<uint64_t>(layout.offsets[i] + c * layout.part_bytes));
      return from_memory(builder_, t.dtype, builder_.CreateLoad(et, builder_.CreateInBoundsGEP(et, base, e)));
    };
    emit_for(builder_, i64(0), i64(t.numel()), {}, [&](Value* e, const std::vector<Value*>&) {
      Value* acc = part(0, e);
      for (int64_t c = 1; c < kernel_.split_chunks; ++c) acc = combine(op, t.dtype, acc, part(c, e));
      builder_.CreateStore(to_memory(builder_, t.dtype, acc), builder_.CreateInBoundsGEP(et, pointer(out), e));
      return std::vector<Value*>{};
    });
  }
  builder_.CreateRetVoid();
  return f;
}

Value* KernelEmitter::stack_buffer(llvm::Type* et, int64_t elements) {
  llvm::IRBuilder<> eb(&*builder_.GetInsertBlock()->getParent()->getEntryBlock().getFirstInsertionPt());
  auto* p = eb.CreateAlloca(et, eb.getInt64(static_cast<uint64_t>(std::max<int64_t>(1, elements))));
  p->setAlignment(llvm::Align(64));
  return p;
}

}  // namespace fluxion::cpu
