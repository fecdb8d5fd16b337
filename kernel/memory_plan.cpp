// The memory plan: every Slot value of a region gets a byte range of one arena, planned once at
// compile time from liveness, so a call allocates nothing. Ranges of values whose lifetimes do
// not overlap are shared (greedy by size, first fit).
#include <algorithm>
#include <climits>
#include <functional>

#include "kernel/kernel_ir.h"
#include "support/round_up.h"

namespace fluxion::kernel {
namespace {

constexpr int64_t kAlign = 64;  // a cache line, and the widest vector load

int64_t aligned(int64_t n) { return support::round_up(n, kAlign); }

struct Interval {
  int64_t first, last, bytes;
  int64_t* offset;
};

}  // namespace

ScanCarryBuffers scan_carry_buffers(const ir::Node& scan, int64_t body_arena_bytes) {
  ScanCarryBuffers out;
  out.bytes = aligned(body_arena_bytes);
  const ir::Region& body = scan.regions[0];
  for (int64_t j = 0; j < scan.attrs.carries; ++j) {
    const TensorType& t = body.type(body.params[static_cast<size_t>(j) + 1]);  // parameter 0: the step
    out.offsets.push_back(out.bytes);
    out.bytes += aligned(t.numel() * dtype_size(t.dtype));
  }
  return out;
}

void plan_memory(const ir::Region& r, RegionSchedule& s, const FusionOptions& options) {
  std::vector<int32_t> producer = producers(r);
  size_t nsteps = s.steps.size();
  // When each step runs: kernels side by side (Kernel::beside_previous) at the same time, so that
  // nothing one of them touches shares bytes with what another touches.
  std::vector<int64_t> time(nsteps);
  for (size_t t = 0; t < nsteps; ++t) {
    const Step& st = s.steps[t];
    bool beside = t > 0 && st.kind == Step::Kind::Kernel && s.kernels[st.index].beside_previous;
    time[t] = beside ? time[t - 1] : static_cast<int64_t>(t);
  }
  // The step at which each node runs (views and inline constants: when read).
  std::vector<int64_t> node_step(r.nodes.size(), -1);
  for (size_t t = 0; t < nsteps; ++t) {
    const Step& st = s.steps[t];
    if (st.kind == Step::Kind::Wait) continue;
    if (st.kind == Step::Kind::Control) {
      node_step[st.index] = time[t];
    } else {
      for (size_t n : s.kernels[st.index].nodes) node_step[n] = time[t];
    }
  }
  std::vector<int64_t> first(r.types.size(), INT64_MAX), last(r.types.size(), -1);
  for (size_t i = 0; i < r.nodes.size(); ++i) {
    for (ir::ValueId v : r.nodes[i].results) first[static_cast<size_t>(v)] = std::max<int64_t>(node_step[i], 0);
  }
  // A read through views and aliases keeps every value underneath alive. Kernels read a view
  // through its index math even when a copy kernel also stores it (they are ordered after the
  // view's operands, not necessarily after the copy), so a stored view keeps its operands too.
  std::function<void(ir::ValueId, int64_t)> use = [&](ir::ValueId v, int64_t t) {
    size_t vi = static_cast<size_t>(v);
    last[vi] = std::max(last[vi], t);
    Storage st = s.storage[vi];
    int p = producer[vi];
    bool view = p >= 0 && ir::is_view(r.nodes[static_cast<size_t>(p)].op);
    if (p >= 0 && (view || st == Storage::View || st == Storage::Alias || st == Storage::None)) {
      for (ir::ValueId o : r.nodes[static_cast<size_t>(p)].operands) use(o, t);
    }
  };
  for (size_t t = 0; t < nsteps; ++t) {
    const Step& st = s.steps[t];
    std::vector<size_t> nodes;
    if (st.kind == Step::Kind::Wait) {
      // An asynchronous collective reads its operand and writes its result until its wait.
      use(r.nodes[st.index].results[0], time[t]);
      nodes.push_back(st.index);
    } else if (st.kind == Step::Kind::Control) {
      nodes.push_back(st.index);
    } else {
      nodes = s.kernels[st.index].nodes;
      nodes.insert(nodes.end(), s.kernels[st.index].recomputed.begin(), s.kernels[st.index].recomputed.end());
    }
    for (size_t n : nodes) {
      for (ir::ValueId o : r.nodes[n].operands) use(o, time[t]);
    }
  }
  for (ir::ValueId v : r.results) use(v, static_cast<int64_t>(nsteps));
  std::vector<Interval> intervals;
  for (size_t v = 0; v < r.types.size(); ++v) {
    if (s.storage[v] != Storage::Slot && s.storage[v] != Storage::Output) continue;
    int64_t f = first[v] == INT64_MAX ? 0 : first[v];
    int64_t l = std::max(last[v], f);
    // Output values get a slot too: the caller may pass an output buffer that aliases an input,
    // and then the result is written here and copied out after the call.
    intervals.push_back({f, l, aligned(r.type(static_cast<ir::ValueId>(v)).numel() * dtype_size(r.type(static_cast<ir::ValueId>(v)).dtype)),
                         &s.offset[v]});
  }
  for (size_t t = 0; t < nsteps; ++t) {
    const Step& st = s.steps[t];
    if (st.kind == Step::Kind::Control) {
      int64_t bytes = 0;
      for (const RegionSchedule& sub : s.nested[st.index]) bytes = std::max(bytes, sub.arena_bytes);
      const ir::Node& n = r.nodes[st.index];
      if (n.op == ir::Op::Scan && options.double_buffered_scan_carries) bytes = scan_carry_buffers(n, bytes).bytes;
      s.nested_offset[st.index] = 0;
      if (bytes > 0) intervals.push_back({time[t], time[t], aligned(bytes), &s.nested_offset[st.index]});
    }
  }
  // A split kernel's partial results and a kernel's scratch live while it runs.
  for (size_t t = 0; t < nsteps; ++t) {
    const Step& st = s.steps[t];
    if (st.kind != Step::Kind::Kernel) continue;
    Kernel& k = s.kernels[st.index];
    auto during_step = [&](int64_t bytes, int64_t* offset) {
      intervals.push_back({time[t], time[t], aligned(bytes), offset});
    };
    if (k.split_chunks > 1) during_step(k.split_chunks * split_layout(r, k).part_bytes, &k.partials_offset);
    if (k.scratch_bytes > 0) during_step(k.scratch_bytes, &k.scratch_offset);
  }
  std::stable_sort(intervals.begin(), intervals.end(), [](const Interval& a, const Interval& b) { return a.bytes > b.bytes; });
  std::vector<const Interval*> placed;
  int64_t top = 0;
  for (Interval& iv : intervals) {
    // Lowest offset that overlaps no placed interval live at the same time.
    std::vector<std::pair<int64_t, int64_t>> busy;
    for (const Interval* p : placed) {
      if (p->first <= iv.last && iv.first <= p->last) busy.push_back({*p->offset, *p->offset + p->bytes});
    }
    std::sort(busy.begin(), busy.end());
    int64_t off = 0;
    for (auto [b, e] : busy) {
      if (off + iv.bytes <= b) break;
      off = std::max(off, e);
    }
    *iv.offset = off;
    top = std::max(top, off + iv.bytes);
    placed.push_back(&iv);
  }
  s.arena_bytes = top;
}

void replan_memory(const ir::Region& r, RegionSchedule& s, const FusionOptions& options) {
  for (auto& [node, subs] : s.nested) {
    for (size_t i = 0; i < subs.size(); ++i) replan_memory(r.nodes[node].regions[i], subs[i], options);
  }
  plan_memory(r, s, options);
}

}  // namespace fluxion::kernel
