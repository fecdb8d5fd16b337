// ShardedDataset: rows read in place from safetensors, IDX and text shards are the rows the
// in-memory readers give, and a Loader over them gives the batches of a Loader over the same
// rows in memory, whatever the read-ahead.
#include <gtest/gtest.h>

#include <fluxion/data.h>
#include <fluxion/safetensors.h>

#include "data/data_test_util.h"
#include "data/safetensors_builder.h"

namespace fx = fluxion;
namespace data = fluxion::data;
using fluxion::testing::FileTest;

namespace {

// Rows r of a [rows, 2, 3] f32 input whose values name the row, and i32 targets 7 * r.
data::Dataset numbered_rows(int64_t first, int64_t rows) {
  std::vector<float> x;
  std::vector<int32_t> y;
  for (int64_t r = first; r < first + rows; ++r) {
    for (int k = 0; k < 6; ++k) x.push_back(static_cast<float>(r) + 0.125f * static_cast<float>(k));
    y.push_back(static_cast<int32_t>(7 * r));
  }
  return {fx::Array(x, {rows, 2, 3}), fx::Array(y, {rows})};
}

data::Dataset concatenated(const std::vector<data::Dataset>& parts) {
  std::vector<float> x;
  std::vector<int32_t> y;
  for (const data::Dataset& d : parts) {
    auto xs = d.inputs.to_vector<float>();
    auto ys = d.targets.to_vector<int32_t>();
    x.insert(x.end(), xs.begin(), xs.end());
    y.insert(y.end(), ys.begin(), ys.end());
  }
  auto n = static_cast<int64_t>(y.size());
  return {fx::Array(x, {n, 2, 3}), fx::Array(y, {n})};
}

void expect_same_batches(const data::Loader& a, const data::Loader& b, const std::vector<int64_t>& order) {
  ASSERT_EQ(a.size(), b.size());
  for (int64_t i : order) {
    auto [xa, ya] = a.batch(i);
    auto [xb, yb] = b.batch(i);
    EXPECT_EQ(xa.shape(), xb.shape()) << "batch " << i;
    EXPECT_EQ(xa.to_doubles(), xb.to_doubles()) << "batch " << i;
    EXPECT_EQ(ya.to_doubles(), yb.to_doubles()) << "batch " << i;
  }
}

// An uncompressed IDX file: type byte, big-endian dimensions, then the elements.
std::string idx_bytes(uint8_t type, const fx::Shape& shape, const std::string& payload) {
  std::string out{'\0', '\0', static_cast<char>(type), static_cast<char>(shape.size())};
  for (int64_t d : shape) {
    for (int shift = 24; shift >= 0; shift -= 8) out += static_cast<char>((d >> shift) & 0xff);
  }
  return out + payload;
}

}  // namespace

class ShardedData : public FileTest {};

TEST_F(ShardedData, SafetensorsShardsReadTheRowsInMemoryHasAndBatchAlike) {
  std::vector<data::Dataset> parts{numbered_rows(0, 5), numbered_rows(5, 1), numbered_rows(6, 7)};
  std::vector<std::string> paths;
  for (size_t k = 0; k < parts.size(); ++k) {
    paths.push_back(path("shard" + std::to_string(k) + ".safetensors"));
    fx::save_safetensors(paths.back(), {{"inputs", parts[k].inputs}, {"targets", parts[k].targets}});
  }
  data::ShardedDataset sharded = data::ShardedDataset::safetensors(paths);
  data::Dataset all = concatenated(parts);
  ASSERT_EQ(sharded.size(), 13);
  EXPECT_EQ(sharded.input_type(), (fx::TensorType{fx::f32, {2, 3}}));
  EXPECT_EQ(sharded.target_type(), (fx::TensorType{fx::i32, {}}));
  std::vector<int64_t> rows{12, 0, 5, 6, 4, 5};  // across every shard boundary, one twice
  data::Dataset read = sharded.rows(rows);
  EXPECT_EQ(read.inputs.shape(), (fx::Shape{6, 2, 3}));
  std::vector<double> expected_targets;
  for (int64_t r : rows) expected_targets.push_back(7.0 * static_cast<double>(r));
  EXPECT_EQ(read.targets.to_doubles(), expected_targets);
  EXPECT_EQ(read.inputs.to_doubles()[4 * 6 + 5], 4.625);  // row 4, element 5

  for (int prefetch : {0, 1, 3}) {
    for (int rank : {0, 1}) {
      data::Loader::Options opt{.batch_size = 4, .seed = 9, .rank = rank, .ranks = 2, .prefetch = prefetch};
      data::Loader streamed(sharded, opt),
          in_memory(all, {.batch_size = 4, .seed = 9, .rank = rank, .ranks = 2, .prefetch = 0});
      for (int64_t epoch : {0, 3}) {
        streamed.set_epoch(epoch);
        in_memory.set_epoch(epoch);
        SCOPED_TRACE("prefetch " + std::to_string(prefetch) + ", rank " + std::to_string(rank) + ", epoch " +
                     std::to_string(epoch));
        expect_same_batches(streamed, in_memory, {0, 1, 2});
        expect_same_batches(streamed, in_memory, {2, 0, 2, 2, 1});  // out of order: read-ahead misses
      }
    }
  }
}

