// Views and data movement on the interpreter: reshape, transpose, broadcast, slice, concat,
// gather and take (with index clamping).
#include "interp/program_builder.h"

using namespace interp_test;

namespace {

std::vector<double> iota_data(int64_t n) {
  std::vector<double> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(static_cast<double>(i));
  return v;
}

}  // namespace

TEST(InterpMovement, ReshapeKeepsRowMajorOrder) {
  Array x = f64({1, 2, 3, 4, 5, 6}, {2, 3});
  Array y = run_op(Op::Reshape, {x}, {}, {{DType::f64, {3, 1, 2}}});
  EXPECT_EQ(y.shape(), (Shape{3, 1, 2}));
  expect_same(y.to_doubles(), {1, 2, 3, 4, 5, 6});
}

TEST(InterpMovement, TransposeMatchesNaiveLoop) {
  const int64_t A = 2, B = 3, C = 4;
  std::vector<double> x = iota_data(A * B * C);
  ir::Attrs perm = attrs([](ir::Attrs& a) { a.perm = {2, 0, 1}; });
  Array y = run_op(Op::Transpose, {f64(x, {A, B, C})}, perm);
  ASSERT_EQ(y.shape(), (Shape{C, A, B}));
  std::vector<double> want;
  for (int64_t k = 0; k < C; ++k)
    for (int64_t i = 0; i < A; ++i)
      for (int64_t j = 0; j < B; ++j) want.push_back(x[(i * B + j) * C + k]);  // y[k,i,j] = x[i,j,k]
  expect_same(y.to_doubles(), want, "transpose perm [2,0,1]");
  // 2-D case by hand.
  expect_same(run_op(Op::Transpose, {f64({1, 2, 3, 4, 5, 6}, {2, 3})}, attrs([](ir::Attrs& a) { a.perm = {1, 0}; }))
                  .to_doubles(),
              {1, 4, 2, 5, 3, 6});
}

TEST(InterpMovement, BroadcastRepeatsSizeOneAndMissingDims) {
  Array col = i32({7, 8, 9}, {3, 1});
  Array y = run_op(Op::Broadcast, {col}, {}, {{DType::i32, {2, 3, 4}}});
  std::vector<int32_t> want;
  for (int a = 0; a < 2; ++a)
    for (int b = 0; b < 3; ++b)
      for (int c = 0; c < 4; ++c) want.push_back(7 + b);
  EXPECT_EQ(y.to_vector<int32_t>(), want);
  Array row = f64({1, 2}, {1, 2});
  expect_same(run_op(Op::Broadcast, {row}, {}, {{DType::f64, {3, 2}}}).to_doubles(), {1, 2, 1, 2, 1, 2});
  expect_same(run_op(Op::Broadcast, {Array::scalar(2.5)}, {}, {{DType::f64, {2, 2}}}).to_doubles(), {2.5, 2.5, 2.5, 2.5});
}

TEST(InterpMovement, SliceWithStrides) {
  Array x = f64(iota_data(20), {4, 5});
  ir::Attrs a = attrs([](ir::Attrs& s) {
    s.starts = {1, 0};
    s.limits = {4, 5};
    s.strides = {2, 2};
  });
  Array y = run_op(Op::Slice, {x}, a);
  EXPECT_EQ(y.shape(), (Shape{2, 3}));
  expect_same(y.to_doubles(), {5, 7, 9, 15, 17, 19});
  ir::Attrs inner = attrs([](ir::Attrs& s) {
    s.starts = {1, 2};
    s.limits = {3, 4};
    s.strides = {1, 1};
  });
  expect_same(run_op(Op::Slice, {x}, inner).to_doubles(), {7, 8, 12, 13});
}

TEST(InterpMovement, ConcatAlongAnAxis) {
  ir::Region r;
  ValueId a = r.add_param({DType::f64, {2, 1}});
  ValueId b = r.add_param({DType::f64, {2, 2}});
  ValueId e = r.add_param({DType::f64, {2, 0}});
  ValueId c1 = op(r, Op::Concat, {a, e, b}, axes({1}));
  ValueId c0 = op(r, Op::Concat, {b, b}, axes({0}));
  auto out = run(std::move(r), {c1, c0}, {f64({1, 2}, {2, 1}), f64({3, 4, 5, 6}, {2, 2}), f64({}, {2, 0})});
  EXPECT_EQ(out[0].shape(), (Shape{2, 3}));
  expect_same(out[0].to_doubles(), {1, 3, 4, 2, 5, 6}, "axis 1");
  EXPECT_EQ(out[1].shape(), (Shape{4, 2}));
  expect_same(out[1].to_doubles(), {3, 4, 5, 6, 3, 4, 5, 6}, "axis 0");
}

