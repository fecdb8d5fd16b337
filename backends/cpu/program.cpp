// The entry point of a compiled program: every step of the top-level region in order, with
// scan, while and cond as native control flow around the steps of their regions. Kernels are
// called directly, or through the runtime's thread pool when they are large enough to split.
#include "backends/cpu/codegen.h"
#include "backends/cpu/native.h"
#include "fluxion/error.h"

namespace fluxion::cpu {

using kernel::RegionSchedule;
using kernel::Storage;
using llvm::Value;

namespace {

// Below this much work (elements, or multiply-adds for a matmul) a kernel runs on the calling
// thread: handing it to the pool costs more than it saves.
constexpr int64_t kParallelWork = int64_t{1} << 16;

class ProgramEmitter {
 public:
  ProgramEmitter(const ir::Program& p, const RegionSchedule& s, const Target& target, llvm::Module& m)
      : p_(p), s_(s), target_(target), m_(m), c_(m.getContext()), b_(c_) {}

  ModuleInfo run() {
    auto* fty = llvm::FunctionType::get(b_.getInt32Ty(), {b_.getPtrTy(), b_.getPtrTy(), b_.getPtrTy()}, false);
    f_ = llvm::Function::Create(fty, llvm::Function::ExternalLinkage, "fx_entry", m_);
    f_->addFnAttr(llvm::Attribute::NoUnwind);
    io_ = f_->getArg(0);
    launches_ = f_->getArg(2);
    auto* entry = llvm::BasicBlock::Create(c_, "entry", f_);
    auto* start = llvm::BasicBlock::Create(c_, "start", f_);
    b_.SetInsertPoint(entry);
    b_.CreateBr(start);
    b_.SetInsertPoint(start);
    const ir::Region& body = p_.body;
    std::vector<Value*> params;
    for (size_t i = 0; i < body.params.size(); ++i) params.push_back(io_ptr(i));
    std::vector<Value*> results = region(body, s_, f_->getArg(1), params);
    for (size_t k = 0; k < body.results.size(); ++k) {
      ir::ValueId v = body.results[k];
      if (s_.storage[static_cast<size_t>(v)] == Storage::Output && s_.output_index[static_cast<size_t>(v)] == static_cast<int32_t>(k)) {
        continue;
      }
      copy(io_ptr(body.params.size() + k), results[k], bytes(body.type(v)));
    }
    b_.CreateRet(b_.getInt32(kOk));
    // In the object code, so that a program loaded from the disk cache names them too.
    auto* text = llvm::ConstantDataArray::getString(c_, strategies_);
    new llvm::GlobalVariable(m_, text->getType(), true, llvm::GlobalValue::ExternalLinkage, text, kStrategiesSymbol);
    ModuleInfo info;
    info.arena_bytes = s_.arena_bytes;
    return info;
  }

 private:
  static int64_t bytes(const TensorType& t) { return t.numel() * dtype_size(t.dtype); }

  Value* io_ptr(size_t i) {
    llvm::IRBuilder<> eb(f_->getEntryBlock().getTerminator());
    return eb.CreateLoad(eb.getPtrTy(), eb.CreateConstInBoundsGEP1_64(eb.getPtrTy(), io_, i));
  }

  Value* entry_alloca(llvm::Type* t, uint64_t n) {
    llvm::IRBuilder<> eb(&*f_->getEntryBlock().getFirstInsertionPt());
    return eb.CreateAlloca(t, eb.getInt64(n));
  }

  void copy(Value* dst, Value* src, int64_t n) {
    if (n > 0) b_.CreateMemCpy(dst, llvm::MaybeAlign(1), src, llvm::MaybeAlign(1), static_cast<uint64_t>(n));
  }

  Value* global(const ir::Node& n, const TensorType& t) {
    llvm::Type* et = mem_type(c_, t.dtype);
    std::vector<llvm::Constant*> elems;
    for (double d : n.attrs.data) {
      switch (t.dtype) {
        case DType::f32: elems.push_back(llvm::ConstantFP::get(et, static_cast<double>(static_cast<float>(d)))); break;
        case DType::f64: elems.push_back(llvm::ConstantFP::get(et, d)); break;
        case DType::i32: elems.push_back(llvm::ConstantInt::get(et, static_cast<uint64_t>(static_cast<int32_t>(d)))); break;
        case DType::boolean: elems.push_back(llvm::ConstantInt::get(et, d != 0 ? 1 : 0)); break;
      }
    }
    auto* at = llvm::ArrayType::get(et, elems.size());
    return new llvm::GlobalVariable(m_, at, true, llvm::GlobalValue::PrivateLinkage, llvm::ConstantArray::get(at, elems), "const");
  }

