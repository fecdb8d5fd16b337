// The entry point of a compiled program: every step of the top-level region in order, with
// scan, while and cond as native control flow around the steps of their regions. Kernels are
// called directly, or through the runtime's thread pool when they are large enough to split.
#include <algorithm>
#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <tuple>

#include "backends/cpu/codegen.h"
#include "backends/cpu/kernel_modules.h"
#include "backends/cpu/native.h"
#include "fluxion/error.h"
#include "fluxion/half.h"
#include "runtime/collective.h"
#include "runtime/debug_print.h"

namespace fluxion::cpu {

using kernel::RegionSchedule;
using kernel::Storage;
using llvm::Value;

namespace {

class ProgramEmitter {
 public:
  ProgramEmitter(const ir::Program& p, const RegionSchedule& s, const Target& target, llvm::Module& m,
                 KernelModules& kernels)
      : program_(p),
        schedule_(s),
        target_(target),
        module_(m),
        kernels_(kernels),
        context_(m.getContext()),
        builder_(context_) {}

  ModuleInfo run() {
    auto* fty = llvm::FunctionType::get(builder_.getInt32Ty(),
                                        {builder_.getPtrTy(), builder_.getPtrTy(), builder_.getPtrTy()}, false);
    entry_ = llvm::Function::Create(fty, llvm::Function::ExternalLinkage, "fx_entry", module_);
    entry_->addFnAttr(llvm::Attribute::NoUnwind);
    io_ = entry_->getArg(0);
    launches_ = entry_->getArg(2);
    auto* entry = llvm::BasicBlock::Create(context_, "entry", entry_);
    auto* start = llvm::BasicBlock::Create(context_, "start", entry_);
    builder_.SetInsertPoint(entry);
    builder_.CreateBr(start);
    builder_.SetInsertPoint(start);
    const ir::Region& body = program_.body;
    std::vector<Value*> params;
    for (size_t i = 0; i < body.params.size(); ++i) params.push_back(io_ptr(i));
    std::vector<Value*> results = region(body, schedule_, entry_->getArg(1), params);
    for (size_t k = 0; k < body.results.size(); ++k) {
      ir::ValueId v = body.results[k];
      if (schedule_.storage[static_cast<size_t>(v)] == Storage::Output &&
          schedule_.output_index[static_cast<size_t>(v)] == static_cast<int32_t>(k)) {
        continue;
      }
      copy(io_ptr(body.params.size() + k), results[k], bytes(body.type(v)));
    }
    builder_.CreateRet(builder_.getInt32(kOk));
    ModuleInfo info;
    info.arena_bytes = schedule_.arena_bytes;
    return info;
  }

 private:
  static int64_t bytes(const TensorType& t) { return t.numel() * dtype_size(t.dtype); }

  Value* io_ptr(size_t i) {
    llvm::IRBuilder<> eb(entry_->getEntryBlock().getTerminator());
    return eb.CreateLoad(eb.getPtrTy(), eb.CreateConstInBoundsGEP1_64(eb.getPtrTy(), io_, i));
  }

  Value* entry_alloca(llvm::Type* t, uint64_t n) {
    llvm::IRBuilder<> eb(&*entry_->getEntryBlock().getFirstInsertionPt());
    return eb.CreateAlloca(t, eb.getInt64(n));
  }

  void copy(Value* dst, Value* src, int64_t n) {
    if (n > 0) builder_.CreateMemCpy(dst, llvm::MaybeAlign(1), src, llvm::MaybeAlign(1), static_cast<uint64_t>(n));
  }

  Value* global(const ir::Node& n, const TensorType& t) {
    llvm::Type* et = mem_type(context_, t.dtype);
    std::vector<llvm::Constant*> elems;
    for (double d : n.attrs.data) {
      switch (t.dtype) {
        case DType::f32: elems.push_back(llvm::ConstantFP::get(et, static_cast<double>(static_cast<float>(d)))); break;
        case DType::f64: elems.push_back(llvm::ConstantFP::get(et, d)); break;
        case DType::i32:
          elems.push_back(llvm::ConstantInt::get(et, static_cast<uint64_t>(static_cast<int32_t>(d))));
          break;
        case DType::boolean: elems.push_back(llvm::ConstantInt::get(et, d != 0 ? 1 : 0)); break;
        case DType::f16: elems.push_back(llvm::ConstantInt::get(et, f16_bits(d))); break;
        case DType::bf16: elems.push_back(llvm::ConstantInt::get(et, bf16_bits(d))); break;
      }
    }
    auto* at = llvm::ArrayType::get(et, elems.size());
    return new llvm::GlobalVariable(module_, at, true, llvm::GlobalValue::PrivateLinkage,
                                    llvm::ConstantArray::get(at, elems), "const");
  }

