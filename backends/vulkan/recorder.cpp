// Recording a program's dispatches (recorder.h). Mirrors the CPU backend's ProgramEmitter: the
// same steps, carries and slices, with device-side control flow:
//   scan   unrolled: each iteration's dispatches are recorded with that iteration's slices;
//   cond   a guard kernel turns the predicate into two flags; each branch's dispatches are
//          guarded by its flag (a guarded kernel whose flag is 0 returns at once);
//   while  a loop flag guards the condition and body of every recorded iteration and is
//          cleared by the first false condition; max_iters bounds the recording, and an
//          unbounded loop records a capacity that the executable grows when a run reports it
//          ran out (the program is pure, so it then simply runs again).
#include "backends/vulkan/recorder.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>

#include "backends/vulkan/pipelines.h"
#include "fluxion/error.h"
#include "fluxion/half.h"
#include "kernel/cost.h"
#include "kernel/scatter_lowering.h"
#include "runtime/vulkan/context.h"
#include "support/round_up.h"

namespace fluxion::vulkan {
namespace {

using kernel::RegionSchedule;
using kernel::Storage;

int64_t bytes(const TensorType& t) { return t.numel() * dtype_size(t.dtype); }

// Scratch key of a loop shader's staging bytes (carry scratch uses the carry's position).
constexpr size_t kLoopScratch = ~size_t{0};

bool overlaps(const Range& a, const Range& b) { return a.io == b.io && a.begin < b.end && b.begin < a.end; }

class Recorder {
 public:
  Recorder(const ir::Program& p, const RegionSchedule& s, const KernelCompiler& compile,
           const LoopCompiler& compile_loop, const RecordOptions& options, std::vector<const ir::Node*>* while_loops)
      : program_(p),
        schedule_(s),
        compile_(compile),
        compile_loop_(compile_loop),
        options_(options),
        while_loops_(while_loops) {
    Context& ctx = context();
    copy_words_ = pipeline(ctx, copy_shader(ctx.shaders, true), "copy");
    copy_bytes_ = pipeline(ctx, copy_shader(ctx.shaders, false), "copy");
    cond_guard_ = pipeline(ctx, cond_guard_shader(ctx.shaders), "cond guard");
    while_step_ = pipeline(ctx, while_step_shader(ctx.shaders), "while step");
    one_ = alloc(1);
    out_.consts[static_cast<size_t>(one_.off)] = std::byte{1};
  }

  Recording run() {
    const ir::Region& body = program_.body;
    std::vector<Loc> params;
    for (size_t i = 0; i < body.params.size(); ++i) params.push_back({static_cast<int32_t>(i), 0});
    std::vector<Loc> results = region(body, schedule_, {arena_entry(program_), 0}, params, one_, true);
    for (size_t k = 0; k < body.results.size(); ++k) {
      ir::ValueId v = body.results[k];
      if (schedule_.storage[static_cast<size_t>(v)] == Storage::Output &&
          schedule_.output_index[static_cast<size_t>(v)] == static_cast<int32_t>(k))
        continue;
      copy(results[k], {static_cast<int32_t>(body.params.size() + k), 0}, bytes(body.type(v)), one_);
    }
    return std::move(out_);
  }

 private:
  Loc alloc(int64_t n, int64_t align = 8) {
    size_t off = support::round_up(out_.consts.size(), static_cast<size_t>(align));
    out_.consts.resize(off + static_cast<size_t>(std::max<int64_t>(n, 1)));
    return {consts_entry(program_), static_cast<int64_t>(off)};
  }

