// Loop shaders (glsl_loop.h). The workgroup runs the loop's schedule in order: each kernel as a
// cooperative block (GlslKernel::emit_cooperative), then a barrier that makes its stores visible
// to the whole workgroup; per-step outputs and carries are copied the same way. Every address
// is an argument of the dispatch plus, for per-step slices, the iteration times the slice size.
#include "backends/vulkan/glsl_loop.h"

#include <algorithm>
#include <cstdint>
#include <map>

#include "backends/vulkan/glsl_kernel.h"
#include "backends/vulkan/recorder.h"
#include "fluxion/error.h"
#include "support/round_up.h"

namespace fluxion::vulkan {
namespace {

using kernel::RegionSchedule;
using kernel::Storage;

// Work bounds of a kernel that runs inside a one-workgroup loop.
constexpr int64_t kMaxLoopKernelElements = 4096;
constexpr int64_t kMaxLoopMatmulMacs = int64_t{1} << 16;

int64_t bytes(const TensorType& t) { return t.numel() * dtype_size(t.dtype); }

// Loop iterations per element that an op runs inside its code (math-library loops, random
// numbers' rounds, the inner loops of gathering ops), as an upper bound.
int64_t op_iterations(const ir::Region& r, const ir::Node& n) {
  auto extent = [](const Shape& s, size_t from) {
    int64_t p = 1;
    for (size_t d = from; d < s.size(); ++d) p *= s[d] + 1;
    return p;
  };
  switch (ir::op_info(n.op).cls) {
    case ir::OpClass::Conv:
    case ir::OpClass::ConvGrad: return extent(r.type(n.operands[1]).shape, 0) + extent(r.type(n.operands[0]).shape, 0);
    case ir::OpClass::Pool:
    case ir::OpClass::PoolGrad: return 2 * (n.attrs.window[0] + 1) * (n.attrs.window[1] + 1) * (n.attrs.window[0] + 1) * (n.attrs.window[1] + 1);
    case ir::OpClass::ArgReduce: return r.type(n.operands[0]).shape[static_cast<size_t>(n.attrs.axes[0])] + 1;
    case ir::OpClass::MatMul: return r.type(n.operands[0]).shape.back() + 1;
    case ir::OpClass::Random:
    case ir::OpClass::RngFold: return 40;
    default: break;
  }
  switch (n.op) {
    case ir::Op::Erf: return 150;
    case ir::Op::Atan2: case ir::Op::Pow: case ir::Op::Log: case ir::Op::Log1p: case ir::Op::Softplus: return 40;
    default: return 0;
  }
}

int64_t kernel_iterations(const ir::Region& r, const kernel::Kernel& k, int64_t workgroup) {
  int64_t inner = 1;
  for (size_t n : k.nodes) inner += op_iterations(r, r.nodes[n]);
  for (size_t n : k.recomputed) inner += op_iterations(r, r.nodes[n]);
  const ir::Node& root = r.nodes[k.root];
  if (k.kind == kernel::KernelKind::Scatter) {
    // Each invocation zeroes at most a column's rows, then scans every index, for each of its
    // (block, column) pairs (GlslKernel::emit_scatter).
    const Shape& s = r.type(root.results[0]).shape;
    int64_t rows = s[static_cast<size_t>(root.attrs.axes[0])];
    int64_t per = support::ceil_div(numel(s) / std::max<int64_t>(1, rows), workgroup) + 2;
    return per * (rows + 2 * r.type(root.operands[1]).numel() + 2) + 2;
  }
  if (k.kind == kernel::KernelKind::MatMul && root.op == ir::Op::MatMul) {
    int64_t per = support::ceil_div(numel(k.space), workgroup);
    return per + 1 + per * (r.type(root.operands[0]).shape.back() + 1 + inner);
  }
  // Every element of the space is visited once by some invocation, rows and columns alike.
  int64_t per = support::ceil_div(numel(k.space), workgroup) + 1;
  return 2 * per * (inner + 1) + 2;
}

const char* kSync = "  memoryBarrierBuffer();\n  barrier();\n";

class LoopEmitter {
 public:
  LoopEmitter(const ir::Node& n, const std::vector<RegionSchedule>& subs, const ShaderTarget& target,
              const DeviceTuning& tuning)
      : loop_(n), subs_(subs), target_(target), tuning_(tuning) {}

