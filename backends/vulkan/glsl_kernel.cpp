// GlslKernel: the three shapes of a kernel on a GPU, loads, stores and code layout.
//
//   elementwise  one invocation per index of the kernel's space (also convolutions, computed
//                per output element);
//   reducing     one row of invocations per kept index; the row's invocations stride over the
//                reduced indices, then combine their partial results in workgroup memory (rows
//                that are neighbours in memory interleaved across neighbouring invocations);
//   matmul       output tiles per workgroup, operands staged through workgroup memory, a block
//                of results per invocation, then the epilogue per result (the plan's tile).
#include "backends/vulkan/glsl_kernel.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "fluxion/error.h"
#include "fluxion/half.h"
#include "support/round_up.h"

namespace fluxion::vulkan {

using ir::Op;

std::string glsl_type(DType t) {
  switch (t) {
    case DType::f32:
    case DType::f16:
    case DType::bf16: return "float";  // 16-bit floats are computed in float (docs/precision.md)
    case DType::f64: return "double";
    case DType::i32: return "int";
    case DType::boolean: return "bool";
  }
  return "?";
}

namespace {

// The accessor suffix of t's memory (glsl_storage.cpp); booleans are bytes, through fx_ld8
// and fx_st8.
std::string memory_suffix(DType t) {
  switch (t) {
    case DType::f32: return "f32";
    case DType::f64: return "f64";
    case DType::i32: return "i32";
    case DType::boolean: return "u8";
    case DType::f16: return "f16";
    case DType::bf16: return "bf16";
  }
  return "?";
}

bool is_reduce(const ir::Node& n) { return ir::op_info(n.op).cls == ir::OpClass::Reduce; }

}  // namespace

GlslKernel::GlslKernel(const ir::Region& r, const kernel::RegionSchedule& s, const kernel::Kernel& k,
                       const kernel::KernelPlan& plan, const ShaderTarget& target)
    : region_(r), schedule_(s), kernel_(k), plan_(plan), target_(target), frame_(r, s, k, plan) {}

std::string GlslKernel::fresh(const char* prefix) { return prefix + std::to_string(next_++); }

void GlslKernel::line(const std::string& s) { code_ << indent_ << s << "\n"; }

std::string GlslKernel::temp(DType t, const std::string& expr) { return declare(glsl_type(t), "t", expr); }

std::string GlslKernel::declare(const std::string& type, const char* prefix, const std::string& init) {
  std::string name = fresh(prefix);
  line(glsl::declaration(type, name, init));
  return name;
}

void GlslKernel::block(const std::function<void()>& body) {
  auto saved = memo_;
  line("{");
  indent_ += "  ";
  body();
  indent_.resize(indent_.size() - 2);
  line("}");
  memo_ = std::move(saved);
}

void GlslKernel::loop(int64_t lo, int64_t hi, const std::function<void(const std::string&)>& body) {
  std::string i = fresh("i");
  auto saved = memo_;
  line("for (int " + i + " = " + std::to_string(lo) + "; " + i + " < " + std::to_string(hi) + "; ++" + i + ") {");
  indent_ += "  ";
  body(i);
  indent_.resize(indent_.size() - 2);
  line("}");
  memo_ = std::move(saved);
}

std::string GlslKernel::constant(DType t, double v) {
  switch (t) {
    case DType::f32:
    case DType::f64: {
      std::string suffix = t == DType::f64 ? "lf" : "";
      if (std::isnan(v)) return t == DType::f64 ? "fx_nand()" : "fx_nanf()";
      if (std::isinf(v)) return std::string(v < 0 ? "-" : "") + (t == DType::f64 ? "fx_infd()" : "fx_inff()");
      char buf[64];
      if (t == DType::f32) {
        std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(static_cast<float>(v)));
      } else {
        std::snprintf(buf, sizeof buf, "%.17g", v);
      }
      std::string s = buf;
      if (s.find_first_of(".eE") == std::string::npos) s += ".0";
      return "(" + glsl_type(t) + "(" + s + suffix + "))";
    }
    case DType::i32: {
      int32_t i = static_cast<int32_t>(v);
      if (i == INT32_MIN) return "(-2147483647 - 1)";
      return "(" + std::to_string(i) + ")";
    }
    case DType::boolean: return v != 0 ? "true" : "false";
    case DType::f16: return constant(DType::f32, f16_value(f16_bits(v)));
    case DType::bf16: return constant(DType::f32, bf16_value(bf16_bits(v)));
  }
  return "?";
}

