// How the CPU runtime cuts a kernel's outermost dimension between threads: consecutive ranges
// that cover it once, starting at multiples of the kernel's grain (a product's register tile
// of rows) wherever there are enough grains, and for split kernels the same ranges at any
// thread count.
#include <gtest/gtest.h>

#include <fluxion/fluxion.h>

#include <algorithm>
#include <mutex>
#include <utility>
#include <vector>

#include "runtime/cpu/helpers.h"

namespace fx = fluxion;

namespace {

std::mutex seen_mu;
std::vector<std::pair<int64_t, int64_t>> seen;

void record(void**, int64_t begin, int64_t end) {
  std::lock_guard<std::mutex> lock(seen_mu);
  seen.emplace_back(begin, end);
}

// The ranges one call made, in order of where they start.
template <class Call>
std::vector<std::pair<int64_t, int64_t>> ranges_of(int threads, Call call) {
  int before = fx::num_threads();
  fx::set_num_threads(threads);
  seen.clear();
  call();
  fx::set_num_threads(before);
  std::vector<std::pair<int64_t, int64_t>> got = seen;
  std::sort(got.begin(), got.end());
  return got;
}

void expect_cover(const std::vector<std::pair<int64_t, int64_t>>& ranges, int64_t n) {
  ASSERT_FALSE(ranges.empty());
  EXPECT_EQ(ranges.front().first, 0);
  EXPECT_EQ(ranges.back().second, n);
  for (size_t i = 1; i < ranges.size(); ++i) EXPECT_EQ(ranges[i].first, ranges[i - 1].second) << "range " << i;
}

using Ranges = std::vector<std::pair<int64_t, int64_t>>;

}  // namespace

TEST(ThreadRanges, ParallelForStartsEveryRangeAtAMultipleOfTheGrain) {
  void* bufs[1] = {nullptr};
  Ranges got = ranges_of(3, [&] { fx::cpu::parallel_for(record, bufs, 100, 1 << 20, 8); });
  expect_cover(got, 100);
  EXPECT_EQ(got.size(), 3u);
  for (const auto& r : got) EXPECT_EQ(r.first % 8, 0) << r.first;
  // Grain 1: the even cut of before.
  EXPECT_EQ(ranges_of(3, [&] { fx::cpu::parallel_for(record, bufs, 100, 1 << 20, 1); }),
            (Ranges{{0, 33}, {33, 66}, {66, 100}}));
}

TEST(ThreadRanges, ParallelForUsesNoMoreThreadsThanGrains) {
  void* bufs[1] = {nullptr};
  Ranges got = ranges_of(8, [&] { fx::cpu::parallel_for(record, bufs, 20, 1 << 20, 8); });
  expect_cover(got, 20);
  EXPECT_EQ(got, (Ranges{{0, 8}, {8, 16}, {16, 20}}));
}

TEST(ThreadRanges, SplitPartsAreWholeGrainsAndTheSameAtEveryThreadCount) {
  std::vector<void*> parts(5, nullptr);
  Ranges want{{0, 16}, {16, 40}, {40, 56}, {56, 80}, {80, 100}};
  for (int threads : {1, 2, 3, 8}) {
    EXPECT_EQ(ranges_of(threads, [&] { fx::cpu::parallel_parts(record, parts.data(), 1, 100, 5, 8); }), want)
        << threads << " threads";
  }
}

TEST(ThreadRanges, SplitPartsFallBackToSingleItemsWhereGrainsAreTooFew) {
  std::vector<void*> parts(6, nullptr);
  Ranges got = ranges_of(2, [&] { fx::cpu::parallel_parts(record, parts.data(), 1, 20, 6, 8); });
  EXPECT_EQ(got, (Ranges{{0, 3}, {3, 6}, {6, 10}, {10, 13}, {13, 16}, {16, 20}}));
}