  LoopShader run(const std::string& name) {
    LoopShader out;
    out.name = name;
    nc_ = static_cast<size_t>(loop_.attrs.carries);
    bool scan = loop_.op == ir::Op::Scan;
    // Carries start as the operands (a scan split over dispatches: in the first one).
    if (scan) code_ += "  if (step0 == 0) {\n";
    for (size_t j = 0; j < nc_; ++j) {
      copy(arg({LoopArg::Kind::Operand, static_cast<int64_t>(j)}),
           arg({LoopArg::Kind::Result, static_cast<int64_t>(j)}),
           bytes(loop_.regions[0].type(loop_.regions[0].params[scan ? j + 1 : j])));
    }
    if (scan) code_ += "  }\n";
    code_ += kSync;
    per_step_ = 1;
    if (scan) {
      this->scan();
    } else {
      while_loop();
    }
    out.args = args_;
    out.scratch_bytes = scratch_bytes_;
    out.iterations_per_step = per_step_;
    std::string range_word = std::to_string(2 * (args_.size() + 1));
    std::string head = "void main() {\n  if (!fx_guard()) return;\n  int lid = int(gl_LocalInvocationID.x);\n";
    if (scan) head += "  int step0 = int(fx_word(" + range_word + ")), step1 = int(fx_word(" + range_word + " + 1));\n";
    out.glsl = shader_prelude(target_, true) + workgroup_layout(tuning_.loop_workgroup) + head + code_ + "}\n";
    return out;
  }

 private:
  std::string arg(const LoopArg& a) {
    auto it = std::find(args_.begin(), args_.end(), a);
    size_t i = static_cast<size_t>(it - args_.begin());
    if (it == args_.end()) args_.push_back(a);
    return "fx_addr(" + std::to_string(i + 1) + ")";
  }

  // Address `base` plus `count` times `scale` bytes, count at most `max_count` (fx_offset:
  // 64-bit, or uvec2 with carry, whose offset is 32-bit: refused past 4 GiB, never wrapped).
  std::string plus(const std::string& base, const std::string& count, int64_t max_count, int64_t scale = 1) const {
    if (!target_.addresses64() && max_count * scale > int64_t{UINT32_MAX}) {
      detail::fail("vulkan codegen",
                   "a loop addresses " + std::to_string(max_count * scale) +
                       " bytes past a buffer's start; without 64-bit addresses in shaders (shaderInt64 and "
                       "bufferDeviceAddress) "
                       "offsets stop at 4 GiB");
    }
    std::string type = target_.addresses64() ? "uint64_t" : "uint";
    std::string bytes = type + "(" + count + ")";
    if (scale != 1) bytes += " * " + type + "(" + std::to_string(scale) + ")";
    return "fx_offset(" + base + ", " + bytes + ")";
  }

  void copy(const std::string& src, const std::string& dst, int64_t n) {
    if (n <= 0) return;
    // Each invocation copies a word (or, for a length that is not whole words, a byte) a turn.
    per_step_ += support::ceil_div(n % 4 == 0 ? n / 4 : n, tuning_.loop_workgroup) + 1;
    std::string stride = std::to_string(tuning_.loop_workgroup);
    if (n % 4 == 0) {
      code_ += "  for (int i = lid; i < " + std::to_string(n / 4) + "; i += " + stride + ") fx_st_u32(" + dst +
               ", i, fx_ld_u32(" + src + ", i));\n";
    } else {
      code_ += "  for (int i = lid; i < " + std::to_string(n) + "; i += " + stride + ") fx_st8(" + dst +
               ", i, fx_ld8(" + src + ", i));\n";
    }
  }

  // The address of value v of region `ri` (params given by `param_address`; results stored in
  // an arena slot at their `destinations` address, when one is given).
  std::string address(int ri, const ir::Region& r, const RegionSchedule& s, ir::ValueId v,
                      const std::function<std::string(size_t)>& param_address,
                      const std::vector<std::string>& destinations) {
    size_t vi = static_cast<size_t>(v);
    if (s.storage[vi] == Storage::Alias) return address(ri, r, s, s.alias_of[vi], param_address, destinations);
    auto p = std::find(r.params.begin(), r.params.end(), v);
    if (p != r.params.end()) return param_address(static_cast<size_t>(p - r.params.begin()));
    if (s.storage[vi] == Storage::Slot) {
      auto first = std::find(r.results.begin(), r.results.end(), v);
      size_t j = static_cast<size_t>(first - r.results.begin());
      if (first != r.results.end() && j < destinations.size()) return destinations[j];
    }
    switch (s.storage[vi]) {
      case Storage::Slot: return plus(arg({LoopArg::Kind::Arena, 0}), std::to_string(s.offset[vi]), s.offset[vi]);
      case Storage::Global: return arg({LoopArg::Kind::Global, v, ri});
      default: detail::fail("vulkan codegen", "internal error: a loop shader reads a value without storage");
    }
  }