std::string GlslKernel::flat(const Index& idx, const Shape& shape) {
  if (shape.empty()) return "0";
  std::string f = idx[0];
  for (size_t d = 1; d < shape.size(); ++d) f = "(" + f + ") * " + std::to_string(shape[d]) + " + " + idx[d];
  return f;
}

Index GlslKernel::unravel(const std::string& f, const Shape& shape) {
  Index idx(shape.size());
  std::string rest = fresh("u");
  line("int " + rest + " = " + f + ";");
  for (size_t d = shape.size(); d-- > 0;) {
    if (d == 0) {
      idx[d] = rest;
    } else {
      idx[d] = fresh("u");
      line("int " + idx[d] + " = " + rest + " % " + std::to_string(shape[d]) + ";");
      line(rest + " /= " + std::to_string(shape[d]) + ";");
    }
  }
  if (!shape.empty() && shape.size() > 1) {
    // idx[0] must not change when rest is reused: copy it.
    idx[0] = fresh("u");
    line("int " + idx[0] + " = " + rest + ";");
  }
  return idx;
}

std::string GlslKernel::buffer(ir::ValueId v, bool write) {
  if (schedule_.storage[static_cast<size_t>(v)] == kernel::Storage::Alias)
    v = schedule_.alias_of[static_cast<size_t>(v)];
  kernel::Storage st = schedule_.storage[static_cast<size_t>(v)];
  if (st == kernel::Storage::None || st == kernel::Storage::View || st == kernel::Storage::Inline) {
    detail::fail("vulkan codegen", "internal error: value %" + std::to_string(v) + " is accessed but has no storage");
  }
  auto it = std::find(buffers_.begin(), buffers_.end(), v);
  size_t i = static_cast<size_t>(it - buffers_.begin());
  if (it == buffers_.end()) {
    buffers_.push_back(v);
    written_.push_back(false);
    buffer_names_[v] = "b" + std::to_string(i);
  }
  if (write) written_[i] = true;
  return buffer_names_[v];
}

std::string GlslKernel::load(ir::ValueId v, const Index& idx) { return load_flat(v, flat(idx, region_.type(v).shape)); }

std::string GlslKernel::load_flat(ir::ValueId v, const std::string& f) {
  DType t = region_.type(v).dtype;
  if (t == DType::boolean) return "(fx_ld8(" + buffer(v, false) + ", " + f + ") != 0u)";
  return "fx_ld_" + memory_suffix(t) + "(" + buffer(v, false) + ", " + f + ")";
}

void GlslKernel::store(ir::ValueId v, const Index& idx, const std::string& x) {
  store_flat(v, flat(idx, region_.type(v).shape), x);
}

void GlslKernel::store_flat(ir::ValueId v, const std::string& f, const std::string& x) {
  DType t = region_.type(v).dtype;
  if (t == DType::boolean) {
    line("fx_st8(" + buffer(v, true) + ", " + f + ", " + x + " ? 1u : 0u);");
    return;
  }
  line("fx_st_" + memory_suffix(t) + "(" + buffer(v, true) + ", " + f + ", " + x + ");");
}