  // Appends a dispatch whose argument table is `pairs` (locations) then `words`. `cost`: a
  // kernel's (kernel::kernel_cost, as the CPU counts it); a helper shader's is the bytes of the
  // ranges it touches (Recording::costs).
  void dispatch(VkPipeline pl, std::array<uint32_t, 3> groups, const std::vector<Loc>& pairs,
                const std::vector<int64_t>& words, const std::vector<Range>& reads, const std::vector<Range>& writes,
                int name, const kernel::KernelCost* cost = nullptr) {
    if (groups[0] == 0 || groups[1] == 0 || groups[2] == 0) return;
    const uint32_t* limit = context().properties.limits.maxComputeWorkGroupCount;
    for (int d = 0; d < 3; ++d) {
      if (groups[static_cast<size_t>(d)] > limit[d]) {
        detail::fail("vulkan", "a kernel needs " + std::to_string(groups[static_cast<size_t>(d)]) +
                                   " workgroups along dimension " + std::to_string(d) +
                                   ", over the device's limit of " + std::to_string(limit[d]) +
                                   " (a matmul with too many rows or batch entries)");
      }
    }
    Dispatch d;
    d.pipeline = pl;
    d.groups = groups;
    d.args_word = static_cast<int64_t>(out_.args.size());
    d.name = name;
    for (const Loc& l : pairs) {
      out_.args.push_back(l.io);
      out_.args.push_back(l.off);
    }
    out_.args.insert(out_.args.end(), words.begin(), words.end());
    auto conflict = [&] {
      for (const Range& r : reads) {
        for (const Range& w : written_) {
          if (overlaps(r, w)) return true;
        }
      }
      for (const Range& w : writes) {
        for (const Range& x : written_) {
          if (overlaps(w, x)) return true;
        }
        for (const Range& x : read_) {
          if (overlaps(w, x)) return true;
        }
      }
      return false;
    };
    if (conflict()) {
      d.barrier_before = barriers_++ != options_.drop_barrier;
      written_.clear();
      read_.clear();
    }
    read_.insert(read_.end(), reads.begin(), reads.end());
    written_.insert(written_.end(), writes.begin(), writes.end());
    out_.dispatches.push_back(d);
    out_.costs.push_back(cost ? DispatchCost{cost->bytes, cost->flops} : DispatchCost{touched_bytes(reads, writes), 0});
    if (options_.keep_accesses) out_.accesses.push_back({reads, writes});
  }

  // The bytes the ranges cover, each byte once however many ranges hold it.
  static double touched_bytes(const std::vector<Range>& reads, const std::vector<Range>& writes) {
    std::vector<Range> all(reads);
    all.insert(all.end(), writes.begin(), writes.end());
    std::sort(all.begin(), all.end(),
              [](const Range& a, const Range& b) { return a.io != b.io ? a.io < b.io : a.begin < b.begin; });
    double bytes = 0;
    for (size_t i = 0; i < all.size();) {
      int64_t begin = all[i].begin, end = all[i].end;
      size_t j = i + 1;
      for (; j < all.size() && all[j].io == all[i].io && all[j].begin <= end; ++j) end = std::max(end, all[j].end);
      bytes += static_cast<double>(end - begin);
      i = j;
    }
    return bytes;
  }

  static Range range(const Loc& l, int64_t n) { return {l.io, l.off, l.off + std::max<int64_t>(n, 1)}; }

  void copy(const Loc& src, const Loc& dst, int64_t n, const Loc& guard) {
    if (n <= 0) return;
    bool words = n % 4 == 0 && src.off % 4 == 0 && dst.off % 4 == 0;
    dispatch(words ? copy_words_ : copy_bytes_, grid(words ? n / 4 : n, kWorkgroupSize), {guard, src, dst}, {n},
             {range(guard, 1), range(src, n)}, {range(dst, n)}, name_of("copy"));
  }

