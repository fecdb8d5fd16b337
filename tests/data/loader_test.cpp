// Seeded permutations, batching, subsets and the character dataset.
#include <numeric>
#include <set>

#include "common/test_names.h"
#include "data/data_test_util.h"

namespace {

fx::data::Dataset numbered(int64_t n) {
  std::vector<float> x;
  std::vector<int32_t> y;
  for (int64_t i = 0; i < n; ++i) {
    x.push_back(static_cast<float>(i));
    x.push_back(static_cast<float>(-i));
    y.push_back(static_cast<int32_t>(i));
  }
  return {Array(x, {n, 2}), Array(y, {n})};
}

}  // namespace

TEST(Permutation, IsASeededPermutation) {
  std::vector<int64_t> p = fx::data::permutation(1000, 5, 0);
  std::vector<int64_t> sorted = p;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> iota(1000);
  std::iota(iota.begin(), iota.end(), 0);
  EXPECT_EQ(sorted, iota);
  EXPECT_EQ(p, fx::data::permutation(1000, 5, 0));
  EXPECT_NE(p, fx::data::permutation(1000, 6, 0));
  EXPECT_NE(p, fx::data::permutation(1000, 5, 1));
  EXPECT_NE(p, iota);
  // Fixed values: the order must not change with the platform or the standard library.
  EXPECT_EQ(fx::data::permutation(6, 0, 0), (std::vector<int64_t>{1, 4, 2, 5, 0, 3}));
  EXPECT_EQ(fx::data::permutation(6, 7, 3), (std::vector<int64_t>{5, 2, 4, 0, 1, 3}));
  EXPECT_TRUE(fx::data::permutation(0, 1).empty());
}

TEST(Loader, CoversEveryRowOncePerEpochWithRowsKeptTogether) {
  fx::data::Loader loader(numbered(10), {.batch_size = 4, .shuffle = true, .seed = 3});
  ASSERT_EQ(loader.size(), 3);
  std::set<int32_t> seen;
  std::vector<int32_t> order0;
  for (int64_t b = 0; b < 3; ++b) {
    auto [x, y] = loader.batch(b);
    EXPECT_EQ(y.shape()[0], b < 2 ? 4 : 2);
    std::vector<float> xv = x.to_vector<float>();
    std::vector<int32_t> yv = y.to_vector<int32_t>();
    for (size_t i = 0; i < yv.size(); ++i) {
      EXPECT_EQ(xv[2 * i], static_cast<float>(yv[i]));  // inputs and targets stay paired
      EXPECT_EQ(xv[2 * i + 1], -static_cast<float>(yv[i]));
      seen.insert(yv[i]);
      order0.push_back(yv[i]);
    }
  }
  EXPECT_EQ(seen.size(), 10u);
  loader.set_epoch(1);
  std::vector<int32_t> order1;
  for (int64_t b = 0; b < 3; ++b)
    for (int32_t v : loader.batch(b).second.to_vector<int32_t>()) order1.push_back(v);
  EXPECT_NE(order0, order1);
  EXPECT_THROW(loader.batch(3), fx::Error);
}

TEST(Loader, InOrderAndDropLast) {
  fx::data::Loader loader(numbered(10), {.batch_size = 4, .shuffle = false, .drop_last = true});
  EXPECT_EQ(loader.size(), 2);
  EXPECT_EQ(loader.batch(1).second.to_vector<int32_t>(), (std::vector<int32_t>{4, 5, 6, 7}));
  EXPECT_THROW(fx::data::Loader(numbered(3), {.batch_size = 0}), fx::Error);
  fx::data::Dataset mismatched{Array(fx::f32, {3, 2}), Array(fx::i32, {4})};
  EXPECT_THROW(fx::data::Loader(mismatched, {}), fx::Error);
}

TEST(Subset, CopiesRowsAndChecksTheRange) {
  fx::data::Dataset s = fx::data::subset(numbered(10), 3, 6);
  EXPECT_EQ(s.targets.to_vector<int32_t>(), (std::vector<int32_t>{3, 4, 5}));
  EXPECT_EQ(s.inputs.shape(), (fx::Shape{3, 2}));
  EXPECT_THROW(fx::data::subset(numbered(10), 5, 11), fx::Error);
  fx::data::Dataset short_targets{Array(fx::f32, {10, 3}), Array(fx::i32, {5})};
  EXPECT_THROW(fx::data::subset(short_targets, 0, 10), fx::Error);
  fx::data::Dataset scalar_targets{Array(fx::f32, {10, 3}), Array::scalar(1)};
  EXPECT_THROW(fx::data::subset(scalar_targets, 0, 1), fx::Error);
  // A batch larger than the dataset is one batch (no overflow for a huge batch size).
  EXPECT_EQ(fx::data::Loader(numbered(10), {.batch_size = INT64_MAX}).size(), 1);
}

class CharTextFiles : public FileTest {};

TEST_F(CharTextFiles, VocabularyEncodingAndWindows) {
  fx::data::CharText t = fx::data::CharText::from_string("abcabd");
  EXPECT_EQ(t.vocab(), "abcd");
  EXPECT_EQ(t.encode("dab"), (std::vector<int32_t>{3, 0, 1}));
  std::vector<int32_t> ids{2, 0};
  EXPECT_EQ(t.decode(ids), "ca");
  EXPECT_THROW(t.encode("z"), fx::Error);
  std::vector<int32_t> bad{9};
  EXPECT_THROW(t.decode(bad), fx::Error);
  fx::data::Dataset s = t.sequences(2);  // "ab" -> "bc", "ca" -> "ab"
  EXPECT_EQ(s.inputs.to_vector<int32_t>(), (std::vector<int32_t>{0, 1, 2, 0}));
  EXPECT_EQ(s.targets.to_vector<int32_t>(), (std::vector<int32_t>{1, 2, 0, 1}));
  EXPECT_THROW(t.sequences(6), fx::Error);
  write_bytes(path("text"), "hello world");
  EXPECT_EQ(fx::data::CharText::load(path("text")).length(), 11);
  EXPECT_NE(error_of([&] { fx::data::CharText::load(path("none")); }).find(path("none")), std::string::npos);
  write_bytes(path("one"), "x");
  EXPECT_THROW(fx::data::CharText::load(path("one")), fx::Error);
}