std::string GlslKernel::at(ir::ValueId v, const Index& idx) {
  auto key = std::make_pair(v, idx);
  if (auto it = memo_.find(key); it != memo_.end()) return it->second;
  DType t = region_.type(v).dtype;
  std::string x;
  switch (frame_.source(v)) {
    case kernel::KernelFrame::Source::Computed: x = temp(t, compute(*frame_.producer(v), idx)); break;
    case kernel::KernelFrame::Source::Splat: x = constant(t, frame_.producer(v)->attrs.data[0]); break;
    case kernel::KernelFrame::Source::View: x = view(*frame_.producer(v), v, idx); break;
    case kernel::KernelFrame::Source::Memory: x = temp(t, load(v, idx)); break;
  }
  memo_[key] = x;
  return x;
}

void GlslKernel::body_at(const Index& idx) {
  for (size_t n : kernel_.nodes) {
    const ir::Node& node = region_.nodes[n];
    if (kernel_.kind == kernel::KernelKind::MatMul && n == kernel_.root) {
      ir::ValueId v = node.results[0];
      if (frame_.stored(v)) store(v, idx, at(v, idx));
      continue;
    }
    if (is_reduce(node)) {
      std::string& acc = accumulators_.at(n);
      line(acc + " = " + combine(node.op, region_.type(node.results[0]).dtype, acc, at(node.operands[0], idx)) + ";");
      continue;
    }
    for (ir::ValueId v : node.results) {
      if (frame_.stored(v)) store(v, idx, at(v, idx));
    }
  }
}

void GlslKernel::emit_elementwise() {
  int64_t n = numel(kernel_.space);
  groups_ = grid(n, plan_.workgroup);
  line("int gid = " + invocation_index() + ";");
  line("if (gid >= " + std::to_string(n) + ") return;");
  body_at(unravel("gid", kernel_.space));
}

std::string GlslKernel::invocation_index() const {
  return "int(gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * " + std::to_string(plan_.workgroup) +
         " + int(gl_LocalInvocationID.x)";
}

const std::vector<int64_t>* GlslKernel::reduced_axes(std::vector<size_t>* reductions) const {
  const std::vector<int64_t>* axes = nullptr;
  for (size_t n : kernel_.nodes) {
    if (!is_reduce(region_.nodes[n])) continue;
    if (axes && region_.nodes[n].attrs.axes != *axes) {
      detail::fail("vulkan codegen", "internal error: a kernel's reductions fold different axes");
    }
    axes = &region_.nodes[n].attrs.axes;
    reductions->push_back(n);
  }
  return axes;
}

Index GlslKernel::merge_index(const std::vector<int64_t>& axes, const Index& kept, const Index& folded) const {
  Index idx;
  size_t ki = 0, fi = 0;
  for (size_t d = 0; d < kernel_.space.size(); ++d) {
    bool f = std::find(axes.begin(), axes.end(), static_cast<int64_t>(d)) != axes.end();
    idx.push_back(f ? folded[fi++] : kept[ki++]);
  }
  return idx;
}