  // `destinations`: where result j is wanted (absent: anywhere). A result stored in an arena
  // slot is computed there; the caller copies any other.
  std::vector<Loc> region(const ir::Region& r, const RegionSchedule& s, Loc arena, const std::vector<Loc>& params,
                          Loc guard, bool top, const std::vector<std::optional<Loc>>& destinations = {}) {
    std::vector<Loc> loc(r.types.size());
    std::vector<bool> has(r.types.size(), false);
    std::vector<int32_t> producer = kernel::producers(r);
    for (size_t i = 0; i < r.params.size(); ++i) {
      loc[static_cast<size_t>(r.params[i])] = params[i];
      has[static_cast<size_t>(r.params[i])] = true;
    }
    for (size_t j = 0; j < destinations.size(); ++j) {
      size_t v = static_cast<size_t>(r.results[j]);
      const std::optional<Loc>& wanted = destinations[j];
      if (wanted && s.storage[v] == Storage::Slot && !has[v]) {
        loc[v] = *wanted;
        has[v] = true;
      }
    }
    for (size_t v = 0; v < r.types.size(); ++v) {
      switch (s.storage[v]) {
        case Storage::Slot:
          if (has[v]) break;
          loc[v] = arena + s.offset[v];
          has[v] = true;
          break;
        case Storage::Output:
          if (!top) detail::fail("vulkan", "internal error: a nested region writes a program output");
          loc[v] = {static_cast<int32_t>(r.params.size() + static_cast<size_t>(s.output_index[v])), 0};
          has[v] = true;
          break;
        case Storage::Global:
          if (producer[v] >= 0) {
            loc[v] = global(r, r.nodes[static_cast<size_t>(producer[v])], r.types[v]);
            has[v] = true;
          }
          break;
        default: break;
      }
    }
    for (size_t v = 0; v < r.types.size(); ++v) {
      if (s.storage[v] == Storage::Alias) {
        loc[v] = loc[static_cast<size_t>(s.alias_of[v])];
        has[v] = true;
      }
    }
    for (const kernel::Step& st : s.steps) {
      if (st.kind == kernel::Step::Kind::Kernel) {
        const CompiledKernel& ck = compile_(r, s, st.index);
        std::vector<Loc> pairs{guard};
        std::vector<Range> reads{range(guard, 1)}, writes;
        for (size_t b = 0; b < ck.shader.buffers.size(); ++b) {
          ir::ValueId v = ck.shader.buffers[b];
          if (!has[static_cast<size_t>(v)])
            detail::fail("vulkan", "internal error: a kernel reads a value without storage");
          pairs.push_back(loc[static_cast<size_t>(v)]);
          Range rg = range(loc[static_cast<size_t>(v)], bytes(r.type(v)));
          reads.push_back(rg);
          if (ck.shader.written[b]) writes.push_back(rg);
        }
        if (ck.order_pipeline != VK_NULL_HANDLE) {
          // A sorted scatter: its index order first, into the kernel's scratch, read after its buffers.
          const kernel::Kernel& k = s.kernels[st.index];
          kernel::ScatterGeometry g = kernel::scatter_geometry(r, r.nodes[k.root]);
          if (!has[static_cast<size_t>(g.indices)])
            detail::fail("vulkan", "internal error: a scatter's indices have no storage");
          Loc order = arena + k.scratch_offset, indices = loc[static_cast<size_t>(g.indices)];
          dispatch(ck.order_pipeline, {1, 1, 1}, {guard, indices, order}, {g.count, g.rows},
                   {range(guard, 1), range(indices, bytes(r.type(g.indices)))}, {range(order, k.scratch_bytes)},
                   name_of(ck.shader.name + " order"));
          pairs.push_back(order);
          reads.push_back(range(order, k.scratch_bytes));
        }
        const kernel::Kernel* k = &s.kernels[st.index];
        auto [cost, added] = costs_.try_emplace(k);
        if (added) cost->second = kernel::kernel_cost(r, s, *k);
        dispatch(ck.pipeline, ck.shader.groups, pairs, {}, reads, writes, name_of(ck.shader.name), &cost->second);
        continue;
      }
      const ir::Node& n = r.nodes[st.index];
      if (st.kind == kernel::Step::Kind::Wait) {
        out_.host_steps.push_back({HostStep::Kind::Finish, out_.dispatches.size(), started_.at(st.index)});
        continue;
      }
      if (ir::is_collective(n.op)) {
        start_collective(r, n, st.index, loc, has, top);
        continue;
      }
      if (ir::is_effect(n.op)) {
        host_print(r, n, loc, has, guard);
        continue;
      }
      Loc sub_arena = arena + s.nested_offset.at(st.index);
      const auto& subs = s.nested.at(st.index);
      if (use_loop_kernel(n, subs)) {
        loop_kernel(r, n, subs, sub_arena, loc, guard);
        continue;
      }
      switch (n.op) {
        case ir::Op::Scan: scan(r, n, subs[0], sub_arena, loc, guard); break;
        case ir::Op::While: while_loop(r, n, subs, sub_arena, loc, guard); break;
        case ir::Op::Cond: cond(r, n, subs, sub_arena, loc, guard); break;
        default: detail::fail(ir::op_name(n.op), "internal error: not a control-flow op");
      }
    }
    std::vector<Loc> results;
    for (ir::ValueId v : r.results) {
      if (!has[static_cast<size_t>(v)]) detail::fail("vulkan", "internal error: a region result has no storage");
      results.push_back(loc[static_cast<size_t>(v)]);
    }
    return results;
  }