  // Emits the steps of region r (schedule s, arena at `arena`) and returns its results' pointers.
  std::vector<Value*> region(const ir::Region& r, const RegionSchedule& s, Value* arena, const std::vector<Value*>& params) {
    std::vector<Value*> ptr(r.types.size(), nullptr);
    std::vector<int32_t> producer = kernel::producers(r);
    for (size_t i = 0; i < r.params.size(); ++i) ptr[static_cast<size_t>(r.params[i])] = params[i];
    for (size_t v = 0; v < r.types.size(); ++v) {
      switch (s.storage[v]) {
        case Storage::Slot: ptr[v] = b_.CreateConstInBoundsGEP1_64(b_.getInt8Ty(), arena, static_cast<uint64_t>(s.offset[v])); break;
        case Storage::Output: ptr[v] = io_ptr(r.params.size() + static_cast<size_t>(s.output_index[v])); break;
        case Storage::Global:
          if (producer[v] >= 0) ptr[v] = global(r.nodes[static_cast<size_t>(producer[v])], r.types[v]);
          break;
        default: break;
      }
    }
    for (size_t v = 0; v < r.types.size(); ++v) {
      if (s.storage[v] == Storage::Alias) ptr[v] = ptr[static_cast<size_t>(s.alias_of[v])];
    }
    for (const kernel::Step& st : s.steps) {
      if (st.kind == kernel::Step::Kind::Kernel) {
        call_kernel(r, s, st.index, ptr);
        continue;
      }
      const ir::Node& n = r.nodes[st.index];
      Value* sub_arena = b_.CreateConstInBoundsGEP1_64(b_.getInt8Ty(), arena, static_cast<uint64_t>(s.nested_offset.at(st.index)));
      const auto& subs = s.nested.at(st.index);
      switch (n.op) {
        case ir::Op::Scan: scan(r, n, subs[0], sub_arena, ptr); break;
        case ir::Op::While: while_loop(r, n, subs, sub_arena, ptr); break;
        case ir::Op::Cond: cond(r, n, subs, sub_arena, ptr); break;
        default: detail::fail(ir::op_name(n.op), "internal error: not a control-flow op");
      }
    }
    std::vector<Value*> results;
    for (ir::ValueId v : r.results) {
      if (!ptr[static_cast<size_t>(v)]) detail::fail("cpu codegen", "internal error: a region result has no storage");
      results.push_back(ptr[static_cast<size_t>(v)]);
    }
    return results;
  }

  void call_kernel(const ir::Region& r, const RegionSchedule& s, size_t ki, const std::vector<Value*>& ptr) {
    const kernel::Kernel& k = s.kernels[ki];
    llvm::IRBuilder<> kb(c_);
    KernelEmitter ke(r, s, k, target_, m_, kb);
    llvm::Function* fn = ke.emit("kernel" + std::to_string(kernel_count_++));
    strategies_ += ke.strategy() + "\n";
    const auto& bufs = ke.buffers();
    Value* args = entry_alloca(b_.getPtrTy(), std::max<uint64_t>(1, bufs.size()));
    for (size_t i = 0; i < bufs.size(); ++i) {
      Value* p = ptr[static_cast<size_t>(bufs[i])];
      if (!p) detail::fail("cpu codegen", "internal error: kernel reads a value without storage");
      b_.CreateStore(p, b_.CreateConstInBoundsGEP1_64(b_.getPtrTy(), args, i));
    }
    int64_t n0 = k.space.empty() ? 1 : k.space[0];
    int64_t work = numel(k.space);
    if (k.kind == kernel::KernelKind::MatMul) work *= r.type(r.nodes[k.root].operands[0]).shape.back();
    Value* count = b_.CreateLoad(b_.getInt64Ty(), launches_);
    b_.CreateStore(b_.CreateAdd(count, b_.getInt64(1)), launches_);
    auto mark = [&](int32_t id) {
      if (target_.profile) b_.CreateCall(m_.getOrInsertFunction("fx_profile_mark", b_.getVoidTy(), b_.getInt32Ty()), {b_.getInt32(static_cast<uint32_t>(id))});
    };
    int32_t id = kernel_count_ - 1;
    mark(id);
    if (k.parallel && work >= kParallelWork && n0 > 1) {
      auto pf = m_.getOrInsertFunction("fx_parallel_for", b_.getVoidTy(), b_.getPtrTy(), b_.getPtrTy(), b_.getInt64Ty(), b_.getInt64Ty());
      b_.CreateCall(pf, {fn, args, b_.getInt64(static_cast<uint64_t>(n0)), b_.getInt64(static_cast<uint64_t>(work / n0))});
    } else {
      b_.CreateCall(fn, {args, b_.getInt64(0), b_.getInt64(static_cast<uint64_t>(n0))});
    }
    mark(id);
  }