void GlslKernel::emit_reducing() {
  std::vector<size_t> reductions;
  const std::vector<int64_t>* axes = reduced_axes(&reductions);
  Shape kept, folded;
  for (size_t d = 0; d < kernel_.space.size(); ++d) {
    bool f = std::find(axes->begin(), axes->end(), static_cast<int64_t>(d)) != axes->end();
    (f ? folded : kept).push_back(kernel_.space[d]);
  }
  int64_t rows = numel(kept), cols = numel(folded);
  int64_t workgroup = plan_.workgroup, lanes = plan_.row_lanes;
  int64_t rows_per_group = workgroup / lanes;
  groups_ = grid(support::ceil_div<int64_t>(rows, rows_per_group) * workgroup, workgroup);
  std::string L = std::to_string(lanes), R = std::to_string(rows_per_group);
  // Interleaved rows: the workgroup's rows are its neighbouring invocations, and the lanes of
  // one row are rows_per_group invocations apart.
  bool interleaved = plan_.strategy == kernel::Strategy::InterleavedRows;
  std::string lane_stride = interleaved ? R : "1";
  line("int tid = int(gl_LocalInvocationID.x);");
  line("int lane = tid " + std::string(interleaved ? "/ " + R : "% " + L) + ";");
  line("int row = int(gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * " + R + " + tid " +
       (interleaved ? "% " + R : "/ " + L) + ";");
  line("bool live = row < " + std::to_string(rows) + ";");
  for (size_t n : reductions) {
    DType t = region_.type(region_.nodes[n].results[0]).dtype;
    std::string acc = fresh("acc");
    line(glsl_type(t) + " " + acc + " = " + reduce_identity(region_.nodes[n].op, t) + ";");
    accumulators_[n] = acc;
  }
  line("if (live) {");
  indent_ += "  ";
  Index kept_idx = unravel("row", kept);
  auto saved = memo_;
  line("for (int col = lane; col < " + std::to_string(cols) + "; col += " + L + ") {");
  indent_ += "  ";
  body_at(merge_index(*axes, kept_idx, unravel("col", folded)));
  indent_.resize(indent_.size() - 2);
  line("}");
  memo_ = saved;
  indent_.resize(indent_.size() - 2);
  line("}");
  // One row per workgroup: its subgroups reduce with subgroup operations, then their partial
  // results through workgroup memory (layout-independent: every subgroup lies in the row).
  bool by_subgroups = plan_.strategy == kernel::Strategy::SubgroupRows;
  if (by_subgroups) {
    for (size_t n : reductions) {
      const ir::Node& node = region_.nodes[n];
      DType t = region_.type(node.results[0]).dtype;
      std::string sh = "red" + std::to_string(n);
      const char* f = node.op == Op::ReduceSum ? "subgroupAdd" : node.op == Op::ReduceMax ? "subgroupMax" : "subgroupMin";
      declare_shared(t, sh, {workgroup});
      line(accumulators_[n] + " = " + f + "(" + accumulators_[n] + ");");
      line("if (subgroupElect()) " + sh + "[gl_SubgroupID] = " + accumulators_[n] + ";");
    }
    line("barrier();");
    line("if (live && tid == 0) {");
    indent_ += "  ";
    Index out_idx = unravel("row", kept);
    for (size_t n : reductions) {
      const ir::Node& node = region_.nodes[n];
      DType t = region_.type(node.results[0]).dtype;
      std::string sh = "red" + std::to_string(n);
      line("for (int s = 1; s < int(gl_NumSubgroups); ++s) " + sh + "[0] = " + combine(node.op, t, sh + "[0]", sh + "[s]") + ";");
      store(node.results[0], out_idx, sh + "[0]");
    }
    indent_.resize(indent_.size() - 2);
    line("}");
    return;
  }
  for (size_t n : reductions) {
    const ir::Node& node = region_.nodes[n];
    DType t = region_.type(node.results[0]).dtype;
    std::string sh = "red" + std::to_string(n);
    declare_shared(t, sh, {workgroup});
    line(sh + "[tid] = " + accumulators_[n] + ";");
  }
  line("barrier();");
  line("for (int s = " + std::to_string(lanes / 2) + "; s > 0; s >>= 1) {");
  for (size_t n : reductions) {
    const ir::Node& node = region_.nodes[n];
    DType t = region_.type(node.results[0]).dtype;
    std::string sh = "red" + std::to_string(n);
    std::string partner = sh;
    partner += "[tid + s * " + lane_stride + "]";
    line("  if (lane < s) " + sh + "[tid] = " + combine(node.op, t, sh + "[tid]", partner) + ";");
  }
  line("  barrier();");
  line("}");
  line("if (live && lane == 0) {");
  indent_ += "  ";
  Index out_idx = unravel("row", kept);
  for (size_t n : reductions) store(region_.nodes[n].results[0], out_idx, "red" + std::to_string(n) + "[tid]");
  indent_.resize(indent_.size() - 2);
  line("}");
}