TEST(InterpMovement, GatherIsTakeAlongAxisAndClamps) {
  Array data = f64({10, 11, 12, 20, 21, 22}, {2, 3});
  // Along axis 1: idx -1 clamps to 0, 7 clamps to 2.
  expect_same(run_op(Op::Gather, {data, i32({2, -1, 0, 7}, {2, 2})}, axes({1})).to_doubles(), {12, 10, 20, 22},
              "axis 1");
  Array data3 = f64({1, 2, 3, 4, 5, 6}, {3, 2});
  // Along axis 0: out[0, j] = data3[idx[0, j], j].
  expect_same(run_op(Op::Gather, {data3, i32({2, 0}, {1, 2})}, axes({0})).to_doubles(), {5, 2}, "axis 0");
  expect_same(run_op(Op::Gather, {data3, i32({-100, 100, 1, 1}, {2, 2})}, axes({0})).to_doubles(), {1, 6, 3, 4},
              "axis 0, clamped");
}

TEST(InterpMovement, TakeIsIndexSelectAndClamps) {
  const int64_t A = 2, D = 3, B = 2;
  std::vector<double> x = iota_data(A * D * B);
  std::vector<int32_t> idx{2, 0, -5, 9, 1, 1};  // shape [2, 3]; -5 -> 0, 9 -> 2
  Array y = run_op(Op::Take, {f64(x, {A, D, B}), i32(idx, {2, 3})}, axes({1}));
  ASSERT_EQ(y.shape(), (Shape{A, 2, 3, B}));
  std::vector<double> want;
  for (int64_t a = 0; a < A; ++a)
    for (int32_t i : idx)
      for (int64_t b = 0; b < B; ++b) {
        int64_t d = i < 0 ? 0 : i >= D ? D - 1 : i;
        want.push_back(x[(a * D + d) * B + b]);
      }
  expect_same(y.to_doubles(), want, "take axis 1");
  // A scalar index removes the axis; i32 data.
  Array rows = run_op(Op::Take, {i32({1, 2, 3, 4, 5, 6}, {3, 2}), Array::scalar(int32_t{2})}, axes({0}));
  EXPECT_EQ(rows.shape(), (Shape{2}));
  EXPECT_EQ(rows.to_vector<int32_t>(), (std::vector<int32_t>{5, 6}));
  // Take along the last axis.
  expect_same(run_op(Op::Take, {f64({1, 2, 3, 4, 5, 6}, {2, 3}), i32({2, 2, 0})}, axes({1})).to_doubles(),
              {3, 3, 1, 6, 6, 4}, "last axis");
}

TEST(InterpMovement, ScatterAddSumsInIndexOrderAndClamps) {
  // Rows of [4, 2]: 1 + 3 at row 2, 2 at row 0 (from -1), 5 at row 3 (from 7); row 1 stays 0.
  Array u = f64({1, 10, 2, 20, 3, 30, 5, 50}, {4, 2});
  Array y = run_op(Op::ScatterAdd, {u, i32({2, -1, 2, 7}, {4})}, axes({0}), {TensorType{DType::f64, {4, 2}}});
  expect_same(y.to_doubles(), {2, 20, 0, 0, 4, 40, 5, 50}, "axis 0");
  // Along axis 1, with two-dimensional indices.
  Array v = f64({1, 2, 3, 4, 5, 6, 7, 8}, {2, 2, 2});
  y = run_op(Op::ScatterAdd, {v, i32({1, 1, 0, 1}, {2, 2})}, axes({1}), {TensorType{DType::f64, {2, 3}}});
  expect_same(y.to_doubles(), {3, 7, 0, 7, 19, 0}, "axis 1");
  // f32 sums are rounded after each add, in index order: 1 + 2^-24 + 2^-24 stays 1, while
  // 2^-24 + 2^-24 + 1 would not.
  float tiny = 0x1p-24f;
  y = run_op(Op::ScatterAdd, {f32({1, tiny, tiny}, {3}), i32({0, 0, 0}, {3})}, axes({0}),
             {TensorType{DType::f32, {1}}});
  EXPECT_EQ(y.to_vector<float>(), std::vector<float>{1.0f});
  y = run_op(Op::ScatterAdd, {f32({tiny, tiny, 1}, {3}), i32({0, 0, 0}, {3})}, axes({0}),
             {TensorType{DType::f32, {1}}});
  EXPECT_EQ(y.to_vector<float>(), std::vector<float>{1.0f + 2 * tiny});
}