  // Collective node n (index `node` of the top-level region): the host starts it after the
  // dispatches recorded so far, and finishes it at its wait step. (The recorded hazards carry on across host
  // steps: the barriers they add are redundant with a segment's own, and keep each segment
  // correct on its own for the barrier audit.)
  void start_collective(const ir::Region& r, const ir::Node& n, size_t node, const std::vector<Loc>& loc,
                        const std::vector<bool>& has, bool top) {
    if (!top) {
      detail::fail(ir::op_name(n.op),
                   "the Vulkan backend runs collectives at the top level of a program, not inside "
                   "scan, while_loop or cond (the CPU backend runs them anywhere)");
    }
    HostCollective h;
    TensorType operand = n.operands.empty() ? r.type(n.results[0]) : r.type(n.operands[0]);
    h.call = runtime::collective_call(n, operand, &program_);
    if (!n.operands.empty()) {
      if (!has[static_cast<size_t>(n.operands[0])])
        detail::fail("vulkan", "internal error: a collective's operand has no storage");
      h.in = loc[static_cast<size_t>(n.operands[0])];
      h.in_bytes = bytes(operand);
    }
    if (!has[static_cast<size_t>(n.results[0])])
      detail::fail("vulkan", "internal error: a collective's result has no storage");
    h.out = loc[static_cast<size_t>(n.results[0])];
    h.out_bytes = bytes(r.type(n.results[0]));
    started_[node] = out_.collectives.size();
    out_.host_steps.push_back({HostStep::Kind::Start, out_.dispatches.size(), out_.collectives.size()});
    // Without a wait step of its own it is finished at once.
    bool waited = std::any_of(schedule_.steps.begin(), schedule_.steps.end(), [&](const kernel::Step& st) {
      return st.kind == kernel::Step::Kind::Wait && st.index == node;
    });
    if (!waited) out_.host_steps.push_back({HostStep::Kind::Finish, out_.dispatches.size(), out_.collectives.size()});
    out_.collectives.push_back(h);
  }

  // debug_print node n: the host prints after the dispatches recorded so far, when `guard`, the
  // flag of the dispatches around it, is set.
  void host_print(const ir::Region& r, const ir::Node& n, const std::vector<Loc>& loc, const std::vector<bool>& has,
                  Loc guard) {
    HostPrint p{runtime::print_call(n, r), guard, {}};
    for (ir::ValueId v : n.operands) {
      if (!has[static_cast<size_t>(v)]) detail::fail("vulkan", "internal error: a printed value has no storage");
      p.operands.push_back(loc[static_cast<size_t>(v)]);
    }
    out_.host_steps.push_back({HostStep::Kind::Print, out_.dispatches.size(), out_.prints.size()});
    out_.prints.push_back(std::move(p));
  }

  int name_of(const std::string& name) {
    auto it = std::find(out_.names.begin(), out_.names.end(), name);
    if (it != out_.names.end()) return static_cast<int>(it - out_.names.begin());
    out_.names.push_back(name);
    return static_cast<int>(out_.names.size() - 1);
  }

  // A loop whose regions fit one workgroup: one dispatch runs every iteration.
  void loop_kernel(const ir::Region& r, const ir::Node& n, const std::vector<RegionSchedule>& subs, Loc arena,
                   std::vector<Loc>& loc, Loc guard) {
    const CompiledLoop& cl = compile_loop_(n, subs);
    int64_t arena_bytes = 0;
    for (const RegionSchedule& sub : subs) arena_bytes = std::max(arena_bytes, sub.arena_bytes);
    // A scan's carries alternate with second buffers after its body's arena.
    if (n.op == ir::Op::Scan) arena_bytes = kernel::scan_carry_buffers(n, arena_bytes).bytes;
    std::vector<Loc> pairs{guard};
    std::vector<Range> reads{range(guard, 1)}, writes{range(arena, arena_bytes)};
    for (const LoopArg& a : cl.shader.args) {
      Loc l;
      switch (a.kind) {
        case LoopArg::Kind::Operand: {
          ir::ValueId v = n.operands[static_cast<size_t>(a.index)];
          l = loc[static_cast<size_t>(v)];
          reads.push_back(range(l, bytes(r.type(v))));
          break;
        }
        case LoopArg::Kind::Result: l = loc[static_cast<size_t>(n.results[static_cast<size_t>(a.index)])]; break;
        case LoopArg::Kind::Arena: l = arena; break;
        case LoopArg::Kind::Global: {
          const ir::Region& region = n.regions[static_cast<size_t>(a.region)];
          int32_t p = kernel::producers(region)[static_cast<size_t>(a.index)];
          l = global(region, region.nodes[static_cast<size_t>(p)], region.type(static_cast<ir::ValueId>(a.index)));
          break;
        }
        case LoopArg::Kind::Iota: l = iota(n.attrs.length); break;
        case LoopArg::Kind::Scratch:
          l = scratch(&n, kLoopScratch, cl.shader.scratch_bytes);
          writes.push_back(range(l, cl.shader.scratch_bytes));
          break;
        case LoopArg::Kind::Status:
          l = {status_entry(program_), 0};
          writes.push_back(range(l, 4));
          break;
      }
      pairs.push_back(l);
    }
    for (ir::ValueId v : n.results) writes.push_back(range(loc[static_cast<size_t>(v)], bytes(r.type(v))));
    if (n.op != ir::Op::Scan) {
      dispatch(cl.pipeline, {1, 1, 1}, pairs, {}, reads, writes, name_of(cl.shader.name));
      return;
    }
    for (auto [first, last] :
         scan_step_ranges(n.attrs.length, options_.loop_iteration_limit, cl.shader.iterations_per_step))
      dispatch(cl.pipeline, {1, 1, 1}, pairs, {first, last}, reads, writes, name_of(cl.shader.name));
  }

