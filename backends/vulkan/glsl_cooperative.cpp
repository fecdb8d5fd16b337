// A product of f16 operands on the device's matrix units through VK_NV_cooperative_matrix
// (Strategy::CooperativeTiles). The workgroup stages k-deep slices of A and B in workgroup memory
// as f16, their bits copied through the operands' strided views (no conversion, which could
// flush subnormals; zero outside the product); each subgroup loads fragments of them and
// multiplies-adds them into f32 accumulator fragments for its block of the tile. Each accumulator fragment then goes
// through the subgroup's slot of workgroup memory to the epilogue, which the subgroup's invocations run on its
// elements.
#include "backends/vulkan/glsl_kernel.h"
#include "backends/vulkan/plan.h"
#include "fluxion/error.h"
#include "support/round_up.h"

namespace fluxion::vulkan {

void GlslKernel::emit_cooperative_tiles() {
  if (!target_.cooperative())
    detail::fail("vulkan codegen", "internal error: cooperative tiles planned for a target without them");
  const ir::Node& root = region_.nodes[kernel_.root];
  Gemm g = matmul_gemm();
  ir::ValueId c = root.results[0];
  const kernel::Tile& tile = plan_.tile;
  auto str = [](int64_t v) { return std::to_string(v); };
  int64_t fm = target_.cooperative_m, fn = target_.cooperative_n, fk = target_.cooperative_k;
  int64_t blocks_n = tile.n / tile.thread_n;  // subgroups along the tile's columns
  int64_t frags_m = tile.thread_m / fm, frags_n = tile.thread_n / fn;
  int64_t a_stride = tile.k + kCooperativePad16, b_stride = tile.n + kCooperativePad16,
          c_stride = fn + kCooperativePad32, c_slot = fm * c_stride;
  std::string M = str(g.M), N = str(g.N), K = str(g.K), TK = str(tile.k), TN = str(tile.n), WG = str(plan_.workgroup);
  std::string a_type = "fcoopmatNV<16, gl_ScopeSubgroup, " + str(fm) + ", " + str(fk) + ">",
              b_type = "fcoopmatNV<16, gl_ScopeSubgroup, " + str(fk) + ", " + str(fn) + ">",
              c_type = "fcoopmatNV<32, gl_ScopeSubgroup, " + str(fm) + ", " + str(fn) + ">";
  declare_shared("float16_t", 2, "As", {tile.m * a_stride});
  declare_shared("float16_t", 2, "Bs", {tile.k * b_stride});
  declare_shared("float", 4, "Cs", {(tile.m / tile.thread_m) * blocks_n * c_slot});
  groups_ = {static_cast<uint32_t>(support::ceil_div(g.N, tile.n)),
             static_cast<uint32_t>(support::ceil_div(g.M, tile.m)), static_cast<uint32_t>(numel(g.batch))};
  line("int tid = int(gl_LocalInvocationID.x), sg = int(gl_SubgroupID);");
  line("int m0 = int(gl_WorkGroupID.y) * " + str(tile.m) + ", n0 = int(gl_WorkGroupID.x) * " + TN + ";");
  line("int sm = (sg / " + str(blocks_n) + ") * " + str(tile.thread_m) + ", sn = (sg % " + str(blocks_n) + ") * " +
       str(tile.thread_n) + ";");
  Index bidx = unravel("int(gl_WorkGroupID.z)", g.batch);
  // The fragments are unrolled here, one variable each: arrays of cooperative matrices indexed
  // by loop variables may be kept in memory.
  auto fragment = [&](const char* name, int64_t r, int64_t q) { return name + str(r) + "_" + str(q); };
  const std::string zero = " = " + c_type + "(0.0);";
  for (int64_t r = 0; r < frags_m; ++r) {
    for (int64_t q = 0; q < frags_n; ++q) line(c_type + " " + fragment("acc", r, q).append(zero));
  }
  line("for (int k0 = 0; k0 < " + K + "; k0 += " + TK + ") {");
  indent_ += "  ";
  // One element of a slice per invocation and step, consecutive invocations along the operand's
  // contiguous dimension (down the slice's columns for a transposed operand).
  kernel::StridedView views[2];
  kernel::matmul_operands(kernel_, &views[0], &views[1]);
  size_t rank = views[0].strides.size();
  auto columns_contiguous = [rank](const kernel::StridedView& v) {
    return v.strides[rank - 2] == 1 && v.strides[rank - 1] != 1;
  };
  auto stage = [&](size_t operand, int64_t rows, int64_t cols, int64_t stride, const std::string& slice,
                   const std::string& row0, const std::string& rows_bound, const std::string& col0,
                   const std::string& cols_bound) {
    line("for (int e = tid; e < " + str(rows * cols) + "; e += " + WG + ") {");
    block([&] {
      if (columns_contiguous(views[operand])) {
        line("int sr = e % " + str(rows) + ", sc = e / " + str(rows) + ";");
      } else {
        line("int sr = e / " + str(cols) + ", sc = e % " + str(cols) + ";");
      }
      line("float16_t x = float16_t(0);");
      line("if (" + row0 + " + sr < " + rows_bound + " && " + col0 + " + sc < " + cols_bound + ") {");
      block([&] { line("x = " + operand_f16(operand, bidx, "(" + row0 + " + sr)", "(" + col0 + " + sc)") + ";"); });
      line("}");
      line(slice + "[sr * " + str(stride) + " + sc] = x;");
    });
    line("}");
  };
  stage(0, tile.m, tile.k, a_stride, "As", "m0", M, "k0", K);
  stage(1, tile.k, tile.n, b_stride, "Bs", "k0", K, "n0", N);
  line("barrier();");
  line("for (int kk = 0; kk < " + TK + "; kk += " + str(fk) + ") {");
  indent_ += "  ";
  for (int64_t r = 0; r < frags_m; ++r) {
    line(a_type + " " + fragment("fa", r, 0) + ";");
    line("coopMatLoadNV(" + fragment("fa", r, 0) + ", As, uint((sm + " + str(r * fm) + ") * " + str(a_stride) +
         " + kk), " + str(a_stride) + "u, false);");
  }
  for (int64_t q = 0; q < frags_n; ++q) {
    line(b_type + " " + fragment("fb", 0, q) + ";");
    line("coopMatLoadNV(" + fragment("fb", 0, q) + ", Bs, uint(kk * " + str(b_stride) + " + sn + " + str(q * fn) +
         "), " + str(b_stride) + "u, false);");
  }
  for (int64_t r = 0; r < frags_m; ++r) {
    for (int64_t q = 0; q < frags_n; ++q) {
      line(fragment("acc", r, q) + " = coopMatMulAddNV(" + fragment("fa", r, 0) + ", " + fragment("fb", 0, q) + ", " +
           fragment("acc", r, q) + ");");
    }
  }
  indent_.resize(indent_.size() - 2);
  line("}");
  line("barrier();");
  indent_.resize(indent_.size() - 2);
  line("}");
  // Each subgroup hands its fragments to the epilogue one at a time through its own slot.
  const std::string in_result = "if (i < " + M + " && j < " + N + ") {";
  for (int64_t r = 0; r < frags_m; ++r) {
    for (int64_t q = 0; q < frags_n; ++q) {
      line("coopMatStoreNV(" + fragment("acc", r, q) + ", Cs, uint(sg * " + str(c_slot) + "), " + str(c_stride) +
           "u, false);");
      line("subgroupMemoryBarrierShared();");
      line("subgroupBarrier();");
      line("for (int e = int(gl_SubgroupInvocationID); e < " + str(fm * fn) + "; e += int(gl_SubgroupSize)) {");
      block([&] {
        line("int ci = e / " + str(fn) + ", cj = e % " + str(fn) + ";");
        line("int i = m0 + sm + " + str(r * fm) + " + ci, j = n0 + sn + " + str(q * fn) + " + cj;");
        line(in_result);
        block([&] {
          // Each fragment's epilogue is a block of its own: values computed in another are out of scope.
          auto saved = memo_;
          Index idx = g.c_index(bidx, "i", "j");
          memo_[{c, idx}] = "Cs[sg * " + str(c_slot) + " + ci * " + str(c_stride) + " + cj]";
          body_at(idx);
          memo_ = saved;
        });
        line("}");
      });
      line("}");
      line("subgroupBarrier();");
    }
  }
}

}  // namespace fluxion::vulkan
