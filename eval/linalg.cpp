// matmul, conv2d and pooling as plain loops, accumulating in double.
#include <cmath>
#include <cstdint>
#include <limits>

#include "eval/buffer.h"

namespace fluxion::eval {

// Floats accumulate in double and round once. i32 accumulates exactly modulo 2^64 (products of
// i32 values need up to 62 bits, more than a double holds), then wraps to 32 bits: the result of
// wrapping i32 multiply-adds in any order.
Buffer eval_matmul(const Buffer& a, const Buffer& b, const TensorType& out) {
  const Shape& sa = a.type.shape;
  int64_t m = sa[sa.size() - 2], k = sa.back(), n = b.type.shape.back();
  int64_t batch = numel(Shape(sa.begin(), sa.end() - 2));
  bool integer = out.dtype == DType::i32;
  Buffer r = zeros(out);
  for (int64_t p = 0; p < batch; ++p) {
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0;
        uint64_t iacc = 0;
        for (int64_t q = 0; q < k; ++q) {
          double x = a.v[static_cast<size_t>((p * m + i) * k + q)], y = b.v[static_cast<size_t>((p * k + q) * n + j)];
          if (integer) {
            iacc += static_cast<uint64_t>(static_cast<int64_t>(x)) * static_cast<uint64_t>(static_cast<int64_t>(y));
          } else {
            acc += x * y;
          }
        }
        if (integer) acc = static_cast<double>(static_cast<int32_t>(static_cast<uint32_t>(iacc)));
        r.v[static_cast<size_t>((p * m + i) * n + j)] = round_to(out.dtype, acc);
      }
    }
  }
  return r;
}

namespace {

// Calls tap(xi, wi, yi) for every (input, weight, output) element triple of a conv2d with
// these shapes and attributes: y[yi] += x[xi] * w[wi]. Forward and both gradients are this one
// loop nest with a different accumulation, so they cannot disagree on indexing.
template <class Tap>
void for_each_tap(const ir::Attrs& a, const Shape& xs, const Shape& ws, const Shape& ys, Tap tap) {
  int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3];
  int64_t O = ws[0], CG = ws[1], KH = ws[2], KW = ws[3];
  int64_t OH = ys[2], OW = ys[3];
  int64_t per_group = O / a.groups;
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t o = 0; o < O; ++o) {
      int64_t c0 = (o / per_group) * CG;  // first input channel of o's group
      for (int64_t oh = 0; oh < OH; ++oh) {
        for (int64_t ow = 0; ow < OW; ++ow) {
          size_t yi = static_cast<size_t>(((n * O + o) * OH + oh) * OW + ow);
          for (int64_t c = 0; c < CG; ++c) {
            for (int64_t kh = 0; kh < KH; ++kh) {
              int64_t h = oh * a.strides[0] - a.padding[0] + kh * a.dilation[0];
              if (h < 0 || h >= H) continue;
              for (int64_t kw = 0; kw < KW; ++kw) {
                int64_t wi = ow * a.strides[1] - a.padding[2] + kw * a.dilation[1];
                if (wi < 0 || wi >= W) continue;
                tap(static_cast<size_t>(((n * C + c0 + c) * H + h) * W + wi),
                    static_cast<size_t>(((o * CG + c) * KH + kh) * KW + kw), yi);
              }
            }
          }
        }
      }
    }
  }
}

// Calls window(yi, positions) for every pooling output with the flat input indices inside its
// window (padding excluded), in row-major window order.
template <class Window>
void for_each_window(const ir::Attrs& a, const Shape& xs, const Shape& ys, Window window) {
  int64_t NC = xs[0] * xs[1], H = xs[2], W = xs[3];
  int64_t OH = ys[2], OW = ys[3];
  std::vector<size_t> positions;
  for (int64_t p = 0; p < NC; ++p) {
    for (int64_t oh = 0; oh < OH; ++oh) {
      for (int64_t ow = 0; ow < OW; ++ow) {
        positions.clear();
        for (int64_t kh = 0; kh < a.window[0]; ++kh) {
          int64_t h = oh * a.strides[0] - a.padding[0] + kh;
          if (h < 0 || h >= H) continue;
          for (int64_t kw = 0; kw < a.window[1]; ++kw) {
            int64_t wi = ow * a.strides[1] - a.padding[2] + kw;
            if (wi >= 0 && wi < W) positions.push_back(static_cast<size_t>((p * H + h) * W + wi));
          }
        }
        window(static_cast<size_t>((p * OH + oh) * OW + ow), positions);
      }
    }
  }
}