std::pair<ir::ValueId, std::string> GlslKernel::operand_position(size_t operand, const Index& idx) {
  kernel::StridedView views[2];
  if (!kernel::matmul_operands(kernel_, &views[0], &views[1]))
    detail::fail("vulkan codegen", "internal error: a product's operands are not strided views");
  const kernel::StridedView& v = views[operand];
  std::string f = std::to_string(v.offset);
  for (size_t d = 0; d < idx.size(); ++d) {
    if (v.strides[d] != 0) f += " + " + idx[d] + " * " + std::to_string(v.strides[d]);
  }
  return {v.base, f};
}

std::string GlslKernel::operand_f16(size_t operand, Index batch, const std::string& row, const std::string& col) {
  batch.push_back(row);
  batch.push_back(col);
  auto [base, position] = operand_position(operand, batch);
  return "unpackFloat2x16(fx_ld16(" + buffer(base, false) + ", " + position + ")).x";
}

std::string GlslKernel::operand_element(size_t operand, const Index& idx) {
  auto [base, position] = operand_position(operand, idx);
  return temp(region_.type(base).dtype, load_flat(base, position));
}

GlslKernel::Gemm GlslKernel::matmul_gemm() {
  const ir::Node& mm = region_.nodes[kernel_.root];
  const Shape& cs = region_.type(mm.results[0]).shape;
  size_t rank = cs.size();
  Gemm g;
  g.batch.assign(cs.begin(), cs.end() - 2);
  g.M = cs[rank - 2];
  g.N = cs[rank - 1];
  g.K = region_.type(mm.operands[0]).shape.back();
  // The operands' and the result's index: the batch index, then the two matrix dimensions.
  auto index = [](Index idx, const std::string& x, const std::string& y) {
    idx.push_back(x);
    idx.push_back(y);
    return idx;
  };
  g.a = [this, index](const Index& bi, const std::string& i, const std::string& k, const std::string& dst) {
    line(dst + " = " + operand_element(0, index(bi, i, k)) + ";");
  };
  g.b = [this, index](const Index& bi, const std::string& k, const std::string& j, const std::string& dst) {
    line(dst + " = " + operand_element(1, index(bi, k, j)) + ";");
  };
  g.c_index = index;
  return g;
}