  // Whether loop node n runs as a loop kernel: its regions fit one workgroup and, for a while
  // loop, max_iters bounds it (under the cap of a device that caps loop iterations).
  bool use_loop_kernel(const ir::Node& n, const std::vector<RegionSchedule>& subs) {
    if (!options_.loop_kernels || !fits_one_workgroup(n, subs)) return false;
    for (const ir::Region& sub : n.regions) {
      // Recorded iteration by iteration, which reports collectives and runs prints.
      if (ir::has_collectives(sub) || ir::has_effects(sub)) return false;
    }
    if (n.op == ir::Op::Scan) return true;
    // An unbounded loop in one dispatch could run past a GPU driver's watchdog (device lost):
    // it is recorded iteration by iteration instead.
    if (n.attrs.max_iters < 0) return false;
    if (options_.loop_iteration_limit <= 0) return true;
    const CompiledLoop& cl = compile_loop_(n, subs);
    return (n.attrs.max_iters + 1) * cl.shader.iterations_per_step < options_.loop_iteration_limit;
  }

  // A non-splat constant, stored once in the constants buffer however often its region is recorded.
  Loc global(const ir::Region& r, const ir::Node& n, const TensorType& t) {
    auto key = std::make_pair(&r, &n);
    if (auto it = globals_.find(key); it != globals_.end()) return it->second;
    Loc l = alloc(bytes(t));
    std::byte* dst = out_.consts.data() + l.off;
    for (size_t i = 0; i < n.attrs.data.size(); ++i) {
      double d = n.attrs.data[i];
      switch (t.dtype) {
        case DType::f32: {
          float f = static_cast<float>(d);
          std::memcpy(dst + 4 * i, &f, 4);
          break;
        }
        case DType::f64: std::memcpy(dst + 8 * i, &d, 8); break;
        case DType::i32: {
          int32_t x = static_cast<int32_t>(d);
          std::memcpy(dst + 4 * i, &x, 4);
          break;
        }
        case DType::boolean: dst[i] = std::byte{static_cast<unsigned char>(d != 0)}; break;
        case DType::f16:
        case DType::bf16: {
          uint16_t bits = t.dtype == DType::f16 ? f16_bits(d) : bf16_bits(d);
          std::memcpy(dst + 2 * i, &bits, 2);
          break;
        }
      }
    }
    globals_[key] = l;
    return l;
  }

  // The i32 scalars 0 .. n-1, for scan bodies' index parameter.
  Loc iota(int64_t n) {
    if (iota_n_ < n) {
      iota_ = alloc(4 * n, 4);
      for (int64_t i = 0; i < n; ++i) {
        int32_t x = static_cast<int32_t>(i);
        std::memcpy(out_.consts.data() + iota_.off + 4 * i, &x, 4);
      }
      iota_n_ = n;
    }
    return iota_;
  }