  // Copies a region's results into loop carries (kernel::carry_updates), staging on the stack.
  void update_carries(const ir::Region& body, size_t first_param, const std::vector<Value*>& res, const std::vector<Value*>& carries) {
    std::vector<kernel::CarryUpdate> plan = kernel::carry_updates(body, carries.size(), first_param);
    std::vector<Value*> src(res.begin(), res.begin() + static_cast<long>(carries.size()));
    for (size_t j = 0; j < carries.size(); ++j) {
      if (plan[j] != kernel::CarryUpdate::Staged) continue;
      int64_t n = bytes(body.type(body.results[j]));
      Value* tmp = entry_alloca(b_.getInt8Ty(), static_cast<uint64_t>(std::max<int64_t>(n, 1)));
      copy(tmp, src[j], n);
      src[j] = tmp;
    }
    for (size_t j = 0; j < carries.size(); ++j) {
      if (plan[j] != kernel::CarryUpdate::Unchanged) copy(carries[j], src[j], bytes(body.type(body.results[j])));
    }
  }

  void scan(const ir::Region& r, const ir::Node& n, const RegionSchedule& sub, Value* arena, std::vector<Value*>& ptr) {
    const ir::Attrs& a = n.attrs;
    size_t nc = static_cast<size_t>(a.carries), nx = static_cast<size_t>(a.xs);
    const ir::Region& body = n.regions[0];
    std::vector<Value*> carries;
    for (size_t j = 0; j < nc; ++j) {
      carries.push_back(ptr[static_cast<size_t>(n.results[j])]);
      copy(carries[j], ptr[static_cast<size_t>(n.operands[j])], bytes(r.type(n.operands[j])));
    }
    Value* index = entry_alloca(b_.getInt32Ty(), 1);
    emit_for(b_, b_.getInt64(0), b_.getInt64(static_cast<uint64_t>(a.length)), {}, [&](Value* step, const std::vector<Value*>&) {
      Value* t = a.reverse ? b_.CreateSub(b_.getInt64(static_cast<uint64_t>(a.length - 1)), step) : step;
      b_.CreateStore(b_.CreateTrunc(t, b_.getInt32Ty()), index);
      std::vector<Value*> params{index};
      params.insert(params.end(), carries.begin(), carries.end());
      for (size_t j = 0; j < nx; ++j) {
        ir::ValueId xs = n.operands[nc + j];
        int64_t slice = bytes(r.type(xs)) / std::max<int64_t>(1, a.length);
        params.push_back(b_.CreateInBoundsGEP(b_.getInt8Ty(), ptr[static_cast<size_t>(xs)], b_.CreateMul(t, b_.getInt64(static_cast<uint64_t>(slice)))));
      }
      for (size_t j = nc + nx; j < n.operands.size(); ++j) params.push_back(ptr[static_cast<size_t>(n.operands[j])]);
      std::vector<Value*> res = region(body, sub, arena, params);
      // Per-step outputs first: one may be a carry parameter, which the update overwrites.
      for (size_t j = nc; j < n.results.size(); ++j) {
        int64_t slice = bytes(body.type(body.results[j]));
        Value* dst = b_.CreateInBoundsGEP(b_.getInt8Ty(), ptr[static_cast<size_t>(n.results[j])], b_.CreateMul(t, b_.getInt64(static_cast<uint64_t>(slice))));
        copy(dst, res[j], slice);
      }
      update_carries(body, 1, res, carries);
      return std::vector<Value*>{};
    });
  }