void GlslKernel::emit_matmul() {
  const ir::Node& root = region_.nodes[kernel_.root];
  Gemm g = root.op == Op::MatMul ? matmul_gemm() : conv_gemm();
  ir::ValueId c = root.results[0];
  DType t = region_.type(c).dtype;
  // The type the tiles stage and sum in: the result's, or f16 where the plan sums in f16 (its
  // operands are f16 buffers, staged as they are).
  std::string T = plan_.f16_sums ? "float16_t" : glsl_type(t);
  std::string zero = plan_.f16_sums ? "float16_t(0)" : constant(t, 0);
  std::string M = std::to_string(g.M), N = std::to_string(g.N), K = std::to_string(g.K);
  // The plan's tile: threads_n x threads_m invocations, each thread_m x thread_n results.
  const kernel::Tile& tile = plan_.tile;
  int64_t threads_n = tile.n / tile.thread_n, threads_m = tile.m / tile.thread_m;
  auto str = [](int64_t v) { return std::to_string(v); };
  std::string TM = str(tile.thread_m), TN = str(tile.thread_n), TK = str(tile.k);
  int64_t staged_bytes = plan_.f16_sums ? 2 : dtype_size(t);
  declare_shared(T, staged_bytes, "As", {tile.k, tile.m + 1});
  declare_shared(T, staged_bytes, "Bs", {tile.k, tile.n + 1});
  groups_ = {static_cast<uint32_t>(support::ceil_div(g.N, tile.n)),
             static_cast<uint32_t>(support::ceil_div(g.M, tile.m)), static_cast<uint32_t>(numel(g.batch))};
  line("int tid = int(gl_LocalInvocationID.x);");
  line("int tx = tid % " + str(threads_n) + ", ty = tid / " + str(threads_n) + ";");
  line("int m0 = int(gl_WorkGroupID.y) * " + str(tile.m) + ", n0 = int(gl_WorkGroupID.x) * " + str(tile.n) + ";");
  Index bidx = unravel("int(gl_WorkGroupID.z)", g.batch);
  // f16 sums pair each invocation's neighbouring results in f16vec2 accumulators, so that a
  // device with packed f16 arithmetic does two multiply-adds an instruction (each result is
  // still summed over the depth in order).
  std::string acc_type = plan_.f16_sums ? "f16vec2" : T;
  std::string AN = plan_.f16_sums ? str(tile.thread_n / 2) : TN;
  line(acc_type + " acc[" + TM + "][" + AN + "];");
  line("for (int r = 0; r < " + TM + "; ++r) for (int q = 0; q < " + AN +
       "; ++q) acc[r][q] = " + (plan_.f16_sums ? "f16vec2(0)" : zero) + ";");
  line("for (int k0 = 0; k0 < " + K + "; k0 += " + TK + ") {");
  indent_ += "  ";
  // Both operands' tiles staged by the whole workgroup, element e of each per invocation.
  auto stage_a = [&] {
    line("int ai = e / " + TK + ", ak = e % " + TK + ";");
    line("if (m0 + ai < " + M + " && k0 + ak < " + K + ") {");
    block([&] {
      if (plan_.f16_sums) line("As[ak][ai] = " + operand_f16(0, bidx, "(m0 + ai)", "(k0 + ak)") + ";");
      else g.a(bidx, "(m0 + ai)", "(k0 + ak)", "As[ak][ai]");
    });
    line("} else { As[ak][ai] = " + zero + "; }");
  };
  auto stage_b = [&] {
    line("int bk = e / " + str(tile.n) + ", bj = e % " + str(tile.n) + ";");
    line("if (k0 + bk < " + K + " && n0 + bj < " + N + ") {");
    block([&] {
      if (plan_.f16_sums) line("Bs[bk][bj] = " + operand_f16(1, bidx, "(k0 + bk)", "(n0 + bj)") + ";");
      else g.b(bidx, "(k0 + bk)", "(n0 + bj)", "Bs[bk][bj]");
    });
    line("} else { Bs[bk][bj] = " + zero + "; }");
  };
  auto stage = [&](int64_t elements, const std::function<void()>& body) {
    line("for (int e = tid; e < " + str(elements) + "; e += " + str(plan_.workgroup) + ") {");
    indent_ += "  ";
    body();
    indent_.resize(indent_.size() - 2);
    line("}");
  };
  if (tile.m == tile.n) {
    stage(tile.m * tile.k, [&] {
      stage_a();
      stage_b();
    });
  } else {
    stage(tile.m * tile.k, stage_a);
    stage(tile.k * tile.n, stage_b);
  }
  line("barrier();");
  line("for (int kk = 0; kk < " + TK + "; ++kk) {");
  line("  " + T + " av[" + TM + "];");
  line("  " + acc_type + " bv[" + AN + "];");
  line("  for (int r = 0; r < " + TM + "; ++r) av[r] = As[kk][ty + " + str(threads_m) + " * r];");
  if (plan_.f16_sums) {
    line("  for (int q = 0; q < " + AN + "; ++q) bv[q] = f16vec2(Bs[kk][tx + " + str(2 * threads_n) +
         " * q], Bs[kk][tx + " + str(threads_n) + " + " + str(2 * threads_n) + " * q]);");
  } else {
    line("  for (int q = 0; q < " + TN + "; ++q) bv[q] = Bs[kk][tx + " + str(threads_n) + " * q];");
  }
  line("  for (int r = 0; r < " + TM + "; ++r) for (int q = 0; q < " + AN + "; ++q) acc[r][q] = fma(" +
       (plan_.f16_sums ? "f16vec2(av[r])" : "av[r]") + ", bv[q], acc[r][q]);");
  line("}");
  line("barrier();");
  indent_.resize(indent_.size() - 2);
  line("}");
  line("for (int r = 0; r < " + TM + "; ++r) for (int q = 0; q < " + TN + "; ++q) {");
  indent_ += "  ";
  line("int i = m0 + ty + " + str(threads_m) + " * r, j = n0 + tx + " + str(threads_n) + " * q;");
  line("if (i < " + M + " && j < " + N + ") {");
  block([&] {
    Index idx = g.c_index(bidx, "i", "j");
    memo_[{c, idx}] = plan_.f16_sums ? glsl_type(t) + "(acc[r][q >> 1][q & 1])" : "acc[r][q]";
    body_at(idx);
  });
  line("}");
  indent_.resize(indent_.size() - 2);
  line("}");
}