  // Copies a region's results into loop carries (kernel::carry_updates).
  void update_carries(const ir::Region& body, size_t first_param, const std::vector<Loc>& res,
                      const std::vector<Loc>& carries, const Loc& guard) {
    std::vector<kernel::CarryUpdate> plan = kernel::carry_updates(body, carries.size(), first_param);
    std::vector<Loc> src(res.begin(), res.begin() + static_cast<long>(carries.size()));
    for (size_t j = 0; j < carries.size(); ++j) {
      if (plan[j] != kernel::CarryUpdate::Staged) continue;
      int64_t n = bytes(body.type(body.results[j]));
      Loc tmp = scratch(&body, j, n);
      copy(src[j], tmp, n, guard);
      src[j] = tmp;
    }
    for (size_t j = 0; j < carries.size(); ++j) {
      if (plan[j] != kernel::CarryUpdate::Unchanged) copy(src[j], carries[j], bytes(body.type(body.results[j])), guard);
    }
  }

  Loc scratch(const void* site, size_t j, int64_t n) {
    auto key = std::make_pair(site, j);
    if (auto it = scratch_.find(key); it != scratch_.end()) return it->second;
    return scratch_[key] = alloc(n);
  }

  // A scan keeps each carry in two buffers, the result's and a second one in its arena
  // (kernel::scan_carry_buffers), and alternates them as the CPU backend does: an even step
  // reads the first and computes the new carries in the second, an odd step the other way
  // round, so carries are neither copied back nor staged. Per-step outputs are computed in
  // their step's slice of the stacked result; a result not computed in place is copied.
  void scan(const ir::Region& r, const ir::Node& n, const RegionSchedule& sub, Loc arena, std::vector<Loc>& loc,
            Loc guard) {
    const ir::Attrs& a = n.attrs;
    size_t nc = static_cast<size_t>(a.carries), nx = static_cast<size_t>(a.xs);
    const ir::Region& body = n.regions[0];
    kernel::ScanCarryBuffers second = kernel::scan_carry_buffers(n, sub.arena_bytes);
    std::vector<Loc> buffers[2];
    for (size_t j = 0; j < nc; ++j) {
      buffers[0].push_back(loc[static_cast<size_t>(n.results[j])]);
      buffers[1].push_back(arena + second.offsets[j]);
      copy(loc[static_cast<size_t>(n.operands[j])], buffers[0][j], bytes(r.type(n.operands[j])), guard);
    }
    Loc index = iota(a.length);
    for (int64_t step = 0; step < a.length; ++step) {
      int64_t t = a.reverse ? a.length - 1 - step : step;
      const std::vector<Loc>& carries = buffers[step % 2];
      std::vector<Loc> wanted(n.results.size());
      for (size_t j = 0; j < nc; ++j) wanted[j] = buffers[1 - step % 2][j];
      std::vector<Loc> params{index + 4 * t};
      params.insert(params.end(), carries.begin(), carries.end());
      for (size_t j = 0; j < nx; ++j) {
        ir::ValueId xs = n.operands[nc + j];
        params.push_back(loc[static_cast<size_t>(xs)] + t * (bytes(r.type(xs)) / std::max<int64_t>(1, a.length)));
      }
      for (size_t j = nc + nx; j < n.operands.size(); ++j) params.push_back(loc[static_cast<size_t>(n.operands[j])]);
      for (size_t j = nc; j < n.results.size(); ++j)
        wanted[j] = loc[static_cast<size_t>(n.results[j])] + t * bytes(body.type(body.results[j]));
      std::vector<Loc> res =
          region(body, sub, arena, params, guard, false, std::vector<std::optional<Loc>>(wanted.begin(), wanted.end()));
      for (size_t j = 0; j < n.results.size(); ++j) {
        if (res[j] != wanted[j]) copy(res[j], wanted[j], bytes(body.type(body.results[j])), guard);
      }
    }
    if (a.length % 2 == 1) {
      for (size_t j = 0; j < nc; ++j) copy(buffers[1][j], buffers[0][j], bytes(r.type(n.operands[j])), guard);
    }
  }

