// Convolutions with stride 1 as sliding windows (docs/cpu.md): no im2col, no packing.
//
// With stride 1, output pixel (oh, ow) reads input (oh + kh, ow + kw) of an input padded to
// rows of SW = OW + KW - 1 elements. Numbered q = oh * SW + ow ("wide" columns, of which the
// last KW - 1 of each row are not outputs), tap (kh, kw) reads element q + kh * SW + kw: for
// each tap the whole image is one contiguous run, so vectors of columns are plain loads at a
// shifted address. Each image (with its padding) is first staged into a zero-bordered stack
// buffer in that layout.
//   conv2d and its input gradient: rows r (output channels), k over (input channel, tap),
//   register tiles of rows x two vectors of wide columns, then the valid columns copied out
//   (where the epilogue runs). The input gradient is the same correlation of the output
//   gradient, padded by KH - 1 - pad, with the weights flipped and their channels swapped.
//   conv2d's weight gradient: dw[o, tap] = sum over images and q of g[o, q] x[q + shift(tap)],
//   g staged with zeros in the non-output columns; register tiles of output channels x taps,
//   each accumulator a vector of columns kept (in a stack buffer) across images and reduced
//   once at the end. For an image holding an infinity or a NaN, the input's lanes at
//   non-output columns are replaced by zeros, so that a value outside a tap's window cannot
//   make its sum NaN (0 * inf).
// Where the stack buffers would be too large, the MatMul kernel's im2col form is used instead.
#include <algorithm>
#include <optional>

#include "backends/cpu/codegen.h"
#include "fluxion/error.h"
#include "support/round_up.h"

namespace fluxion::cpu {

using ir::Op;
using llvm::Value;

namespace {

// The correlation a sliding convolution computes, in the terms of the staged image.
struct Slide {
  bool weight_grad = false;
  bool flip = false;                    // input gradient: weights flipped, channels swapped
  int64_t rows = 0, channels = 0;       // result channels r; contracted channels c
  int64_t KH = 0, KW = 0;
  int64_t out_h = 0, out_w = 0;         // the pixels of the correlation's output
  int64_t before_h = 0, before_w = 0;   // zeros staged before it
  int64_t SH = 0, SW = 0;               // staged image: out + K - 1
  int64_t wide() const { return (out_h - 1) * SW + out_w; }
  int64_t staged() const { return channels * SH * SW; }
};

// Where stage_image puts an image: element (c, h, w) of the staged layout at
// c * channel_stride + h * row_stride + w, the operand's (h - before_h, w - before_w),
// within rows x cols.
struct Staging {
  int64_t channel_stride, row_stride, before_h, before_w, rows, cols;
};

constexpr int64_t kMaxStackBytes = int64_t{160} << 10;

// Register tile of the weight gradient: output channels x taps accumulators, with the
// channels' g vectors and one input vector beside them in the target's 16 or 32 registers.
int grad_tile_rows(int registers) { return registers >= 32 ? 4 : 2; }
int grad_tile_taps(int registers) { return registers >= 32 ? 6 : 5; }

}  // namespace

// One sliding convolution's emission: the kernel's convolution as a correlation over staged
// images (plan), then its forward or weight-gradient loops.
class KernelEmitter::SlidingConv {
 public:
  explicit SlidingConv(KernelEmitter& e)
      : emitter_(e),
        builder_(e.builder_),
        region_(e.region_),
        kernel_(e.kernel_),
        context_(e.context_),
        target_(e.target_) {}

  void emit(Value* lo, Value* hi);

 private:
  void forward(const Slide& s, int lanes, Value* lo, Value* hi);
  void weight_grad(const Slide& s, int lanes, Value* lo, Value* hi);
  // Copies channels [c0, c0 + count) of image `image` of operand v into `dst` as `st` lays
  // them out; what lies outside v there (the border, zeroed once) is never written.
  void stage_image(ir::ValueId v, Value* image, Value* c0, int64_t count, Value* dst, const Staging& st);

