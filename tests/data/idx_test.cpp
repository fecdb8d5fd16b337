// The IDX reader on files the test writes (raw and gzipped, every element type), on damaged
// files (truncated, wrong magic, trailing bytes, corrupt gzip), and Fashion-MNIST itself.
#include <zlib.h>

#include "common/test_names.h"
#include "data/data_test_util.h"

namespace {

std::string be32(uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8), static_cast<char>(v)};
}

std::string header(uint8_t type, std::vector<uint32_t> dims) {
  std::string s{0, 0, static_cast<char>(type), static_cast<char>(dims.size())};
  for (uint32_t d : dims) s += be32(d);
  return s;
}

void write_gzip(const std::string& path, const std::string& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())), static_cast<int>(bytes.size()));
  gzclose(f);
}

}  // namespace

class Idx : public FileTest {};

TEST_F(Idx, ReadsUnsignedBytesRawAndGzipped) {
  std::string file = header(0x08, {2, 3}) + std::string{1, 2, 3, 4, 5, static_cast<char>(255)};
  write_bytes(path("raw.idx"), file);
  write_gzip(path("z.idx.gz"), file);
  for (const char* name : {"raw.idx", "z.idx.gz"}) {
    Array a = fx::data::read_idx(path(name));
    EXPECT_EQ(a.dtype(), fx::i32);
    EXPECT_EQ(a.shape(), (fx::Shape{2, 3}));
    EXPECT_EQ(a.to_vector<int32_t>(), (std::vector<int32_t>{1, 2, 3, 4, 5, 255}));
  }
}

TEST_F(Idx, ReadsSignedShortIntFloatAndDouble) {
  write_bytes(path("i8"), header(0x09, {2}) + std::string{static_cast<char>(-3), 7});
  EXPECT_EQ(fx::data::read_idx(path("i8")).to_vector<int32_t>(), (std::vector<int32_t>{-3, 7}));
  write_bytes(path("i16"), header(0x0B, {1}) + std::string{static_cast<char>(0xFF), static_cast<char>(0xFE)});
  EXPECT_EQ(fx::data::read_idx(path("i16")).to_vector<int32_t>(), (std::vector<int32_t>{-2}));
  write_bytes(path("i32"), header(0x0C, {1}) + be32(0x01020304));
  EXPECT_EQ(fx::data::read_idx(path("i32")).to_vector<int32_t>(), (std::vector<int32_t>{0x01020304}));
  write_bytes(path("f32"), header(0x0D, {1}) + be32(0x3FC00000));  // 1.5f
  EXPECT_EQ(fx::data::read_idx(path("f32")).to_vector<float>(), (std::vector<float>{1.5f}));
  write_bytes(path("f64"), header(0x0E, {}) + be32(0xC0040000) + be32(0));  // -2.5, a scalar
  Array d = fx::data::read_idx(path("f64"));
  EXPECT_EQ(d.shape(), fx::Shape{});
  EXPECT_EQ(d.to_vector<double>(), (std::vector<double>{-2.5}));
}

TEST_F(Idx, DamagedFilesNameTheFileAndTheProblem) {
  auto msg = [&](const std::string& name) { return error_of([&] { fx::data::read_idx(path(name)); }); };
  EXPECT_NE(msg("missing").find("no such file"), std::string::npos);
  write_bytes(path("short"), header(0x08, {10}) + "abc");
  std::string m = msg("short");
  EXPECT_NE(m.find(path("short")), std::string::npos) << m;
  EXPECT_NE(m.find("truncated"), std::string::npos) << m;
  write_bytes(path("magic"), std::string{1, 2, 3, 4} + "data");
  EXPECT_NE(msg("magic").find("bad magic number 01 02 03 04"), std::string::npos) << msg("magic");
  write_bytes(path("type"), header(0x0A, {1}) + "x");
  EXPECT_NE(msg("type").find("bad magic"), std::string::npos);
  write_bytes(path("trailing"), header(0x08, {2}) + "abc");
  EXPECT_NE(msg("trailing").find("1 unexpected bytes"), std::string::npos) << msg("trailing");
  write_bytes(path("header"), std::string{0, 0, 8, 3, 0, 0});
  EXPECT_NE(msg("header").find("truncated inside the header"), std::string::npos) << msg("header");
  write_bytes(path("huge"), header(0x08, {0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF}));
  EXPECT_NE(msg("huge").find("need more data"), std::string::npos) << msg("huge");
  // A gzip stream cut in half, and one with a damaged body.
  std::string big = header(0x08, {4000});
  for (int i = 0; i < 4000; ++i) big += static_cast<char>(i * 7919 % 251);
  write_gzip(path("full.gz"), big);
  std::string z = read_bytes(path("full.gz"));
  write_bytes(path("cut.gz"), z.substr(0, z.size() / 2));
  EXPECT_NE(msg("cut.gz").find("truncated"), std::string::npos) << msg("cut.gz");
  std::string bad = z;
  for (size_t i = 20; i < 40 && i < bad.size(); ++i) bad[i] = static_cast<char>(bad[i] ^ 0x5A);
  write_bytes(path("bad.gz"), bad);
  EXPECT_FALSE(msg("bad.gz").empty());
}

TEST(FashionMnist, LoadsBothSplits) {
  fx::data::Dataset test = fx::data::fashion_mnist("test");
  EXPECT_EQ(test.inputs.shape(), (fx::Shape{10000, 1, 28, 28}));
  EXPECT_EQ(test.targets.shape(), (fx::Shape{10000}));
  std::vector<float> x = test.inputs.to_vector<float>();
  float lo = *std::min_element(x.begin(), x.end()), hi = *std::max_element(x.begin(), x.end());
  EXPECT_EQ(lo, 0.0f);
  EXPECT_EQ(hi, 1.0f);
  std::vector<int> per_class(10);
  for (int32_t y : test.targets.to_vector<int32_t>()) ++per_class.at(static_cast<size_t>(y));
  for (int n : per_class) EXPECT_EQ(n, 1000);  // the test set is balanced
  EXPECT_EQ(fx::data::fashion_mnist("train").size(), 60000);
  EXPECT_THROW(fx::data::fashion_mnist("validation"), fx::Error);
  EXPECT_THROW(fx::data::fashion_mnist("train", "/nonexistent"), fx::Error);
}