TEST_F(ShardedData, StoredDtypesConvertAsLoadSafetensorsDoes) {
  std::string p = path("bytes.safetensors");
  write_bytes(p, fluxion::testing::SafetensorsBuilder()
                     .add<uint8_t>("inputs", "U8", {3, 2}, {0, 255, 1, 2, 3, 4})
                     .add<int64_t>("targets", "I64", {3}, {5, -6, 7})
                     .bytes());
  data::ShardedDataset sharded = data::ShardedDataset::safetensors({p});
  data::Dataset read = sharded.rows(std::vector<int64_t>{2, 0});
  EXPECT_EQ(read.inputs.dtype(), fx::i32);
  EXPECT_EQ(read.inputs.to_doubles(), (std::vector<double>{3, 4, 0, 255}));
  EXPECT_EQ(read.targets.to_doubles(), (std::vector<double>{7, 5}));
  std::string big = path("big.safetensors");
  write_bytes(big, fluxion::testing::SafetensorsBuilder()
                       .add<float>("inputs", "F32", {2, 1}, {1, 2})
                       .add<int64_t>("targets", "I64", {2}, {1, int64_t{1} << 40})
                       .bytes());
  data::ShardedDataset overflowing = data::ShardedDataset::safetensors({big});
  EXPECT_EQ(overflowing.rows(std::vector<int64_t>{0}).targets.to_doubles(), std::vector<double>{1});
  // The bad value is found when its row is read, named by its place in the whole tensor.
  EXPECT_NE(error_of([&] { overflowing.rows(std::vector<int64_t>{1}); }).find("at element 1, outside i32's range"),
            std::string::npos);
  data::Loader loader(overflowing, {.batch_size = 1, .shuffle = false, .prefetch = 2});
  loader.batch(0);  // reads batch 1 ahead, which fails there
  EXPECT_NE(error_of([&] { loader.batch(1); }).find("outside i32's range"), std::string::npos);
}

TEST_F(ShardedData, IdxShardsReadAsReadIdx) {
  std::vector<std::pair<std::string, std::string>> shards;
  std::string all_images, all_labels;
  for (int k = 0; k < 2; ++k) {
    int64_t rows = k == 0 ? 3 : 2;
    std::string images, labels;
    for (int64_t i = 0; i < rows * 4; ++i) images += static_cast<char>(k * 100 + i * 9);
    for (int64_t i = 0; i < rows; ++i) labels += static_cast<char>(k * 5 + i);
    all_images += images;
    all_labels += labels;
    shards.emplace_back(path("images" + std::to_string(k)), path("labels" + std::to_string(k)));
    write_bytes(shards.back().first, idx_bytes(0x08, {rows, 2, 2}, images));
    write_bytes(shards.back().second, idx_bytes(0x08, {rows}, labels));
  }
  write_bytes(path("all_images"), idx_bytes(0x08, {5, 2, 2}, all_images));
  write_bytes(path("all_labels"), idx_bytes(0x08, {5}, all_labels));
  data::ShardedDataset sharded = data::ShardedDataset::idx(shards);
  data::Dataset whole{data::read_idx(path("all_images")), data::read_idx(path("all_labels"))};
  std::vector<int64_t> every{0, 1, 2, 3, 4};
  data::Dataset read = sharded.rows(every);
  EXPECT_EQ(read.inputs.shape(), whole.inputs.shape());
  EXPECT_EQ(read.inputs.dtype(), whole.inputs.dtype());
  EXPECT_EQ(read.inputs.to_doubles(), whole.inputs.to_doubles());
  EXPECT_EQ(read.targets.to_doubles(), whole.targets.to_doubles());
  expect_same_batches(data::Loader(sharded, {.batch_size = 2, .seed = 4}),
                      data::Loader(whole, {.batch_size = 2, .seed = 4}), {0, 1, 2});
}