  Value* i64(int64_t v) { return emitter_.i64(v); }
  Value* at(ir::ValueId v, const Index& idx) { return emitter_.at(v, idx); }
  Value* constant(DType t, double v) { return emitter_.constant(t, v); }
  Value* is_nan(Value* x) { return emitter_.is_nan(x); }
  void store(ir::ValueId v, const Index& idx, Value* x) { emitter_.store(v, idx, x); }
  void body_at(const Index& idx, const std::vector<std::pair<ir::ValueId, Value*>>& known = {}) {
    emitter_.body_at(idx, known);
  }
  Value* stack_buffer(llvm::Type* et, int64_t elements) { return emitter_.stack_buffer(et, elements); }

  KernelEmitter& emitter_;
  llvm::IRBuilder<>& builder_;
  const ir::Region& region_;
  const kernel::Kernel& kernel_;
  llvm::LLVMContext& context_;
  const Target& target_;
};

namespace {

// The correlation kernel k's convolution computes as sliding windows over staged images, or
// nothing where they do not apply (a stride or dilation, groups, vectors of fewer than 4 lanes,
// an empty shape) or their stack buffers would be too large.
std::optional<Slide> slide_of(const ir::Region& r, const kernel::Kernel& k, const Target& target) {
  const ir::Node& n = r.nodes[k.root];
  const ir::Attrs& a = n.attrs;
  bool unit = std::all_of(a.strides.begin(), a.strides.end(), [](int64_t s) { return s == 1; }) &&
              std::all_of(a.dilation.begin(), a.dilation.end(), [](int64_t d) { return d == 1; });
  if (!unit || a.groups != 1) return std::nullopt;
  DType t = r.type(n.results[0]).dtype;
  int64_t esize = dtype_size(t);
  int lanes = std::max<int>(1, target.matmul_vector_bytes / static_cast<int>(esize));
  if (lanes < 4) return std::nullopt;
  Slide s;
  const Shape& out = r.type(n.results[0]).shape;
  if (n.op == Op::Conv2dWeightGrad) {
    const Shape& gs = r.type(n.operands[1]).shape;
    s.weight_grad = true;
    s.rows = out[0], s.channels = out[1], s.KH = out[2], s.KW = out[3];
    s.out_h = gs[2], s.out_w = gs[3];
    s.before_h = a.padding[0], s.before_w = a.padding[2];
  } else {
    const Shape& ws = r.type(n.operands[1]).shape;
    s.flip = n.op == Op::Conv2dInputGrad;
    s.rows = s.flip ? ws[1] : ws[0], s.channels = s.flip ? ws[0] : ws[1], s.KH = ws[2], s.KW = ws[3];
    s.out_h = out[2], s.out_w = out[3];
    s.before_h = s.flip ? s.KH - 1 - a.padding[0] : a.padding[0];
    s.before_w = s.flip ? s.KW - 1 - a.padding[2] : a.padding[2];
  }
  s.SH = s.out_h + s.KH - 1, s.SW = s.out_w + s.KW - 1;
  if (s.rows == 0 || s.channels == 0 || s.out_h <= 0 || s.out_w <= 0 || out[0] == 0) return std::nullopt;
  int64_t taps = s.channels * s.KH * s.KW;
  int64_t bytes = esize * (s.staged() + 2 * lanes);
  if (s.weight_grad) {
    bytes += esize * (grad_tile_rows(target.vector_registers) + 1) * support::round_up<int64_t>(s.wide(), lanes) +
             esize * grad_tile_rows(target.vector_registers) * taps * lanes;
  } else {
    bytes += esize * s.rows * support::round_up<int64_t>(s.wide(), 2 * lanes);
  }
  if (bytes > kMaxStackBytes) return std::nullopt;
  return s;
}

}  // namespace

bool sliding_conv_fits(const ir::Region& r, const kernel::Kernel& k, const Target& target) {
  return slide_of(r, k, target).has_value();
}

void KernelEmitter::sliding_conv(Value* lo, Value* hi) { SlidingConv(*this).emit(lo, hi); }

void KernelEmitter::SlidingConv::emit(Value* lo, Value* hi) {
  std::optional<Slide> s = slide_of(region_, kernel_, target_);
  if (!s) detail::fail("cpu codegen", "internal error: sliding windows planned for a convolution they do not fit");
  int lanes = static_cast<int>(kernel_.plan.vector_lanes);
  if (s->weight_grad) {
    weight_grad(*s, lanes, lo, hi);
  } else {
    forward(*s, lanes, lo, hi);
  }
}

void KernelEmitter::SlidingConv::stage_image(ir::ValueId v, Value* image, Value* c0, int64_t count, Value* dst,
                                             const Staging& st) {
  const Shape& vs = region_.type(v).shape;
  llvm::Type* et = reg_type(context_, region_.type(v).dtype);
  int64_t h0 = std::max<int64_t>(0, st.before_h), h1 = std::min(st.rows, vs[2] + st.before_h);
  int64_t w0 = std::max<int64_t>(0, st.before_w), w1 = std::min(st.cols, vs[3] + st.before_w);
  auto saved = emitter_.memo_;
  emit_for(builder_, i64(0), i64(count), {}, [&](Value* c, const std::vector<Value*>&) {
    return emit_for(builder_, i64(h0), i64(h1), {}, [&](Value* h, const std::vector<Value*>&) {
      return emit_for(builder_, i64(w0), i64(w1), {}, [&](Value* w, const std::vector<Value*>&) {
        Value* x = at(v, {image, builder_.CreateAdd(c0, c), builder_.CreateSub(h, i64(st.before_h)),
                          builder_.CreateSub(w, i64(st.before_w))});
        Value* off = builder_.CreateAdd(builder_.CreateAdd(builder_.CreateMul(c, i64(st.channel_stride)),
                                                           builder_.CreateMul(h, i64(st.row_stride))),
                                        w);
        builder_.CreateStore(x, builder_.CreateInBoundsGEP(et, dst, off));
        return std::vector<Value*>{};
      });
    });
  });
  emitter_.memo_ = std::move(saved);
}

void KernelEmitter::SlidingConv::forward(const Slide& s, int lanes, Value* lo, Value* hi) {
  const ir::Node& n = region_.nodes[kernel_.root];
  ir::ValueId src = n.operands[0], w = n.operands[1], res = n.results[0];
  DType t = region_.type(res).dtype;
  auto [et, vt, ealign, valign] = vector_types(context_, t, lanes);
  int NR = 2 * lanes;
  int64_t blocks = support::round_up<int64_t>(s.wide(), NR) / NR, row_len = blocks * NR;
  Value* staged = stack_buffer(et, s.staged() + NR);
  Value* wide = stack_buffer(et, s.rows * row_len);
  builder_.CreateMemSet(staged, builder_.getInt8(0), i64((s.staged() + NR) * dtype_size(t)), llvm::Align(64));
  bool has_epilogue = kernel_.nodes.size() > 1;
  auto elem = [&](Value* base, Value* off) { return builder_.CreateInBoundsGEP(et, base, off); };
  auto weight = [&](Value* r, Value* c, Value* kh, int64_t kw) {
    if (!s.flip) return at(w, {r, c, kh, i64(kw)});
    return at(w, {c, r, builder_.CreateSub(i64(s.KH - 1), kh), i64(s.KW - 1 - kw)});
  };
  // Rows [i0, i0 + count) x wide columns [j0, j0 + NR), accumulated over every (c, kh, kw).
  auto tile = [&](Value* i0, int count, Value* j0) {
    std::vector<Value*> zero(static_cast<size_t>(2 * count), llvm::ConstantAggregateZero::get(vt));
    auto saved = emitter_.memo_;
    std::vector<Value*> acc =
        emit_for(builder_, i64(0), i64(s.channels), zero, [&](Value* c, const std::vector<Value*>& a0) {
          return emit_for(builder_, i64(0), i64(s.KH), a0, [&](Value* kh, const std::vector<Value*>& a) {
            Value* base = builder_.CreateAdd(
                builder_.CreateMul(builder_.CreateAdd(builder_.CreateMul(c, i64(s.SH)), kh), i64(s.SW)), j0);
            std::vector<Value*> next = a;
            for (int64_t kw = 0; kw < s.KW; ++kw) {
              Value* p = elem(staged, builder_.CreateAdd(base, i64(kw)));
              Value* b0 = builder_.CreateAlignedLoad(vt, p, ealign);
              Value* b1 = builder_.CreateAlignedLoad(
                  vt, builder_.CreateConstInBoundsGEP1_64(et, p, static_cast<uint64_t>(lanes)), ealign);
              for (int r = 0; r < count; ++r) {
                Value* x = builder_.CreateVectorSplat(static_cast<unsigned>(lanes),
                                                      weight(builder_.CreateAdd(i0, i64(r)), c, kh, kw));
                next[2 * static_cast<size_t>(r)] =
                    builder_.CreateIntrinsic(llvm::Intrinsic::fmuladd, {vt}, {x, b0, next[2 * static_cast<size_t>(r)]});
                next[2 * static_cast<size_t>(r) + 1] = builder_.CreateIntrinsic(
                    llvm::Intrinsic::fmuladd, {vt}, {x, b1, next[2 * static_cast<size_t>(r) + 1]});
              }
            }
            return next;
          });
        });
    emitter_.memo_ = std::move(saved);
    for (int r = 0; r < count; ++r) {
      Value* row = builder_.CreateAdd(builder_.CreateMul(builder_.CreateAdd(i0, i64(r)), i64(row_len)), j0);
      builder_.CreateAlignedStore(acc[2 * static_cast<size_t>(r)], elem(wide, row), valign);
      builder_.CreateAlignedStore(acc[2 * static_cast<size_t>(r) + 1], elem(wide, builder_.CreateAdd(row, i64(lanes))),
                                  valign);
    }
  };
  int mr = target_.vector_registers >= 32 && s.rows % 8 == 0 ? 8 : 6;
  emit_for(builder_, lo, hi, {}, [&](Value* image, const std::vector<Value*>&) {
    stage_image(src, image, i64(0), s.channels, staged, {s.SH * s.SW, s.SW, s.before_h, s.before_w, s.SH, s.SW});
    emit_for(builder_, i64(0), i64(blocks), {}, [&](Value* jb, const std::vector<Value*>&) {
      Value* j0 = builder_.CreateMul(jb, i64(NR));
      emit_for(builder_, i64(0), i64(s.rows / mr), {}, [&](Value* ib, const std::vector<Value*>&) {
        tile(builder_.CreateMul(ib, i64(mr)), mr, j0);
        return std::vector<Value*>{};
      });
      if (s.rows % mr) tile(i64(s.rows / mr * mr), static_cast<int>(s.rows % mr), j0);
      return std::vector<Value*>{};
    });
    // The output columns of the wide rows, then the epilogue on them.
    auto saved = emitter_.memo_;
    emit_for(builder_, i64(0), i64(s.rows), {}, [&](Value* r, const std::vector<Value*>&) {
      return emit_for(builder_, i64(0), i64(s.out_h), {}, [&](Value* oh, const std::vector<Value*>&) {
        return emit_for(
            builder_, i64(0), i64(s.out_w), {},
            [&](Value* ow, const std::vector<Value*>&) {
              Value* q = builder_.CreateAdd(builder_.CreateMul(r, i64(row_len)),
                                            builder_.CreateAdd(builder_.CreateMul(oh, i64(s.SW)), ow));
              Index idx{image, r, oh, ow};
              store(res, idx, builder_.CreateLoad(et, elem(wide, q)));
              if (has_epilogue) body_at(idx);
              return std::vector<Value*>{};
            },
            LoopHint::Rolled);
      });
    });
    emitter_.memo_ = std::move(saved);
    return std::vector<Value*>{};
  });
}

void KernelEmitter::SlidingConv::weight_grad(const Slide& s, int lanes, Value* lo, Value* hi) {
  const ir::Node& n = region_.nodes[kernel_.root];
  ir::ValueId x = n.operands[0], g = n.operands[1], res = n.results[0];
  DType t = region_.type(res).dtype;
  auto [et, vt, ealign, valign] = vector_types(context_, t, lanes);
  const int mo = grad_tile_rows(target_.vector_registers), tb = grad_tile_taps(target_.vector_registers);
  // Threads split the output channels [lo, hi), or a part of a kernel split over its images
  // takes images [lo, hi) of every channel.
  bool by_images = kernel_.split_by(kernel::SplitOver::Images);
  Value* image0 = by_images ? lo : i64(0);
  Value* image1 = by_images ? hi : i64(region_.type(g).shape[0]);
  Value* channel0 = by_images ? i64(0) : lo;
  Value* channel1 = by_images ? i64(s.rows) : hi;
  int64_t taps = s.channels * s.KH * s.KW, kk = s.KH * s.KW;
  int64_t row_len = support::round_up<int64_t>(s.wide(), lanes), steps = row_len / lanes;
  Value* staged = stack_buffer(et, s.staged() + lanes);
  Value* grads = stack_buffer(et, mo * row_len);
  Value* sums = stack_buffer(et, mo * taps * lanes);
  builder_.CreateMemSet(staged, builder_.getInt8(0), i64((s.staged() + lanes) * dtype_size(t)), llvm::Align(64));
  builder_.CreateMemSet(grads, builder_.getInt8(0), i64(mo * row_len * dtype_size(t)), llvm::Align(64));
  // Which wide columns are outputs. The others hold g = 0 but read input elements outside the
  // tap's window, and 0 * inf would be NaN: their input lanes are replaced by zeros.
  auto* it = llvm::IntegerType::get(context_, static_cast<unsigned>(8 * dtype_size(t)));
  auto* mvt = llvm::FixedVectorType::get(it, static_cast<unsigned>(lanes));
  Value* outputs = stack_buffer(it, row_len);
  emit_for(builder_, i64(0), i64(row_len), {}, [&](Value* q, const std::vector<Value*>&) {
    Value* is_output = builder_.CreateAnd(builder_.CreateICmpSLT(q, i64(s.wide())),
                                          builder_.CreateICmpSLT(builder_.CreateURem(q, i64(s.SW)), i64(s.out_w)));
    builder_.CreateStore(builder_.CreateSExt(is_output, it), builder_.CreateInBoundsGEP(it, outputs, q));
    return std::vector<Value*>{};
  });
  bool has_epilogue = kernel_.nodes.size() > 1;
  auto elem = [&](Value* base, Value* off) { return builder_.CreateInBoundsGEP(et, base, off); };
  llvm::FastMathFlags reassoc;
  reassoc.setAllowReassoc();

  // Output channels [o0, o0 + count): every image's products summed into `sums`, then each
  // sum reduced across its lanes, stored, and the epilogue run on it.
  auto channel_block = [&](Value* o0, int count) {
    builder_.CreateMemSet(sums, builder_.getInt8(0), i64(count * taps * lanes * dtype_size(t)), llvm::Align(64));
    // Accumulators of `nt` taps starting at tap t0, for every q step of one image; `masked`:
    // the input's lanes at non-output columns replaced by zeros.
    auto tap_block = [&](Value* t0, int nt, bool masked) {
      std::vector<Value*> shift;
      for (int j = 0; j < nt; ++j) {
        Value* tap = builder_.CreateAdd(t0, i64(j));
        Value* c = builder_.CreateUDiv(tap, i64(kk));
        Value* k = builder_.CreateURem(tap, i64(kk));
        Value* off =
            builder_.CreateAdd(builder_.CreateMul(c, i64(s.SH * s.SW)),
                               builder_.CreateAdd(builder_.CreateMul(builder_.CreateUDiv(k, i64(s.KW)), i64(s.SW)),
                                                  builder_.CreateURem(k, i64(s.KW))));
        shift.push_back(off);
      }
      auto slot = [&](int o, int j) {
        return elem(sums,
                    builder_.CreateMul(builder_.CreateAdd(i64(o * taps), builder_.CreateAdd(t0, i64(j))), i64(lanes)));
      };
      std::vector<Value*> init;
      for (int o = 0; o < count; ++o)
        for (int j = 0; j < nt; ++j) init.push_back(builder_.CreateAlignedLoad(vt, slot(o, j), valign));
      std::vector<Value*> acc = emit_for(
          builder_, i64(0), i64(steps), init,
          [&](Value* step, const std::vector<Value*>& a) {
            Value* q = builder_.CreateMul(step, i64(lanes));
            Value* mask = masked ? builder_.CreateICmpNE(builder_.CreateAlignedLoad(
                                                             mvt, builder_.CreateInBoundsGEP(it, outputs, q), valign),
                                                         llvm::ConstantAggregateZero::get(mvt))
                                 : nullptr;
            std::vector<Value*> gv;
            for (int o = 0; o < count; ++o)
              gv.push_back(
                  builder_.CreateAlignedLoad(vt, elem(grads, builder_.CreateAdd(i64(o * row_len), q)), valign));
            std::vector<Value*> next = a;
            for (int j = 0; j < nt; ++j) {
              Value* xv = builder_.CreateAlignedLoad(
                  vt, elem(staged, builder_.CreateAdd(shift[static_cast<size_t>(j)], q)), ealign);
              if (masked) xv = builder_.CreateSelect(mask, xv, llvm::ConstantAggregateZero::get(vt));
              for (int o = 0; o < count; ++o) {
                size_t i = static_cast<size_t>(o * nt + j);
                next[i] =
                    builder_.CreateIntrinsic(llvm::Intrinsic::fmuladd, {vt}, {gv[static_cast<size_t>(o)], xv, next[i]});
              }
            }
            return next;
          },
          // Unrolled, its steps multiplied the kernel's code (four copies of this loop) for no
          // measured speed.
          LoopHint::Rolled);
      for (int o = 0; o < count; ++o)
        for (int j = 0; j < nt; ++j)
          builder_.CreateAlignedStore(acc[static_cast<size_t>(o * nt + j)], slot(o, j), valign);
    };
    emit_for(builder_, image0, image1, {}, [&](Value* image, const std::vector<Value*>&) {
      stage_image(x, image, i64(0), s.channels, staged, {s.SH * s.SW, s.SW, s.before_h, s.before_w, s.SH, s.SW});
      stage_image(g, image, o0, count, grads, {row_len, s.SW, 0, 0, s.out_h, s.out_w});
      // Masking costs a third of the kernel's time (LeNet's conv2): only an image holding an
      // infinity or a NaN needs it (x - x is then NaN somewhere).
      Value* not_finite = emit_for(
          builder_, i64(0), i64(s.staged()), {builder_.getFalse()}, [&](Value* i, const std::vector<Value*>& any) {
            Value* v = builder_.CreateLoad(et, elem(staged, i));
            return std::vector<Value*>{builder_.CreateOr(any[0], is_nan(builder_.CreateFSub(v, v)))};
          })[0];
      auto all_taps = [&](bool masked) {
        emit_for(builder_, i64(0), i64(taps / tb), {}, [&](Value* tq, const std::vector<Value*>&) {
          tap_block(builder_.CreateMul(tq, i64(tb)), tb, masked);
          return std::vector<Value*>{};
        });
        if (taps % tb) tap_block(i64(taps / tb * tb), static_cast<int>(taps % tb), masked);
      };
      emit_if(builder_, builder_.CreateNot(not_finite), [&] { all_taps(false); });
      emit_if(builder_, not_finite, [&] { all_taps(true); });
      return std::vector<Value*>{};
    });
    auto saved = emitter_.memo_;
    emit_for(builder_, i64(0), i64(count), {}, [&](Value* o, const std::vector<Value*>&) {
      return emit_for(builder_, i64(0), i64(taps), {}, [&](Value* tap, const std::vector<Value*>&) {
        Value* v = builder_.CreateAlignedLoad(
            vt, elem(sums, builder_.CreateMul(builder_.CreateAdd(builder_.CreateMul(o, i64(taps)), tap), i64(lanes))),
            valign);
        auto* total = llvm::cast<llvm::Instruction>(builder_.CreateFAddReduce(constant(t, 0), v));
        total->setFastMathFlags(reassoc);
        Value* k = builder_.CreateURem(tap, i64(kk));
        Index idx{builder_.CreateAdd(o0, o), builder_.CreateUDiv(tap, i64(kk)), builder_.CreateUDiv(k, i64(s.KW)),
                  builder_.CreateURem(k, i64(s.KW))};
        store(res, idx, total);
        if (has_epilogue) body_at(idx);
        return std::vector<Value*>{};
      });
    });
    emitter_.memo_ = std::move(saved);
  };
  // Whole blocks of channels, then the rest as one block.
  Value* full = builder_.CreateSDiv(builder_.CreateSub(channel1, channel0), i64(mo));
  emit_for(builder_, i64(0), full, {}, [&](Value* ob, const std::vector<Value*>&) {
    channel_block(builder_.CreateAdd(channel0, builder_.CreateMul(ob, i64(mo))), mo);
    return std::vector<Value*>{};
  });
  Value* rest_start = builder_.CreateAdd(channel0, builder_.CreateMul(full, i64(mo)));
  Value* rest = builder_.CreateSub(channel1, rest_start);
  for (int count = 1; count < mo; ++count) {
    emit_if(builder_, builder_.CreateICmpEQ(rest, i64(count)), [&] { channel_block(rest_start, count); });
  }
}

}  // namespace fluxion::cpu
