// matmul, conv2d and pooling as plain loops, accumulating in double.
#include <cmath>
#include <limits>

#include "backends/interp/buffer.h"

namespace fluxion::interp {

Buffer eval_matmul(const Buffer& a, const Buffer& b, const TensorType& out) {
  const Shape& sa = a.type.shape;
  int64_t m = sa[sa.size() - 2], k = sa.back(), n = b.type.shape.back();
  int64_t batch = numel(Shape(sa.begin(), sa.end() - 2));
  Buffer r = zeros(out);
  for (int64_t p = 0; p < batch; ++p) {
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0;
        for (int64_t q = 0; q < k; ++q) {
          acc += a.v[static_cast<size_t>((p * m + i) * k + q)] * b.v[static_cast<size_t>((p * k + q) * n + j)];
        }
        r.v[static_cast<size_t>((p * m + i) * n + j)] = round_to(out.dtype, acc);
      }
    }
  }
  return r;
}

Buffer eval_conv2d(const ir::Node& node, const Buffer& x, const Buffer& w, const TensorType& out) {
  const ir::Attrs& a = node.attrs;
  const Shape& xs = x.type.shape;
  const Shape& ws = w.type.shape;
  int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3];
  int64_t O = ws[0], CG = ws[1], KH = ws[2], KW = ws[3];
  int64_t OH = out.shape[2], OW = out.shape[3];
  int64_t per_group = O / a.groups;
  Buffer r = zeros(out);
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t o = 0; o < O; ++o) {
      int64_t c0 = (o / per_group) * CG;  // first input channel of o's group
      for (int64_t oh = 0; oh < OH; ++oh) {
        for (int64_t ow = 0; ow < OW; ++ow) {
          double acc = 0;
          for (int64_t c = 0; c < CG; ++c) {
            for (int64_t kh = 0; kh < KH; ++kh) {
              int64_t h = oh * a.strides[0] - a.padding[0] + kh * a.dilation[0];
              if (h < 0 || h >= H) continue;
              for (int64_t kw = 0; kw < KW; ++kw) {
                int64_t wi = ow * a.strides[1] - a.padding[2] + kw * a.dilation[1];
                if (wi < 0 || wi >= W) continue;
                acc += x.v[static_cast<size_t>(((n * C + c0 + c) * H + h) * W + wi)] *
                       w.v[static_cast<size_t>(((o * CG + c) * KH + kh) * KW + kw)];
              }
            }
          }
          r.v[static_cast<size_t>(((n * O + o) * OH + oh) * OW + ow)] = round_to(out.dtype, acc);
        }
      }
    }
  }
  return r;
}

Buffer eval_pool2d(const ir::Node& node, const Buffer& x, const TensorType& out) {
  const ir::Attrs& a = node.attrs;
  const Shape& xs = x.type.shape;
  int64_t NC = xs[0] * xs[1], H = xs[2], W = xs[3];
  int64_t OH = out.shape[2], OW = out.shape[3];
  bool is_max = node.op == ir::Op::MaxPool2d;
  Buffer r = zeros(out);
  for (int64_t p = 0; p < NC; ++p) {
    for (int64_t oh = 0; oh < OH; ++oh) {
      for (int64_t ow = 0; ow < OW; ++ow) {
        // Max ignores padded positions; average counts them as zeros (count_include_pad).
        double acc = is_max ? -std::numeric_limits<double>::infinity() : 0.0;
        for (int64_t kh = 0; kh < a.window[0]; ++kh) {
          int64_t h = oh * a.strides[0] - a.padding[0] + kh;
          if (h < 0 || h >= H) continue;
          for (int64_t kw = 0; kw < a.window[1]; ++kw) {
            int64_t wi = ow * a.strides[1] - a.padding[2] + kw;
            if (wi < 0 || wi >= W) continue;
            double v = x.v[static_cast<size_t>((p * H + h) * W + wi)];
            if (!is_max) {
              acc += v;
            } else if (!std::isnan(acc) && (std::isnan(v) || v > acc)) {
              acc = v;  // a NaN, once seen, stays: NaN propagates as in max
            }
          }
        }
        if (!is_max) acc /= static_cast<double>(a.window[0] * a.window[1]);
        r.v[static_cast<size_t>((p * OH + oh) * OW + ow)] = round_to(out.dtype, acc);
      }
    }
  }
  return r;
}

}  // namespace fluxion::interp