  // Every kernel of region `ri`, in order, each followed by a barrier; returns its results' addresses.
  std::vector<std::string> region(int ri, const std::function<std::string(size_t)>& param_address,
                                  const std::vector<std::string>& destinations = {}) {
    const ir::Region& r = loop_.regions[static_cast<size_t>(ri)];
    const RegionSchedule& s = subs_[static_cast<size_t>(ri)];
    auto addr = [&](ir::ValueId v) { return address(ri, r, s, v, param_address, destinations); };
    for (const kernel::Step& st : s.steps) {
      const kernel::Kernel& kernel = s.kernels[st.index];
      kernel::KernelPlan plan = in_loop_plan(r, kernel, tuning_);
      GlslKernel k(r, s, kernel, plan, target_);
      code_ += k.emit_cooperative(addr);
      code_ += kSync;
      per_step_ += kernel_iterations(r, kernel, plan.workgroup);
    }
    std::vector<std::string> out;
    for (ir::ValueId v : r.results) out.push_back(addr(v));
    return out;
  }

  // Copies region results into the carries (kernel::carry_updates), staging in scratch.
  void update_carries(const ir::Region& body, size_t first_param, const std::vector<std::string>& res) {
    std::vector<kernel::CarryUpdate> plan = kernel::carry_updates(body, nc_, first_param);
    std::vector<std::string> src(res.begin(), res.begin() + static_cast<long>(nc_));
    bool staged = false;
    for (size_t j = 0; j < nc_; ++j) {
      if (plan[j] != kernel::CarryUpdate::Staged) continue;
      int64_t n = bytes(body.type(body.results[j]));
      std::string tmp = plus(arg({LoopArg::Kind::Scratch, 0}), std::to_string(scratch_bytes_), scratch_bytes_);
      scratch_bytes_ += support::round_up<int64_t>(n, 8);
      copy(src[j], tmp, n);
      src[j] = tmp;
      staged = true;
    }
    if (staged) code_ += kSync;
    for (size_t j = 0; j < nc_; ++j) {
      if (plan[j] != kernel::CarryUpdate::Unchanged) {
        copy(src[j], arg({LoopArg::Kind::Result, static_cast<int64_t>(j)}), bytes(body.type(body.results[j])));
      }
    }
    code_ += kSync;
  }