void GlslKernel::declare_shared(DType t, const std::string& name, const std::vector<int64_t>& dims) {
  declare_shared(glsl_type(t), dtype_size(t), name, dims);
}

void GlslKernel::declare_shared(const std::string& type, int64_t element_bytes, const std::string& name,
                                const std::vector<int64_t>& dims) {
  shared_ += "shared " + type + " " + name;
  int64_t bytes = element_bytes;
  for (int64_t d : dims) {
    shared_ += "[" + std::to_string(d) + "]";
    bytes *= d;
  }
  shared_ += ";\n";
  shared_bytes_ += bytes;
}

KernelShader GlslKernel::emit(const std::string& name) {
  switch (plan_.strategy) {
    case kernel::Strategy::RowBlocks: emit_scatter(false); break;
    case kernel::Strategy::SortedRows: emit_sorted_scatter(); break;
    case kernel::Strategy::Tiles: emit_matmul(); break;
    case kernel::Strategy::CooperativeTiles: emit_cooperative_tiles(); break;
    case kernel::Strategy::WorkgroupRows:
    case kernel::Strategy::SubgroupRows:
    case kernel::Strategy::InterleavedRows: emit_reducing(); break;
    case kernel::Strategy::PerIndex:
    case kernel::Strategy::Direct: emit_elementwise(); break;
    default:
      detail::fail("vulkan codegen", std::string("internal error: a kernel planned '") +
                                         kernel::strategy_name(plan_.strategy) + "' is not a dispatched GPU strategy");
  }
  if (shared_bytes_ > target_.max_shared_bytes) {
    detail::fail("vulkan codegen", name + " needs " + std::to_string(shared_bytes_) +
                                       " bytes of workgroup memory; the device has " +
                                       std::to_string(target_.max_shared_bytes));
  }
  KernelShader out;
  out.name = name;
  out.groups = groups_;
  out.buffers = buffers_;
  out.written = written_;
  std::string decls;
  for (size_t i = 0; i < buffers_.size(); ++i) {
    decls += "  FX_ADDR b" + std::to_string(i) + " = fx_addr(" + std::to_string(i + 1) + ");\n";
  }
  if (plan_.strategy == kernel::Strategy::SortedRows) {
    decls += "  FX_ADDR fx_order = fx_addr(" + std::to_string(buffers_.size() + 1) + ");\n";
    out.order_glsl = scatter_order_shader(target_, plan_.tile.m);
  }
  out.glsl = shader_prelude(target_) + workgroup_layout(plan_.workgroup) + shared_ +
             "void main() {\n  if (!fx_guard()) return;\n" + decls + code_.str() + "}\n";
  return out;
}

