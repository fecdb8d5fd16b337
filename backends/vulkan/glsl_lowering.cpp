// What a node computes per element, from the shared lowering (jit/kernel/lowering.h) rendered
// as GLSL (glsl_renderer.h).
#include "backends/vulkan/glsl_renderer.h"
#include "jit/kernel/node_lowering.h"

namespace fluxion::vulkan {

std::string GlslKernel::reduce_identity(ir::Op op, DType t) {
  Renderer render(*this);
  return kernel::reduce_identity(render, op, t);
}

std::string GlslKernel::combine(ir::Op op, DType t, const std::string& acc, const std::string& x) {
  Renderer render(*this);
  return kernel::combine(render, op, t, acc, x);
}

std::string GlslKernel::view(const ir::Node& n, ir::ValueId v, const Index& idx) {
  Renderer render(*this);
  return kernel::lower_view(render, region_, n, v, idx);
}

std::string GlslKernel::compute(const ir::Node& n, const Index& idx) {
  Renderer render(*this);
  return kernel::lower_node(render, region_, n, idx);
}

}  // namespace fluxion::vulkan
