// The host collectives of fluxion/distributed.h on whatever number of ranks mpirun started
// (1, 2 and 4 in the suite): each result against the same computation done by one process
// from every rank's inputs, reductions bit for bit (they add in rank order), the same bits on
// every rank, and clear Errors, raised on every rank, for inputs the ranks disagree on.
#include <gtest/gtest.h>

#include <fluxion/distributed.h>
#include <fluxion/error.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "common/test_util.h"

namespace fx = fluxion;
namespace dist = fluxion::distributed;
using fx::Array;

namespace {

// Rank r's input: values whose sums depend on the order of the additions.
Array input(fx::DType t, const fx::Shape& shape, int r) {
  std::vector<double> v(static_cast<size_t>(fx::numel(shape)));
  for (size_t i = 0; i < v.size(); ++i) {
    double x = 1.0 / (3.0 + static_cast<double>(i) + 7.0 * r) * (r % 2 ? -1e3 : 1e-3) + static_cast<double>(i % 5);
    v[i] = t == fx::i32 ? static_cast<double>((static_cast<int64_t>(i) * 7919 + r * 104729) % 2000003 - 1000001) : x;
  }
  return fx::testing::make(t, v, shape);
}

// The reduction of every rank's input computed here, adding in rank order in dtype t.
template <class T>
std::vector<T> reduced(fx::DType t, const fx::Shape& shape, fx::ReduceOp op, int ranks) {
  std::vector<T> acc = input(t, shape, 0).to_vector<T>();
  for (int r = 1; r < ranks; ++r) {
    std::vector<T> x = input(t, shape, r).to_vector<T>();
    for (size_t i = 0; i < acc.size(); ++i) {
      if (op == fx::ReduceOp::Max) acc[i] = std::max(acc[i], x[i]);
      else if (op == fx::ReduceOp::Min) acc[i] = std::min(acc[i], x[i]);
      else if constexpr (std::is_integral_v<T>)
        acc[i] = static_cast<T>(static_cast<uint32_t>(acc[i]) + static_cast<uint32_t>(x[i]));
      else acc[i] = acc[i] + x[i];
    }
  }
  if (op == fx::ReduceOp::Mean) {
    if constexpr (!std::is_integral_v<T>)
      for (T& a : acc) a = a / static_cast<T>(ranks);
  }
  return acc;
}

// The bits of x, as an unsigned integer of its size.
template <class T>
auto bits(T x) {
  if constexpr (sizeof(T) == 8) {
    return std::bit_cast<uint64_t>(x);
  } else {
    return std::bit_cast<uint32_t>(x);
  }
}

template <class T>
void expect_bits(const std::vector<T>& got, const std::vector<T>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_EQ(bits(got[i]), bits(want[i])) << "element " << i << ": " << got[i] << " != " << want[i];
}

// Every rank holds the same bytes in x.
void expect_same_on_every_rank(const Array& x) {
  Array all = dist::all_gather(x);
  const char* bytes = static_cast<const char*>(all.data());
  size_t n = static_cast<size_t>(x.size() * fx::dtype_size(x.dtype()));
  for (int r = 1; r < dist::size(); ++r)
    ASSERT_EQ(std::memcmp(bytes, bytes + n * static_cast<size_t>(r), n), 0) << "rank " << r << " differs from rank 0";
}

template <class T>
void check_all_reduce(fx::DType t, fx::ReduceOp op) {
  for (const fx::Shape& shape : {fx::Shape{}, fx::Shape{7}, fx::Shape{3, 333}}) {
    SCOPED_TRACE(std::string(fx::dtype_name(t)) + " " + std::string(fx::reduce_op_name(op)) + " " +
                 fx::shape_str(shape));
    Array x = input(t, shape, dist::rank());
    dist::all_reduce(x, op);
    expect_bits(x.to_vector<T>(), reduced<T>(t, shape, op, dist::size()));
    expect_same_on_every_rank(x);
  }
}

}  // namespace

TEST(Distributed, TheJobHasTheRanksTheLauncherStarted) {
  const char* launched = std::getenv("OMPI_COMM_WORLD_SIZE");
  EXPECT_EQ(dist::size(), launched ? std::atoi(launched) : 1);
  EXPECT_GE(dist::rank(), 0);
  EXPECT_LT(dist::rank(), dist::size());
  EXPECT_EQ(dist::engine(), "mpi");
  EXPECT_TRUE(dist::initialized());
  dist::barrier();
}

TEST(Distributed, AllReduceAddsInRankOrder) {
  for (fx::ReduceOp op : {fx::ReduceOp::Sum, fx::ReduceOp::Mean, fx::ReduceOp::Max, fx::ReduceOp::Min}) {
    check_all_reduce<float>(fx::f32, op);
    check_all_reduce<double>(fx::f64, op);
    if (op != fx::ReduceOp::Mean) check_all_reduce<int32_t>(fx::i32, op);
  }
}

TEST(Distributed, AllGatherStacksInRankOrder) {
  Array x = input(fx::f64, {2, 5}, dist::rank());
  Array all = dist::all_gather(x);
  ASSERT_EQ(all.shape(), (fx::Shape{dist::size(), 2, 5}));
  std::vector<double> got = all.to_vector<double>();
  for (int r = 0; r < dist::size(); ++r) {
    std::vector<double> want = input(fx::f64, {2, 5}, r).to_vector<double>();
    expect_bits(std::vector<double>(got.begin() + r * 10, got.begin() + (r + 1) * 10), want);
  }
}

TEST(Distributed, BroadcastCopiesTheRootsArray) {
  int root = dist::size() - 1;
  Array x = input(fx::f32, {4, 3}, dist::rank());
  dist::broadcast(x, root);
  expect_bits(x.to_vector<float>(), input(fx::f32, {4, 3}, root).to_vector<float>());
}

TEST(Distributed, ReduceScatterGivesEachRankItsPartOfTheSum) {
  int n = dist::size();
  fx::Shape shape{3 * n, 2};
  Array part = dist::reduce_scatter(input(fx::f32, shape, dist::rank()), fx::ReduceOp::Sum);
  ASSERT_EQ(part.shape(), (fx::Shape{3, 2}));
  std::vector<float> whole = reduced<float>(fx::f32, shape, fx::ReduceOp::Sum, n);
  auto from = whole.begin() + 6 * dist::rank();
  expect_bits(part.to_vector<float>(), std::vector<float>(from, from + 6));
}

TEST(Distributed, InputsTheRanksDisagreeOnAreAnErrorOnEveryRank) {
  // Rank 1 (when there is one) passes another shape: every rank raises, none hangs.
  Array x = input(fx::f32, {dist::rank() == 1 ? 4 : 3}, dist::rank());
  if (dist::size() > 1) {
    EXPECT_THROW(dist::all_reduce(x), fx::Error);
  } else {
    EXPECT_NO_THROW(dist::all_reduce(x));
  }
  Array ints = input(fx::i32, {4}, 0);
  try {
    dist::all_reduce(ints, fx::ReduceOp::Mean);
    ADD_FAILURE() << "the mean of i32 values did not raise";
  } catch (const fx::Error& e) {
    EXPECT_NE(std::string(e.what()).find("mean of i32"), std::string::npos) << e.what();
  }
  if (dist::size() > 1) {
    EXPECT_THROW(dist::reduce_scatter(input(fx::f32, {dist::size() + 1}, 0)), fx::Error);
  }
  Array y = input(fx::f32, {2}, 0);
  EXPECT_THROW(dist::broadcast(y, dist::size()), fx::Error);
  dist::barrier();  // everyone is still in step
}