// The window element max pooling selects: the first maximum, or the first NaN. `positions` is
// never empty: each padding is smaller than the window, so every window holds a real element.
size_t selected(const std::vector<double>& x, const std::vector<size_t>& positions) {
  size_t best = positions.at(0);
  for (size_t p : positions) {
    if (std::isnan(x[best])) break;
    if (std::isnan(x[p]) || x[p] > x[best]) best = p;
  }
  return best;
}

Buffer rounded(Buffer b) {
  for (double& v : b.v) v = round_to(b.type.dtype, v);
  return b;
}

}  // namespace

Buffer eval_conv(const ir::Node& n, const Buffer& a, const Buffer& b, const TensorType& out) {
  Buffer r = zeros(out);
  switch (n.op) {
    case ir::Op::Conv2d:
      for_each_tap(n.attrs, a.type.shape, b.type.shape, out.shape,
                   [&](size_t xi, size_t wi, size_t yi) { r.v[yi] += a.v[xi] * b.v[wi]; });
      break;
    case ir::Op::Conv2dInputGrad:  // a = g, b = w
      for_each_tap(n.attrs, out.shape, b.type.shape, a.type.shape,
                   [&](size_t xi, size_t wi, size_t yi) { r.v[xi] += a.v[yi] * b.v[wi]; });
      break;
    default:  // Conv2dWeightGrad: a = x, b = g
      for_each_tap(n.attrs, a.type.shape, out.shape, b.type.shape,
                   [&](size_t xi, size_t wi, size_t yi) { r.v[wi] += a.v[xi] * b.v[yi]; });
      break;
  }
  return rounded(std::move(r));
}

Buffer eval_pool(const ir::Node& n, const std::vector<Value>& in, const TensorType& out) {
  Buffer r = zeros(out);
  const ir::Attrs& a = n.attrs;
  double area = static_cast<double>(a.window.empty() ? 1 : a.window[0] * a.window[1]);
  switch (n.op) {
    case ir::Op::MaxPool2d:
      for_each_window(a, in[0]->type.shape, out.shape,
                      [&](size_t yi, const std::vector<size_t>& ps) { r.v[yi] = in[0]->v[selected(in[0]->v, ps)]; });
      break;
    // Average pooling counts padded positions as zeros (count_include_pad).
    case ir::Op::AvgPool2d:
      for_each_window(a, in[0]->type.shape, out.shape, [&](size_t yi, const std::vector<size_t>& ps) {
        for (size_t p : ps) r.v[yi] += in[0]->v[p];
        r.v[yi] /= area;
      });
      break;
    case ir::Op::MaxPool2dSelect:  // in = x, t
      for_each_window(a, in[0]->type.shape, out.shape,
                      [&](size_t yi, const std::vector<size_t>& ps) { r.v[yi] = in[1]->v[selected(in[0]->v, ps)]; });
      break;
    case ir::Op::MaxPool2dGrad:  // in = x, g
      for_each_window(a, out.shape, in[1]->type.shape,
                      [&](size_t yi, const std::vector<size_t>& ps) { r.v[selected(in[0]->v, ps)] += in[1]->v[yi]; });
      break;
    default:  // AvgPool2dGrad: in = g
      for_each_window(a, out.shape, in[0]->type.shape, [&](size_t yi, const std::vector<size_t>& ps) {
        for (size_t p : ps) r.v[p] += in[0]->v[yi] / area;
      });
      break;
  }
  return rounded(std::move(r));
}

}  // namespace fluxion::eval