  // Carries are double-buffered, as in recorded scans: each carry's result buffer and a second
  // one in the scan's arena (kernel::scan_carry_buffers). The body is written out twice, for
  // even and odd steps (by the step's number, so a scan split over dispatches keeps its parity):
  // an even step reads the result buffers and computes the new carries straight into the
  // second ones, an odd step the other way round, and per-step outputs are computed in their
  // slice of the stacked result. A step then copies nothing and waits at no extra barrier.
  void scan() {
    const ir::Attrs& a = loop_.attrs;
    size_t nx = static_cast<size_t>(a.xs);
    const ir::Region& body = loop_.regions[0];
    kernel::ScanCarryBuffers second = kernel::scan_carry_buffers(loop_, subs_[0].arena_bytes);
    auto carry = [&](size_t j, int parity) {
      if (parity == 0) return arg({LoopArg::Kind::Result, static_cast<int64_t>(j)});
      return plus(arg({LoopArg::Kind::Arena, 0}), std::to_string(second.offsets[j]), second.offsets[j]);
    };
    code_ += "  for (int step = step0; step < step1; ++step) {\n";
    code_ += a.reverse ? "  int t = " + std::to_string(a.length - 1) + " - step;\n" : "  int t = step;\n";
    int64_t per_step = per_step_, most = per_step_;
    for (int parity = 0; parity < 2; ++parity) {
      code_ += parity == 0 ? "  if ((step & 1) == 0) {\n" : "  } else {\n";
      per_step_ = per_step;
      auto param = [&](size_t i) -> std::string {
        if (i == 0) return plus(arg({LoopArg::Kind::Iota, 0}), "t", a.length, 4);
        size_t j = i - 1;
        if (j < nc_) return carry(j, parity);
        if (j < nc_ + nx) {
          int64_t slice = bytes(body.type(body.params[i]));
          return plus(arg({LoopArg::Kind::Operand, static_cast<int64_t>(j)}), "t", a.length, slice);
        }
        return arg({LoopArg::Kind::Operand, static_cast<int64_t>(j)});
      };
      std::vector<std::string> wanted;
      for (size_t j = 0; j < loop_.results.size(); ++j) {
        if (j < nc_) {
          wanted.push_back(carry(j, 1 - parity));
        } else {
          int64_t slice = bytes(body.type(body.results[j]));
          wanted.push_back(plus(arg({LoopArg::Kind::Result, static_cast<int64_t>(j)}), "t", a.length, slice));
        }
      }
      std::vector<std::string> res = region(0, param, wanted);
      bool copied = false;
      for (size_t j = 0; j < res.size(); ++j) {
        if (res[j] == wanted[j]) continue;
        copy(res[j], wanted[j], bytes(body.type(body.results[j])));
        copied = true;
      }
      if (copied) code_ += kSync;
      most = std::max(most, per_step_);
    }
    code_ += "  }\n  }\n";
    per_step_ = most;
    if (a.length % 2 == 1) {
      // The last step was even: the carries are in the second buffers.
      code_ += "  if (step1 == " + std::to_string(a.length) + ") {\n";
      for (size_t j = 0; j < nc_; ++j) copy(carry(j, 1), carry(j, 0), bytes(body.type(body.results[j])));
      code_ += "  }\n";
      code_ += kSync;
    }
  }

  void while_loop() {
    auto param = [&](size_t i) -> std::string {
      return i < nc_ ? arg({LoopArg::Kind::Result, static_cast<int64_t>(i)}) : arg({LoopArg::Kind::Operand, static_cast<int64_t>(i)});
    };
    code_ += "  for (int it = 0;; ++it) {\n";
    std::string c = region(0, param)[0];
    code_ += "  bool go = fx_ld8(" + c + ", 0) != 0u;\n";
    code_ += kSync;  // every invocation has read the condition before the body overwrites it
    code_ += "  if (!go) break;\n";
    if (loop_.attrs.max_iters >= 0) {
      code_ += "  if (it == " + std::to_string(loop_.attrs.max_iters) + ") {\n    if (lid == 0) fx_atomic_min_i32(" +
               arg({LoopArg::Kind::Status, 0}) + ", 0, " + std::to_string(kWhileMaxIters + loop_.attrs.max_iters) +
               ");\n    break;\n  }\n";
    }
    std::vector<std::string> res = region(1, param);
    update_carries(loop_.regions[1], 0, res);
    code_ += "  }\n";
  }

  const ir::Node& loop_;
  const std::vector<RegionSchedule>& subs_;
  ShaderTarget target_;
  const DeviceTuning& tuning_;
  size_t nc_ = 0;
  int64_t per_step_ = 0;
  std::vector<LoopArg> args_;
  int64_t scratch_bytes_ = 0;
  std::string code_;
};

}  // namespace

bool fits_one_workgroup(const ir::Node& n, const std::vector<RegionSchedule>& subs) {
  if (n.op != ir::Op::Scan && n.op != ir::Op::While) return false;
  for (size_t ri = 0; ri < subs.size(); ++ri) {
    const ir::Region& r = n.regions[ri];
    for (const kernel::Step& st : subs[ri].steps) {
      if (st.kind != kernel::Step::Kind::Kernel) return false;
      const kernel::Kernel& k = subs[ri].kernels[st.index];
      if (numel(k.space) > kMaxLoopKernelElements) return false;
      if (k.kind == kernel::KernelKind::MatMul) {
        const ir::Node& root = r.nodes[k.root];
        if (root.op == ir::Op::MatMul && numel(k.space) * r.type(root.operands[0]).shape.back() > kMaxLoopMatmulMacs) return false;
      }
    }
  }
  return true;
}

LoopShader emit_loop(const ir::Node& n, const std::vector<RegionSchedule>& subs, const ShaderTarget& target,
                     const DeviceTuning& tuning, const std::string& name) {
  return LoopEmitter(n, subs, target, tuning).run(name);
}

}  // namespace fluxion::vulkan