  // Emits the steps of region r (schedule s, arena at `arena`) and returns its results' pointers.
  // `destinations`: where result j is wanted (null: anywhere). A result stored in an arena slot
  // is computed there directly instead of being copied after the region, unless it is also an
  // earlier result; region() returns where each result is.
  std::vector<Value*> region(const ir::Region& r, const RegionSchedule& s, Value* arena,
                             const std::vector<Value*>& params, const std::vector<Value*>& destinations = {}) {
    std::vector<Value*> ptr(r.types.size(), nullptr);
    std::vector<int32_t> producer = kernel::producers(r);
    for (size_t i = 0; i < r.params.size(); ++i) ptr[static_cast<size_t>(r.params[i])] = params[i];
    for (size_t j = 0; j < destinations.size(); ++j) {
      size_t v = static_cast<size_t>(r.results[j]);
      if (destinations[j] && s.storage[v] == Storage::Slot && !ptr[v]) ptr[v] = destinations[j];
    }
    for (size_t v = 0; v < r.types.size(); ++v) {
      switch (s.storage[v]) {
        case Storage::Slot:
          if (!ptr[v])
            ptr[v] =
                builder_.CreateConstInBoundsGEP1_64(builder_.getInt8Ty(), arena, static_cast<uint64_t>(s.offset[v]));
          break;
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
    // Asynchronous collectives (those with a wait step) by slot of the runtime's table.
    std::map<size_t, int64_t> slot;
    for (const kernel::Step& st : s.steps) {
      if (st.kind == kernel::Step::Kind::Wait) slot.emplace(st.index, static_cast<int64_t>(slot.size()));
    }
    for (size_t t = 0; t < s.steps.size(); ++t) {
      const kernel::Step& st = s.steps[t];
      if (st.kind == kernel::Step::Kind::Kernel) {
        // A profiled program times each kernel alone.
        std::vector<size_t> beside{st.index};
        while (!target_.profile && t + 1 < s.steps.size() && s.steps[t + 1].kind == kernel::Step::Kind::Kernel &&
               s.kernels[s.steps[t + 1].index].beside_previous)
          beside.push_back(s.steps[++t].index);
        if (beside.size() > 1) {
          call_side_by_side(r, s, beside, ptr, arena);
        } else {
          call_kernel(r, s, st.index, ptr, arena);
        }
        continue;
      }
      if (st.kind == kernel::Step::Kind::Wait) {
        auto wait = module_.getOrInsertFunction("fx_collective_wait", builder_.getInt32Ty(), builder_.getInt64Ty());
        return_on_failure(builder_.CreateCall(wait, {builder_.getInt64(static_cast<uint64_t>(slot.at(st.index)))}));
        continue;
      }
      const ir::Node& n = r.nodes[st.index];
      if (ir::is_collective(n.op)) {
        collective(r, n, ptr, slot.count(st.index) ? slot.at(st.index) : -1);
        continue;
      }
      if (ir::is_effect(n.op)) {
        debug_print(r, n, ptr);
        continue;
      }
      Value* sub_arena = builder_.CreateConstInBoundsGEP1_64(builder_.getInt8Ty(), arena,
                                                             static_cast<uint64_t>(s.nested_offset.at(st.index)));
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

  // A kernel's function, a split kernel's combination of its parts and a product's shared
  // packing, as the entry point calls them, with the values whose pointers each takes
  // (KernelEmitter::buffers).
  struct KernelFunctions {
    llvm::FunctionCallee kernel, combine, pack;
    std::vector<ir::ValueId> buffers, combine_buffers, pack_buffers;
  };

  // Emits kernel k into the entry point's module when it is small, else into a module of its own
  // (KernelModules), which the entry point calls by its exported name.
  KernelFunctions kernel_functions(const ir::Region& r, const RegionSchedule& s, const kernel::Kernel& k,
                                   int64_t work) {
    bool own = k.kind != kernel::KernelKind::StraightLine && work >= kOwnModuleMinWork;
    bool split = k.split_chunks > 1, pack = k.plan.shared_pack;
    std::unique_ptr<llvm::LLVMContext> own_context;
    std::unique_ptr<llvm::Module> own_module;
    if (own) std::tie(own_context, own_module) = kernels_.make();
    llvm::Module& m = own ? *own_module : module_;
    std::string number = std::to_string(kernel_count_ - 1);
    KernelFunctions out;
    {
      llvm::IRBuilder<> kb(m.getContext());
      KernelEmitter ke(r, s, k, target_, m, kb);
      out.kernel = ke.emit(own ? kModuleKernel : "kernel" + number);
      out.buffers = ke.buffers();
    }
    if (split) {
      llvm::IRBuilder<> cb(m.getContext());
      KernelEmitter ce(r, s, k, target_, m, cb);
      out.combine = ce.emit_combine(own ? kModuleCombine : "combine" + number);
      out.combine_buffers = ce.buffers();
    }
    if (pack) {
      llvm::IRBuilder<> pb(m.getContext());
      KernelEmitter pe(r, s, k, target_, m, pb);
      out.pack = pe.emit_pack(own ? kModulePack : "pack" + number);
      out.pack_buffers = pe.buffers();
    }
    if (!own) return out;
    std::string suffix = kernels_.add(std::move(own_context), std::move(own_module));
    llvm::Type* ptr = builder_.getPtrTy();
    out.kernel = module_.getOrInsertFunction(module_symbol(kModuleKernel, suffix), builder_.getVoidTy(), ptr,
                                             builder_.getInt64Ty(), builder_.getInt64Ty());
    if (split)
      out.combine = module_.getOrInsertFunction(module_symbol(kModuleCombine, suffix), builder_.getVoidTy(), ptr, ptr);
    if (pack)
      out.pack = module_.getOrInsertFunction(module_symbol(kModulePack, suffix), builder_.getVoidTy(), ptr,
                                             builder_.getInt64Ty(), builder_.getInt64Ty());
    return out;
  }

  // The pointers of `values` (kScratchBuffer: `scratch`) as a kernel's function takes them.
  Value* pointer_table(const std::vector<ir::ValueId>& values, const std::vector<Value*>& ptr,
                       Value* scratch = nullptr) {
    Value* table = entry_alloca(builder_.getPtrTy(), std::max<uint64_t>(1, values.size()));
    for (size_t i = 0; i < values.size(); ++i) {
      Value* p = values[i] == kScratchBuffer ? scratch : ptr[static_cast<size_t>(values[i])];
      if (!p) detail::fail("cpu codegen", "internal error: kernel reads a value without storage");
      builder_.CreateStore(p, builder_.CreateConstInBoundsGEP1_64(builder_.getPtrTy(), table, i));
    }
    return table;
  }

  // A function over the indices [0, n) with its pointer table: cut by the thread pool into
  // chunks of whole grains (`pooled`, `work_per_item` telling it how many are worth a thread),
  // else called once over all of them.
  struct Call {
    llvm::FunctionCallee fn;
    Value* bufs = nullptr;
    int64_t n = 1, work_per_item = 0, grain = 1;
    bool pooled = false;
  };

  // How the entry point launches a kernel: its functions, its profile id, its own call and, for
  // a product planned shared_pack, the packing that must run before it.
  struct Launch {
    KernelFunctions fns;
    int32_t id = 0;
    Call kernel;
    std::optional<Call> pack;
  };

  Launch launch(const ir::Region& r, const RegionSchedule& s, const kernel::Kernel& k, const std::vector<Value*>& ptr,
                Value* arena) {
    Launch l;
    l.id = kernel_count_++;
    int64_t n0 = k.space.empty() ? 1 : k.space[0];
    int64_t work = kernel::kernel_work(r, k);
    l.fns = kernel_functions(r, s, k, work);
    Value* scratch = k.scratch_bytes > 0 ? builder_.CreateConstInBoundsGEP1_64(builder_.getInt8Ty(), arena,
                                                                               static_cast<uint64_t>(k.scratch_offset))
                                         : nullptr;
    bool pooled = k.parallel && work >= kernel::kMinParallelWork && n0 > 1;
    Value* count = builder_.CreateLoad(builder_.getInt64Ty(), launches_);
    builder_.CreateStore(builder_.CreateAdd(count, builder_.getInt64(1)), launches_);
    if (k.split_chunks > 1) return l;  // split_call makes its parts' tables
    l.kernel = Call{.fn = l.fns.kernel,
                    .bufs = pointer_table(l.fns.buffers, ptr, scratch),
                    .n = n0,
                    .work_per_item = pooled ? work / n0 : 0,
                    .grain = pooled ? thread_grain(r, k) : n0,
                    .pooled = pooled};
    if (k.plan.shared_pack) {
      l.pack = Call{.fn = l.fns.pack,
                    .bufs = pointer_table(l.fns.pack_buffers, ptr, scratch),
                    .n = shared_pack_units(r, k),
                    .work_per_item = k.plan.tile.k * k.plan.tile.n * kernel::kLeastOperationsPerIndex,
                    .grain = 1,
                    .pooled = pooled};
    }
    return l;
  }

  void call_alone(Call c) {
    if (!c.pooled) {
      builder_.CreateCall(c.fn, {c.bufs, builder_.getInt64(0), builder_.getInt64(static_cast<uint64_t>(c.n))});
      return;
    }
    llvm::Type* i64 = builder_.getInt64Ty();
    auto pf = module_.getOrInsertFunction("fx_parallel_for", builder_.getVoidTy(), builder_.getPtrTy(),
                                          builder_.getPtrTy(), i64, i64, i64);
    builder_.CreateCall(pf, {c.fn.getCallee(), c.bufs, builder_.getInt64(static_cast<uint64_t>(c.n)),
                             builder_.getInt64(static_cast<uint64_t>(c.work_per_item)),
                             builder_.getInt64(static_cast<uint64_t>(c.grain))});
  }

  // Calls run side by side as one hand-off to the thread pool (fx_parallel_group): a table of
  // GroupKernel (runtime/cpu/helpers.h), a call the pool would not cut given whole as one grain.
  void call_group(const std::vector<Call>& calls) {
    if (calls.size() == 1) return call_alone(calls[0]);
    static_assert(sizeof(GroupKernel) == 40 && offsetof(GroupKernel, bufs) == 8 && offsetof(GroupKernel, n) == 16 &&
                      offsetof(GroupKernel, grain) == 32,
                  "the table's entries are GroupKernel's fields in order: two pointers, three int64_t");
    llvm::Type* p = builder_.getPtrTy();
    llvm::Type* i64 = builder_.getInt64Ty();
    auto* entry = llvm::StructType::get(context_, {p, p, i64, i64, i64});
    Value* table = entry_alloca(entry, calls.size());
    for (size_t i = 0; i < calls.size(); ++i) {
      Call c = calls[i];
      Value* at = builder_.CreateConstInBoundsGEP1_64(entry, table, i);
      std::vector<Value*> fields{
          c.fn.getCallee(), c.bufs, builder_.getInt64(static_cast<uint64_t>(c.n)),
          builder_.getInt64(static_cast<uint64_t>(c.pooled ? c.work_per_item : 0)),
          builder_.getInt64(static_cast<uint64_t>(c.pooled ? c.grain : std::max<int64_t>(1, c.n)))};
      for (unsigned f = 0; f < fields.size(); ++f)
        builder_.CreateStore(fields[f], builder_.CreateStructGEP(entry, at, f));
    }
    auto group = module_.getOrInsertFunction("fx_parallel_group", builder_.getVoidTy(), p, i64);
    builder_.CreateCall(group, {table, builder_.getInt64(calls.size())});
  }

  void call_kernel(const ir::Region& r, const RegionSchedule& s, size_t ki, const std::vector<Value*>& ptr,
                   Value* arena) {
    const kernel::Kernel& k = s.kernels[ki];
    Launch l = launch(r, s, k, ptr, arena);
    auto mark = [&] {
      if (target_.profile)
        builder_.CreateCall(module_.getOrInsertFunction("fx_profile_mark", builder_.getVoidTy(), builder_.getInt32Ty()),
                            {builder_.getInt32(static_cast<uint32_t>(l.id))});
    };
    mark();
    if (k.split_chunks > 1) {
      split_call(r, s, k, l.fns, ptr, kernel::split_extent(r, k), arena);
    } else {
      if (l.pack) call_alone(*l.pack);
      call_alone(l.kernel);
    }
    mark();
  }

  // Runs kernels that were placed side by side (Kernel::beside_previous) as one hand-off, after
  // one for the shared packing of those products that have it (which reads only what the run
  // reads, and writes only the kernels' own scratch bytes).
  void call_side_by_side(const ir::Region& r, const RegionSchedule& s, const std::vector<size_t>& kernels,
                         const std::vector<Value*>& ptr, Value* arena) {
    std::vector<Call> packs, calls;
    for (size_t ki : kernels) {
      const kernel::Kernel& k = s.kernels[ki];
      if (k.split_chunks > 1)
        detail::fail("cpu codegen", "internal error: a kernel split into parts placed beside another");
      Launch l = launch(r, s, k, ptr, arena);
      if (l.pack) packs.push_back(*l.pack);
      calls.push_back(l.kernel);
    }
    if (!packs.empty()) call_group(packs);
    call_group(calls);
  }

  // Runs split kernel k (Kernel::split_chunks) as its parts of the n indices of its split
  // dimension, each with the folded nodes' pointers (split_layout) moved to its own partial
  // results in the arena, then combines the parts in order.
  void split_call(const ir::Region& r, const RegionSchedule& s, const kernel::Kernel& k, KernelFunctions& fns,
                  const std::vector<Value*>& ptr, int64_t n, Value* arena) {
    const std::vector<ir::ValueId>& bufs = fns.buffers;
    kernel::SplitLayout layout = kernel::split_layout(r, k);
    // Where each kernel buffer that is a folded node's result starts in a part's partial
    // results (-1: every part shares the buffer). The buffers are the values that hold the bytes.
    std::vector<int64_t> partial(bufs.size(), -1);
    for (size_t f = 0; f < layout.folded.size(); ++f) {
      ir::ValueId v = r.nodes[layout.folded[f]].results[0];
      if (s.storage[static_cast<size_t>(v)] == Storage::Alias) v = s.alias_of[static_cast<size_t>(v)];
      auto at = std::find(bufs.begin(), bufs.end(), v);
      if (at != bufs.end()) partial[static_cast<size_t>(at - bufs.begin())] = layout.offsets[f];
    }
    uint64_t nb = std::max<uint64_t>(1, bufs.size());
    Value* parts = entry_alloca(builder_.getPtrTy(), nb * static_cast<uint64_t>(k.split_chunks));
    Value* partials =
        builder_.CreateConstInBoundsGEP1_64(builder_.getInt8Ty(), arena, static_cast<uint64_t>(k.partials_offset));
    for (int64_t c = 0; c < k.split_chunks; ++c) {
      for (size_t i = 0; i < bufs.size(); ++i) {
        Value* p = partial[i] < 0
                       ? ptr[static_cast<size_t>(bufs[i])]
                       : builder_.CreateConstInBoundsGEP1_64(builder_.getInt8Ty(), partials,
                                                             static_cast<uint64_t>(c * layout.part_bytes + partial[i]));
        if (!p) detail::fail("cpu codegen", "internal error: kernel reads a value without storage");
        builder_.CreateStore(
            p, builder_.CreateConstInBoundsGEP1_64(builder_.getPtrTy(), parts, static_cast<uint64_t>(c) * nb + i));
      }
    }
    llvm::Type* i64 = builder_.getInt64Ty();
    auto pc = module_.getOrInsertFunction("fx_parallel_parts", builder_.getVoidTy(), builder_.getPtrTy(),
                                          builder_.getPtrTy(), i64, i64, i64, i64);
    builder_.CreateCall(
        pc, {fns.kernel.getCallee(), parts, builder_.getInt64(nb), builder_.getInt64(static_cast<uint64_t>(n)),
             builder_.getInt64(static_cast<uint64_t>(k.split_chunks)),
             builder_.getInt64(static_cast<uint64_t>(thread_grain(r, k)))});
    builder_.CreateCall(fns.combine, {pointer_table(fns.combine_buffers, ptr), partials});
  }

  // Collective node n through the runtime: started on the communication thread when it has a
  // wait step (`slot` >= 0: fx_collective_start), else run to completion (fx_collective), the
  // entry point returning its error code when it fails.
  void collective(const ir::Region& r, const ir::Node& n, const std::vector<Value*>& ptr, int64_t slot) {
    TensorType operand = n.operands.empty() ? r.type(n.results[0]) : r.type(n.operands[0]);
    runtime::CollectiveCall call = runtime::collective_call(n, operand, &program_);
    Value* in = n.operands.empty() ? llvm::ConstantPointerNull::get(builder_.getPtrTy())
                                   : ptr[static_cast<size_t>(n.operands[0])];
    Value* out = ptr[static_cast<size_t>(n.results[0])];
    if (!in || !out) detail::fail("cpu codegen", "internal error: a collective's operand or result has no storage");
    auto i64 = [&](int64_t v) { return builder_.getInt64(static_cast<uint64_t>(v)); };
    llvm::Type* i64t = builder_.getInt64Ty();
    std::vector<llvm::Type*> params{builder_.getInt32Ty(), builder_.getInt32Ty(), i64t, i64t, i64t, i64t, i64t,
                                    builder_.getPtrTy(),   builder_.getPtrTy()};
    std::vector<Value*> args{builder_.getInt32(static_cast<uint32_t>(call.op)),
                             builder_.getInt32(static_cast<uint32_t>(call.dtype)),
                             i64(call.count),
                             i64(call.ranks),
                             i64(call.root),
                             i64(call.position),
                             i64(call.collectives),
                             in,
                             out};
    if (slot >= 0) {
      params.push_back(i64t);
      args.push_back(i64(slot));
      builder_.CreateCall(module_.getOrInsertFunction("fx_collective_start",
                                                      llvm::FunctionType::get(builder_.getVoidTy(), params, false)),
                          args);
      return;
    }
    return_on_failure(builder_.CreateCall(
        module_.getOrInsertFunction("fx_collective", llvm::FunctionType::get(builder_.getInt32Ty(), params, false)),
        args));
  }

  // debug_print node n through the runtime (fx_debug_print), given the node's description as a
  // constant string and its operands' addresses; the entry point returns the error code of a
  // print handler that raised.
  void debug_print(const ir::Region& r, const ir::Node& n, const std::vector<Value*>& ptr) {
    Value* text = builder_.CreateGlobalString(runtime::encode_print(runtime::print_call(n, r)), "debug_print");
    Value* operands = entry_alloca(builder_.getPtrTy(), std::max<uint64_t>(1, n.operands.size()));
    for (size_t i = 0; i < n.operands.size(); ++i) {
      Value* p = ptr[static_cast<size_t>(n.operands[i])];
      if (!p) detail::fail("cpu codegen", "internal error: a printed value has no storage");
      builder_.CreateStore(p, builder_.CreateConstInBoundsGEP1_64(builder_.getPtrTy(), operands, i));
    }
    auto print =
        module_.getOrInsertFunction("fx_debug_print", builder_.getInt32Ty(), builder_.getPtrTy(), builder_.getPtrTy());
    return_on_failure(builder_.CreateCall(print, {text, operands}));
  }

  // Returns error code `rc` from the entry point unless it is kOk.
  void return_on_failure(Value* rc) {
    auto* fail = llvm::BasicBlock::Create(context_, "collective.fail", entry_);
    auto* next = llvm::BasicBlock::Create(context_, "collective.done", entry_);
    builder_.CreateCondBr(builder_.CreateICmpNE(rc, builder_.getInt32(kOk)), fail, next);
    builder_.SetInsertPoint(fail);
    builder_.CreateRet(rc);
    builder_.SetInsertPoint(next);
  }

  // Copies a while loop's results into its carries (kernel::carry_updates), staging on the stack.
  void update_carries(const ir::Region& body, size_t first_param, const std::vector<Value*>& res,
                      const std::vector<Value*>& carries) {
    std::vector<kernel::CarryUpdate> plan = kernel::carry_updates(body, carries.size(), first_param);
    std::vector<Value*> src(res.begin(), res.begin() + static_cast<long>(carries.size()));
    for (size_t j = 0; j < carries.size(); ++j) {
      if (plan[j] != kernel::CarryUpdate::Staged) continue;
      int64_t n = bytes(body.type(body.results[j]));
      Value* tmp = entry_alloca(builder_.getInt8Ty(), static_cast<uint64_t>(std::max<int64_t>(n, 1)));
      copy(tmp, src[j], n);
      src[j] = tmp;
    }
    for (size_t j = 0; j < carries.size(); ++j) {
      if (plan[j] != kernel::CarryUpdate::Unchanged) copy(carries[j], src[j], bytes(body.type(body.results[j])));
    }
  }

  // A scan keeps each carry in two buffers, the result's and a second one in its arena
  // (kernel::scan_carry_buffers), and alternates them: an even step reads the first and computes
  // the new carries in the second, an odd step the other way round. A step never writes what it
  // reads, so carries are neither copied back nor staged (a swap of carries included); a result
  // that is not computed in place (a parameter, a value that is two results) is copied. Per-step
  // outputs are computed in their step's slice of the stacked result.
  void scan(const ir::Region& r, const ir::Node& n, const RegionSchedule& sub, Value* arena, std::vector<Value*>& ptr) {
    const ir::Attrs& a = n.attrs;
    size_t nc = static_cast<size_t>(a.carries), nx = static_cast<size_t>(a.xs);
    const ir::Region& body = n.regions[0];
    kernel::ScanCarryBuffers second = kernel::scan_carry_buffers(n, sub.arena_bytes);
    std::vector<Value*> first, other;
    for (size_t j = 0; j < nc; ++j) {
      first.push_back(ptr[static_cast<size_t>(n.results[j])]);
      other.push_back(
          builder_.CreateConstInBoundsGEP1_64(builder_.getInt8Ty(), arena, static_cast<uint64_t>(second.offsets[j])));
      copy(first[j], ptr[static_cast<size_t>(n.operands[j])], bytes(r.type(n.operands[j])));
    }
    Value* index = entry_alloca(builder_.getInt32Ty(), 1);
    emit_for(builder_, builder_.getInt64(0), builder_.getInt64(static_cast<uint64_t>(a.length)), {},
             [&](Value* step, const std::vector<Value*>&) {
               Value* t =
                   a.reverse ? builder_.CreateSub(builder_.getInt64(static_cast<uint64_t>(a.length - 1)), step) : step;
               builder_.CreateStore(builder_.CreateTrunc(t, builder_.getInt32Ty()), index);
               Value* odd = builder_.CreateTrunc(step, builder_.getInt1Ty());
               std::vector<Value*> params{index}, wanted(n.results.size(), nullptr);
               for (size_t j = 0; j < nc; ++j) {
                 params.push_back(builder_.CreateSelect(odd, other[j], first[j]));
                 wanted[j] = builder_.CreateSelect(odd, first[j], other[j]);
               }
               for (size_t j = 0; j < nx; ++j) {
                 ir::ValueId xs = n.operands[nc + j];
                 int64_t slice = bytes(r.type(xs)) / std::max<int64_t>(1, a.length);
                 params.push_back(builder_.CreateInBoundsGEP(
                     builder_.getInt8Ty(), ptr[static_cast<size_t>(xs)],
                     builder_.CreateMul(t, builder_.getInt64(static_cast<uint64_t>(slice)))));
               }
               for (size_t j = nc + nx; j < n.operands.size(); ++j)
                 params.push_back(ptr[static_cast<size_t>(n.operands[j])]);
               for (size_t j = nc; j < n.results.size(); ++j) {
                 int64_t slice = bytes(body.type(body.results[j]));
                 wanted[j] =
                     builder_.CreateInBoundsGEP(builder_.getInt8Ty(), ptr[static_cast<size_t>(n.results[j])],
                                                builder_.CreateMul(t, builder_.getInt64(static_cast<uint64_t>(slice))));
               }
               std::vector<Value*> res = region(body, sub, arena, params, wanted);
               for (size_t j = 0; j < n.results.size(); ++j) {
                 if (res[j] != wanted[j]) copy(wanted[j], res[j], bytes(body.type(body.results[j])));
               }
               return std::vector<Value*>{};
             });
    if (a.length % 2 == 1) {
      for (size_t j = 0; j < nc; ++j) copy(first[j], other[j], bytes(r.type(n.operands[j])));
    }
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
    llvm::BasicBlock* pre = builder_.GetInsertBlock();
    auto* head = llvm::BasicBlock::Create(context_, "while", entry_);
    auto* check = llvm::BasicBlock::Create(context_, "while.check", entry_);
    auto* body = llvm::BasicBlock::Create(context_, "while.body", entry_);
    auto* fail = llvm::BasicBlock::Create(context_, "while.fail", entry_);
    auto* exit = llvm::BasicBlock::Create(context_, "while.exit", entry_);
    builder_.CreateBr(head);
    builder_.SetInsertPoint(head);
    llvm::PHINode* iter = builder_.CreatePHI(builder_.getInt64Ty(), 2);
    iter->addIncoming(builder_.getInt64(0), pre);
    Value* c = region(n.regions[0], subs[0], arena, params)[0];
    builder_.CreateCondBr(builder_.CreateICmpNE(builder_.CreateLoad(builder_.getInt8Ty(), c), builder_.getInt8(0)),
                          check, exit);
    builder_.SetInsertPoint(check);
    Value* over = n.attrs.max_iters >= 0
                      ? builder_.CreateICmpSGE(iter, builder_.getInt64(static_cast<uint64_t>(n.attrs.max_iters)))
                      : builder_.getFalse();
    builder_.CreateCondBr(over, fail, body);
    builder_.SetInsertPoint(fail);
    builder_.CreateRet(builder_.getInt32(static_cast<uint32_t>(kWhileMaxIters + n.attrs.max_iters)));
    builder_.SetInsertPoint(body);
    std::vector<Value*> res = region(n.regions[1], subs[1], arena, params);
    update_carries(n.regions[1], 0, res, carries);
    iter->addIncoming(builder_.CreateAdd(iter, builder_.getInt64(1)), builder_.GetInsertBlock());
    builder_.CreateBr(head);
    builder_.SetInsertPoint(exit);
  }

  void cond(const ir::Region& r, const ir::Node& n, const std::vector<RegionSchedule>& subs, Value* arena,
            std::vector<Value*>& ptr) {
    std::vector<Value*> params;
    for (size_t j = 1; j < n.operands.size(); ++j) params.push_back(ptr[static_cast<size_t>(n.operands[j])]);
    Value* pred = builder_.CreateICmpNE(
        builder_.CreateLoad(builder_.getInt8Ty(), ptr[static_cast<size_t>(n.operands[0])]), builder_.getInt8(0));
    auto* then_bb = llvm::BasicBlock::Create(context_, "then", entry_);
    auto* else_bb = llvm::BasicBlock::Create(context_, "else", entry_);
    auto* merge = llvm::BasicBlock::Create(context_, "endif", entry_);
    builder_.CreateCondBr(pred, then_bb, else_bb);
    for (int branch = 0; branch < 2; ++branch) {
      builder_.SetInsertPoint(branch == 0 ? then_bb : else_bb);
      std::vector<Value*> res =
          region(n.regions[static_cast<size_t>(branch)], subs[static_cast<size_t>(branch)], arena, params);
      for (size_t j = 0; j < n.results.size(); ++j)
        copy(ptr[static_cast<size_t>(n.results[j])], res[j], bytes(r.type(n.results[j])));
      builder_.CreateBr(merge);
    }
    builder_.SetInsertPoint(merge);
  }

  const ir::Program& program_;
  const RegionSchedule& schedule_;
  Target target_;
  llvm::Module& module_;
  KernelModules& kernels_;
  llvm::LLVMContext& context_;
  llvm::IRBuilder<> builder_;
  llvm::Function* entry_ = nullptr;
  Value* io_ = nullptr;
  Value* launches_ = nullptr;
  int kernel_count_ = 0;
};

}  // namespace

ModuleInfo emit_program(const ir::Program& p, const RegionSchedule& s, const Target& target, llvm::Module& m,
                        KernelModules& kernels) {
  return ProgramEmitter(p, s, target, m, kernels).run();
}

}  // namespace fluxion::cpu