TEST_F(ShardedData, TextWindowsAreCharTextSequences) {
  std::string p = path("corpus.txt");
  write_bytes(p, "the quick brown fox jumps over the lazy dog, then naps.\n");
  data::ShardedDataset streamed = data::ShardedDataset::text(p, 8);
  data::CharText text = data::CharText::load(p);
  data::Dataset windows = text.sequences(8);
  EXPECT_EQ(streamed.vocab(), text.vocab());
  ASSERT_EQ(streamed.size(), windows.size());
  std::vector<int64_t> every;
  for (int64_t r = 0; r < streamed.size(); ++r) every.push_back(r);
  data::Dataset read = streamed.rows(every);
  EXPECT_EQ(read.inputs.to_doubles(), windows.inputs.to_doubles());
  EXPECT_EQ(read.targets.to_doubles(), windows.targets.to_doubles());
}

TEST_F(ShardedData, BadShardsAreErrorsNamingTheFile) {
  std::string a = path("a.safetensors"), b = path("b.safetensors");
  data::Dataset rows = numbered_rows(0, 2);
  fx::save_safetensors(a, {{"inputs", rows.inputs}, {"targets", rows.targets}});
  fx::save_safetensors(b, {{"x", rows.inputs}, {"targets", rows.targets}});
  EXPECT_NE(error_of([&] {
              data::ShardedDataset::safetensors({a, b});
            }).find("has no tensor 'inputs' (it has: x, targets)"),
            std::string::npos);
  fx::save_safetensors(b, {{"inputs", fx::Array(std::vector<float>{1, 2}, {2, 1})}, {"targets", rows.targets}});
  std::string mixed = error_of([&] { data::ShardedDataset::safetensors({a, b}); });
  EXPECT_NE(mixed.find("b.safetensors'"), std::string::npos) << mixed;
  EXPECT_NE(mixed.find("the first shard's are f32[2,3]"), std::string::npos) << mixed;
  fx::save_safetensors(b, {{"inputs", rows.inputs}, {"targets", fx::Array(std::vector<int32_t>{1, 2, 3}, {3})}});
  EXPECT_NE(error_of([&] { data::ShardedDataset::safetensors({b}); }).find("expected the same number of rows"),
            std::string::npos);
  EXPECT_NE(error_of([&] { data::ShardedDataset::safetensors({path("missing")}); }).find("cannot open"),
            std::string::npos);
  write_bytes(path("gz"), std::string("\x1f\x8b\x08\x00", 4));
  EXPECT_NE(error_of([&] {
              data::ShardedDataset::idx({{path("gz"), path("gz")}});
            }).find("is gzipped"),
            std::string::npos);
  write_bytes(path("short.txt"), "ab");
  EXPECT_NE(error_of([&] { data::ShardedDataset::text(path("short.txt"), 4); }).find("has no window of 4 + 1"),
            std::string::npos);
  data::ShardedDataset one = data::ShardedDataset::safetensors({a});
  EXPECT_NE(error_of([&] { one.rows(std::vector<int64_t>{2}); }).find("row 2 of a dataset of 2"), std::string::npos);
  EXPECT_NE(error_of([&] { data::Loader(one, {.prefetch = -1}); }).find("prefetch -1"), std::string::npos);
}