  void while_loop(const ir::Region& r, const ir::Node& n, const std::vector<RegionSchedule>& subs, Value* arena,
                  std::vector<Value*>& ptr) {
    size_t nc = static_cast<size_t>(n.attrs.carries);
    std::vector<Value*> carries;
    for (size_t j = 0; j < nc; ++j) {
      carries.push_back(ptr[static_cast<size_t>(n.results[j])]);
      copy(carries[j], ptr[static_cast<size_t>(n.operands[j])], bytes(r.type(n.operands[j])));
    }
    std::vector<Value*> params = carries;
    for (size_t j = nc; j < n.operands.size(); ++j) params.push_back(ptr[static_cast<size_t>(n.operands[j])]);
    llvm::BasicBlock* pre = b_.GetInsertBlock();
    auto* head = llvm::BasicBlock::Create(c_, "while", f_);
    auto* check = llvm::BasicBlock::Create(c_, "while.check", f_);
    auto* body = llvm::BasicBlock::Create(c_, "while.body", f_);
    auto* fail = llvm::BasicBlock::Create(c_, "while.fail", f_);
    auto* exit = llvm::BasicBlock::Create(c_, "while.exit", f_);
    b_.CreateBr(head);
    b_.SetInsertPoint(head);
    llvm::PHINode* iter = b_.CreatePHI(b_.getInt64Ty(), 2);
    iter->addIncoming(b_.getInt64(0), pre);
    Value* c = region(n.regions[0], subs[0], arena, params)[0];
    b_.CreateCondBr(b_.CreateICmpNE(b_.CreateLoad(b_.getInt8Ty(), c), b_.getInt8(0)), check, exit);
    b_.SetInsertPoint(check);
    Value* over = n.attrs.max_iters >= 0 ? b_.CreateICmpSGE(iter, b_.getInt64(static_cast<uint64_t>(n.attrs.max_iters))) : b_.getFalse();
    b_.CreateCondBr(over, fail, body);
    b_.SetInsertPoint(fail);
    b_.CreateRet(b_.getInt32(static_cast<uint32_t>(kWhileMaxIters + n.attrs.max_iters)));
    b_.SetInsertPoint(body);
    std::vector<Value*> res = region(n.regions[1], subs[1], arena, params);
    update_carries(n.regions[1], 0, res, carries);
    iter->addIncoming(b_.CreateAdd(iter, b_.getInt64(1)), b_.GetInsertBlock());
    b_.CreateBr(head);
    b_.SetInsertPoint(exit);
  }

  void cond(const ir::Region& r, const ir::Node& n, const std::vector<RegionSchedule>& subs, Value* arena,
            std::vector<Value*>& ptr) {
    std::vector<Value*> params;
    for (size_t j = 1; j < n.operands.size(); ++j) params.push_back(ptr[static_cast<size_t>(n.operands[j])]);
    Value* pred = b_.CreateICmpNE(b_.CreateLoad(b_.getInt8Ty(), ptr[static_cast<size_t>(n.operands[0])]), b_.getInt8(0));
    auto* then_bb = llvm::BasicBlock::Create(c_, "then", f_);
    auto* else_bb = llvm::BasicBlock::Create(c_, "else", f_);
    auto* merge = llvm::BasicBlock::Create(c_, "endif", f_);
    b_.CreateCondBr(pred, then_bb, else_bb);
    for (int branch = 0; branch < 2; ++branch) {
      b_.SetInsertPoint(branch == 0 ? then_bb : else_bb);
      std::vector<Value*> res = region(n.regions[static_cast<size_t>(branch)], subs[static_cast<size_t>(branch)], arena, params);
      for (size_t j = 0; j < n.results.size(); ++j) copy(ptr[static_cast<size_t>(n.results[j])], res[j], bytes(r.type(n.results[j])));
      b_.CreateBr(merge);
    }
    b_.SetInsertPoint(merge);
  }

  const ir::Program& p_;
  const RegionSchedule& s_;
  Target target_;
  llvm::Module& m_;
  llvm::LLVMContext& c_;
  llvm::IRBuilder<> b_;
  llvm::Function* f_ = nullptr;
  Value* io_ = nullptr;
  Value* launches_ = nullptr;
  int kernel_count_ = 0;
  std::string strategies_;  // KernelEmitter::strategy() of each kernel, one per line
};

}  // namespace

ModuleInfo emit_program(const ir::Program& p, const RegionSchedule& s, const Target& target, llvm::Module& m) {
  return ProgramEmitter(p, s, target, m).run();
}

}  // namespace fluxion::cpu
