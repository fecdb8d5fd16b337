// What a node computes per element, and the operands of a convolution's matrix product, from
// the shared lowering (kernel/lowering.h) rendered as GLSL (glsl_renderer.h).
#include "backends/vulkan/glsl_renderer.h"
#include "kernel/conv_product.h"
#include "kernel/node_lowering.h"

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

// A convolution or one of its gradients as a matrix product over im2col, k split into
// (k_outer, k_row, k_col).
GlslKernel::Gemm GlslKernel::conv_gemm() {
  const ir::Node& n = region_.nodes[kernel_.root];
  kernel::ConvProduct p = kernel::conv_product(region_, n);
  Gemm g;
  if (p.batch > 0) g.batch = {p.batch};
  g.M = p.M, g.N = p.N, g.K = p.K();
  auto split_k = [p](Renderer& render, const std::string& k) {
    std::string outer = render.bind(render.index_div(k, p.k_inner())),
                inner = render.bind(render.index_rem(k, p.k_inner()));
    return Index{outer, render.bind(render.index_div(inner, p.k_cols)), render.bind(render.index_rem(inner, p.k_cols))};
  };
  auto image = [](const Index& b) { return b.empty() ? std::string("0") : b[0]; };
  g.a = [this, &n, split_k](const Index&, const std::string& i, const std::string& k, const std::string& dst) {
    Renderer render(*this);
    Index s = split_k(render, k);
    line(dst + " = " + kernel::conv_product_a(render, n, i, s[0], s[1], s[2]) + ";");
  };
  g.b = [this, &n, split_k, image](const Index& b, const std::string& k, const std::string& j, const std::string& dst) {
    Renderer render(*this);
    Index s = split_k(render, k);
    line(dst + " = " + kernel::conv_product_b(render, region_, n, image(b), s[0], s[1], s[2], j) + ";");
  };
  g.c_index = [this, &n, image](const Index& b, const std::string& i, const std::string& j) {
    Renderer render(*this);
    return kernel::conv_product_c_index(render, region_, n, image(b), i, j);
  };
  return g;
}

}  // namespace fluxion::vulkan
