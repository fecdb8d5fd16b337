// The GLSL emitter of one kernel (glsl_kernel.cpp): values of a region computed at symbolic
// indices, as GLSL statements, by the shared per-element lowering (glsl_lowering.cpp); indices
// are GLSL int expressions. The kernel shapes (elementwise, reducing, matmul, cooperative)
// render the kernel's plan (plan.h).
#pragma once

#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "backends/vulkan/glsl.h"
#include "backends/vulkan/glsl_text.h"
#include "kernel/frame.h"

namespace fluxion::vulkan {

using Index = std::vector<std::string>;

class GlslKernel {
 public:
  // Kernel k rendered by `plan`: its own (emit), or a loop shader's (emit_cooperative).
  GlslKernel(const ir::Region& r, const kernel::RegionSchedule& s, const kernel::Kernel& k,
             const kernel::KernelPlan& plan, const ShaderTarget& target);
  KernelShader emit(const std::string& name);
  // The kernel as a block of code inside a single-workgroup shader (glsl_loop.cpp): the
  // workgroup's invocations (`lid`) stride over its work, and `address(v)` is the GLSL
  // expression (FX_ADDR) of the buffer holding value v.
  std::string emit_cooperative(const std::function<std::string(ir::ValueId)>& address);

 private:
  class Renderer;  // the shared per-element lowering's primitives (glsl_renderer.h)
  // Values.
  std::string at(ir::ValueId v, const Index& idx);
  std::string compute(const ir::Node& n, const Index& idx);
  std::string view(const ir::Node& n, ir::ValueId v, const Index& idx);
  std::string load(ir::ValueId v, const Index& idx);
  void store(ir::ValueId v, const Index& idx, const std::string& x);
  // v's element at row-major position `flat` of its buffer, and a store there.
  std::string load_flat(ir::ValueId v, const std::string& flat);
  void store_flat(ir::ValueId v, const std::string& flat, const std::string& x);
  std::string flat(const Index& idx, const Shape& shape);
  std::string buffer(ir::ValueId v, bool write);
  std::string constant(DType t, double v);
  std::string reduce_identity(ir::Op op, DType t);
  std::string combine(ir::Op op, DType t, const std::string& acc, const std::string& x);

  // Code.
  std::string temp(DType t, const std::string& expr);
  // `type name = init;` with a fresh name starting with `prefix`; returns the name.
  std::string declare(const std::string& type, const char* prefix, const std::string& init);
  std::string fresh(const char* prefix);
  void line(const std::string& s);
  // `for (int i = lo; i < hi; ++i) { body(i) }`, keeping values computed inside local to it.
  void loop(int64_t lo, int64_t hi, const std::function<void(const std::string&)>& body);
  void block(const std::function<void()>& body);
  // `shared T name[d0][d1]...;`, counted against the device's workgroup memory.
  void declare_shared(DType t, const std::string& name, const std::vector<int64_t>& dims);
  void declare_shared(const std::string& type, int64_t element_bytes, const std::string& name,
                      const std::vector<int64_t>& dims);

  // Kernel shapes.
  void body_at(const Index& idx);
  // The invocation's index over the whole dispatch (grid's layout of workgroups).
  std::string invocation_index() const;
  void emit_elementwise();
  void emit_reducing();
  // A (batched) matrix product C[b][i][j] = sum over k of A[b][i][k] B[b][k][j]: `a` and `b`
  // emit code assigning one operand element (inside the bounds) to `dst`; `c_index` is the
  // result's index for C[b][i][j]. A convolution is the same product over im2col.
  struct Gemm {
    Shape batch;
    int64_t M = 0, N = 0, K = 0;
    std::function<void(const Index& b, const std::string& i, const std::string& k, const std::string& dst)> a;
    std::function<void(const Index& b, const std::string& k, const std::string& j, const std::string& dst)> b;
    std::function<Index(const Index& b, const std::string& i, const std::string& j)> c_index;
  };
  // Element idx of a matmul's operand 0 or 1, through the strided view the fuser chose for it
  // (the view it ordered the kernel after), widened where its base is f16 or bf16; and the
  // base with the element's position in it.
  std::string operand_element(size_t operand, const Index& idx);
  std::pair<ir::ValueId, std::string> operand_position(size_t operand, const Index& idx);
  // Element (batch, row, col) of a matmul's f16 operand as float16_t: its 16 bits copied, with
  // no conversion a driver could flush a subnormal in (the f16 tiles' and cooperative tiles'
  // staging).
  std::string operand_f16(size_t operand, Index batch, const std::string& row, const std::string& col);
  Gemm matmul_gemm();
  Gemm conv_gemm();
  void emit_matmul();
  // A matmul of f16 operands planned CooperativeTiles (glsl_cooperative.cpp): each subgroup
  // multiplies fragments of the workgroup's staged f16 slices on the device's matrix units.
  void emit_cooperative_tiles();
  // A Scatter kernel (glsl_scatter.cpp): each invocation owns one column (an outer index and a
  // position after the axis) of a block of result rows, zeroes it and scans every index in
  // order; dispatched, or (`cooperative`) as a block of a loop shader.
  void emit_scatter(bool cooperative);
  // A Scatter kernel planned as sorted rows: each invocation sums one result element's run of
  // the index order (`fx_order`, the kernel's scratch, written by scatter_order_shader).
  void emit_sorted_scatter();
  // Cooperative forms: every invocation of one workgroup strides over rows / outputs.
  void emit_cooperative_rows();
  void emit_cooperative_matmul();
  // The scatter of invocation `column` (0 .. outer x inner - 1) over result rows [lo, hi).
  void scatter_column(const std::string& column, const std::string& lo, const std::string& hi);
  // Index of the kernel's space from the kept (row) and folded (column) indices of `axes`.
  Index merge_index(const std::vector<int64_t>& axes, const Index& kept, const Index& folded) const;
  const std::vector<int64_t>* reduced_axes(std::vector<size_t>* reductions) const;
  Index unravel(const std::string& flat, const Shape& shape);

  const ir::Region& region_;
  const kernel::RegionSchedule& schedule_;
  const kernel::Kernel& kernel_;
  const kernel::KernelPlan& plan_;
  ShaderTarget target_;
  kernel::KernelFrame frame_;
  std::vector<ir::ValueId> buffers_;
  std::vector<bool> written_;
  std::map<ir::ValueId, std::string> buffer_names_;
  std::map<std::pair<ir::ValueId, Index>, std::string> memo_;
  // Reductions of the kernel being emitted: per reduction node, its accumulator variable.
  std::map<size_t, std::string> accumulators_;
  std::ostringstream code_;
  std::string shared_;  // workgroup-memory declarations
  int64_t shared_bytes_ = 0;
  std::string indent_ = "  ";
  int next_ = 0;
  std::array<uint32_t, 3> groups_{1, 1, 1};
};

std::string glsl_type(DType t);

}  // namespace fluxion::vulkan