void GlslKernel::emit_cooperative_rows() {
  std::vector<size_t> reductions;
  const std::vector<int64_t>* axes = reduced_axes(&reductions);
  static const std::vector<int64_t> none;
  if (!axes) axes = &none;
  Shape kept, folded;
  for (size_t d = 0; d < kernel_.space.size(); ++d) {
    bool f = std::find(axes->begin(), axes->end(), static_cast<int64_t>(d)) != axes->end();
    (f ? folded : kept).push_back(kernel_.space[d]);
  }
  // One invocation per kept index; it folds the reduced indices itself (loop bodies are small).
  line("for (int row = lid; row < " + std::to_string(numel(kept)) + "; row += " + std::to_string(plan_.workgroup) +
       ") {");
  indent_ += "  ";
  auto saved = memo_;
  Index kept_idx = unravel("row", kept);
  for (size_t n : reductions) {
    DType t = region_.type(region_.nodes[n].results[0]).dtype;
    accumulators_[n] = fresh("acc");
    line(glsl_type(t) + " " + accumulators_[n] + " = " + reduce_identity(region_.nodes[n].op, t) + ";");
  }
  if (folded.empty()) {
    body_at(merge_index(*axes, kept_idx, {}));
  } else {
    line("for (int col = 0; col < " + std::to_string(numel(folded)) + "; ++col) {");
    block([&] { body_at(merge_index(*axes, kept_idx, unravel("col", folded))); });
    line("}");
  }
  for (size_t n : reductions) store(region_.nodes[n].results[0], kept_idx, accumulators_[n]);
  memo_ = saved;
  indent_.resize(indent_.size() - 2);
  line("}");
}

void GlslKernel::emit_cooperative_matmul() {
  const ir::Node& mm = region_.nodes[kernel_.root];
  ir::ValueId a = mm.operands[0], c = mm.results[0];
  const Shape& cs = region_.type(c).shape;
  size_t rank = cs.size();
  DType t = region_.type(c).dtype;
  line("for (int gid = lid; gid < " + std::to_string(numel(cs)) + "; gid += " + std::to_string(plan_.workgroup) +
       ") {");
  indent_ += "  ";
  auto saved = memo_;
  Index idx = unravel("gid", cs);
  std::string acc = fresh("acc");
  line(glsl_type(t) + " " + acc + " = " + constant(t, 0) + ";");
  loop(0, region_.type(a).shape.back(), [&](const std::string& q) {
    Index ai(idx.begin(), idx.end() - 1), bi(idx.begin(), idx.end() - 2);
    ai.back() = idx[rank - 2];
    ai.push_back(q);
    bi.push_back(q);
    bi.push_back(idx[rank - 1]);
    line(acc + " = fma(" + operand_element(0, ai) + ", " + operand_element(1, bi) + ", " + acc + ");");
  });
  memo_[{c, idx}] = acc;
  body_at(idx);
  memo_ = saved;
  indent_.resize(indent_.size() - 2);
  line("}");
}

std::string GlslKernel::emit_cooperative(const std::function<std::string(ir::ValueId)>& address) {
  indent_ = "    ";
  if (kernel_.kind == kernel::KernelKind::Scatter) {
    emit_scatter(true);
  } else if (kernel_.kind == kernel::KernelKind::MatMul && region_.nodes[kernel_.root].op == Op::MatMul) {
    emit_cooperative_matmul();
  } else {
    emit_cooperative_rows();
  }
  std::string decls;
  for (size_t i = 0; i < buffers_.size(); ++i) {
    decls += "    FX_ADDR b" + std::to_string(i) + " = " + address(buffers_[i]) + ";\n";
  }
  return "  {\n" + decls + code_.str() + "  }\n";
}

KernelShader emit_kernel(const ir::Region& r, const kernel::RegionSchedule& s, const kernel::Kernel& k, const std::string& name,
                         const ShaderTarget& target) {
  return GlslKernel(r, s, k, k.plan, target).emit(name);
}

}  // namespace fluxion::vulkan
