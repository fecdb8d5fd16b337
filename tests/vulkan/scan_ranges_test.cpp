// How a scan run as a loop kernel is split into dispatches (backends/vulkan/recorder.h). Every
// device but lavapipe has no cap on loop iterations, so the uncapped cases are the ones that
// GPUs take and no lavapipe run reaches: a scan of no steps once recorded dispatches forever
// there.
#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "backends/vulkan/recorder.h"

namespace {

using Ranges = std::vector<std::pair<int64_t, int64_t>>;
using fluxion::vulkan::scan_step_ranges;

TEST(ScanStepRanges, WithoutACapAScanIsOneDispatch) {
  EXPECT_EQ(scan_step_ranges(0, 0, 3), (Ranges{{0, 0}}));
  EXPECT_EQ(scan_step_ranges(1, 0, 3), (Ranges{{0, 1}}));
  EXPECT_EQ(scan_step_ranges(8000, 0, 40), (Ranges{{0, 8000}}));
}

TEST(ScanStepRanges, UnderACapTheStepsAreSplitIntoConsecutiveRanges) {
  EXPECT_EQ(scan_step_ranges(0, 60000, 7), (Ranges{{0, 0}}));
  EXPECT_EQ(scan_step_ranges(10, 60000, 7), (Ranges{{0, 10}}));
  EXPECT_EQ(scan_step_ranges(10, 12, 4), (Ranges{{0, 3}, {3, 6}, {6, 9}, {9, 10}}));
  EXPECT_EQ(scan_step_ranges(9, 12, 4), (Ranges{{0, 3}, {3, 6}, {6, 9}}));
  // A step that needs more iterations than the cap still advances one step per dispatch.
  EXPECT_EQ(scan_step_ranges(3, 10, 50), (Ranges{{0, 1}, {1, 2}, {2, 3}}));
}

}  // namespace