  void while_loop(const ir::Region& r, const ir::Node& n, const std::vector<RegionSchedule>& subs, Loc arena,
                  std::vector<Loc>& loc, Loc guard) {
    size_t nc = static_cast<size_t>(n.attrs.carries);
    std::vector<Loc> carries;
    for (size_t j = 0; j < nc; ++j) {
      carries.push_back(loc[static_cast<size_t>(n.results[j])]);
      copy(loc[static_cast<size_t>(n.operands[j])], carries[j], bytes(r.type(n.operands[j])), guard);
    }
    std::vector<Loc> params = carries;
    for (size_t j = nc; j < n.operands.size(); ++j) params.push_back(loc[static_cast<size_t>(n.operands[j])]);
    auto found = std::find(while_loops_->begin(), while_loops_->end(), &n);
    int id = static_cast<int>(found - while_loops_->begin());
    if (found == while_loops_->end()) while_loops_->push_back(&n);
    int64_t bound = n.attrs.max_iters;
    int32_t code = kWhileMaxIters + static_cast<int32_t>(bound);
    if (bound < 0) {
      auto c = options_.capacity.find(id);
      bound = c == options_.capacity.end() ? options_.default_capacity : c->second;
      code = -(id + 1);
    }
    Loc flag = scratch(&n, 0, 1);
    Loc status{status_entry(program_), 0};
    copy(guard, flag, 1, one_);
    for (int64_t it = 0;; ++it) {
      Loc c = region(n.regions[0], subs[0], arena, params, flag, false)[0];
      dispatch(while_step_, {1, 1, 1}, {flag, c, flag, status}, {it == bound ? code : 0}, {range(flag, 1), range(c, 1)},
               {range(flag, 1), range(status, 4)}, name_of("while step"));
      if (it == bound) break;
      std::vector<Loc> res = region(n.regions[1], subs[1], arena, params, flag, false);
      update_carries(n.regions[1], 0, res, carries, flag);
    }
  }

  void cond(const ir::Region& r, const ir::Node& n, const std::vector<RegionSchedule>& subs, Loc arena,
            std::vector<Loc>& loc, Loc guard) {
    std::vector<Loc> params;
    for (size_t j = 1; j < n.operands.size(); ++j) params.push_back(loc[static_cast<size_t>(n.operands[j])]);
    Loc pred = loc[static_cast<size_t>(n.operands[0])];
    Loc flags[2] = {scratch(&n, 0, 1), scratch(&n, 1, 1)};
    dispatch(cond_guard_, {1, 1, 1}, {guard, pred, flags[0], flags[1]}, {}, {range(guard, 1), range(pred, 1)},
             {range(flags[0], 1), range(flags[1], 1)}, name_of("cond guard"));
    for (size_t branch = 0; branch < 2; ++branch) {
      std::vector<Loc> res = region(n.regions[branch], subs[branch], arena, params, flags[branch], false);
      for (size_t j = 0; j < n.results.size(); ++j)
        copy(res[j], loc[static_cast<size_t>(n.results[j])], bytes(r.type(n.results[j])), flags[branch]);
    }
  }

  const ir::Program& program_;
  const RegionSchedule& schedule_;
  const KernelCompiler& compile_;
  const LoopCompiler& compile_loop_;
  const RecordOptions& options_;
  std::vector<const ir::Node*>* while_loops_;
  Recording out_;
  std::map<size_t, size_t> started_;  // top-level collective node -> its Recording::collectives entry
  // Each kernel's cost, from its first dispatch on (an unrolled loop dispatches its body's kernels every step).
  std::map<const kernel::Kernel*, kernel::KernelCost> costs_;
  VkPipeline copy_words_, copy_bytes_, cond_guard_, while_step_;
  Loc one_;
  Loc iota_;
  int64_t iota_n_ = 0;
  std::map<std::pair<const ir::Region*, const ir::Node*>, Loc> globals_;
  std::map<std::pair<const void*, size_t>, Loc> scratch_;
  std::vector<Range> read_, written_;  // since the last barrier
  int64_t barriers_ = 0;
};

}  // namespace

std::vector<std::pair<int64_t, int64_t>> scan_step_ranges(int64_t length, int64_t loop_iteration_limit,
                                                          int64_t iterations_per_step) {
  int64_t chunk = loop_iteration_limit > 0
                      ? std::max<int64_t>(1, loop_iteration_limit / std::max<int64_t>(1, iterations_per_step))
                      : std::max<int64_t>(1, length);
  std::vector<std::pair<int64_t, int64_t>> ranges{{0, std::min(length, chunk)}};
  for (int64_t first = chunk; first < length; first += chunk)
    ranges.emplace_back(first, std::min(length, first + chunk));
  return ranges;
}

Recording record(const ir::Program& p, const kernel::RegionSchedule& s, const KernelCompiler& compile,
                 const LoopCompiler& compile_loop, const RecordOptions& options,
                 std::vector<const ir::Node*>* while_loops) {
  return Recorder(p, s, compile, compile_loop, options, while_loops).run();
}

}  // namespace fluxion::vulkan
