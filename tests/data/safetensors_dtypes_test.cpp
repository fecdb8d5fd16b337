// safetensors dtypes: F16 and BF16 read as f16 and bf16 with their bits kept (special values,
// and all 65,536 F16 values' values against an independent formula), the integer dtypes read
// as i32 with out-of-range values refused, unaligned data, and every Fluxion dtype written and
// read back bit for bit.
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "common/test_names.h"
#include "data/data_test_util.h"
#include "data/safetensors_builder.h"

namespace {

// The element bits of a loaded array (no float operation touches a NaN's payload).
template <class Bits>
std::vector<Bits> bits_of(const Array& a) {
  std::vector<Bits> out(static_cast<size_t>(a.size()));
  if (!out.empty()) std::memcpy(out.data(), a.data(), out.size() * sizeof(Bits));
  return out;
}

}  // namespace

class SafetensorsDtypes : public FileTest {
 protected:
  fx::NamedArrays load(const SafetensorsBuilder& file) {
    write_bytes(path("t.safetensors"), file.bytes());
    return fx::load_safetensors(path("t.safetensors"));
  }
  std::string load_error(const SafetensorsBuilder& file) {
    write_bytes(path("t.safetensors"), file.bytes());
    return error_of([&] { fx::load_safetensors(path("t.safetensors")); });
  }
  // Each 16-bit pattern loaded as `code` must be an array of `dtype` with the same bits, whose
  // value is the f32 beside it (given by its bits; NaNs must be NaNs of the same sign).
  void expect_half(const std::string& code, DType dtype, const std::vector<std::pair<uint16_t, uint32_t>>& cases) {
    std::vector<uint16_t> in;
    for (const auto& c : cases) in.push_back(c.first);
    fx::NamedArrays out = load(SafetensorsBuilder().add("h", code, {static_cast<int64_t>(in.size())}, in));
    ASSERT_EQ(out[0].second.type(), (fx::TensorType{dtype, {static_cast<int64_t>(in.size())}}));
    EXPECT_EQ(bits_of<uint16_t>(out[0].second), in);
    std::vector<double> values = out[0].second.to_doubles();
    for (size_t i = 0; i < cases.size(); ++i) {
      auto want = std::bit_cast<float>(cases[i].second);
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(values[i]) && std::signbit(values[i]) == std::signbit(want)) << code << " " << i;
      } else {
        EXPECT_EQ(std::bit_cast<uint64_t>(values[i]), std::bit_cast<uint64_t>(static_cast<double>(want)))
            << code << " 0x" << std::hex << cases[i].first << " -> " << values[i];
      }
    }
  }
};

TEST_F(SafetensorsDtypes, F16IsReadAsF16WithItsBits) {
  expect_half("F16", fx::f16,
              {
                  {0x0000, 0x00000000},  // +0
                  {0x8000, 0x80000000},  // -0
                  {0x0001, 0x33800000},  // the smallest subnormal, 2^-24
                  {0x8001, 0xb3800000},  // its negative
                  {0x0200, 0x38000000},  // subnormal 2^-15
                  {0x03ff, 0x387fc000},  // the largest subnormal, 1023 * 2^-24
                  {0x0400, 0x38800000},  // the smallest normal, 2^-14
                  {0x3555, 0x3eaaa000},  // 0.333251953125
                  {0x3bff, 0x3f7fe000},  // the largest below 1
                  {0x3c00, 0x3f800000},  // 1
                  {0x3c01, 0x3f802000},  // 1 + 2^-10
                  {0xc000, 0xc0000000},  // -2
                  {0x7bff, 0x477fe000},  // 65504, the largest
                  {0xfbff, 0xc77fe000},  // -65504
                  {0x7c00, 0x7f800000},  // +infinity
                  {0xfc00, 0xff800000},  // -infinity
                  {0x7e00, 0x7fc00000},  // quiet NaN
                  {0xfe00, 0xffc00000},  // negative quiet NaN
                  {0x7c01, 0x7f802000},  // signalling NaN
              });
}

TEST_F(SafetensorsDtypes, BF16IsReadAsBF16WithItsBits) {
  expect_half("BF16", fx::bf16,
              {
                  {0x0000, 0x00000000},  // +0
                  {0x8000, 0x80000000},  // -0
                  {0x0001, 0x00010000},  // the smallest subnormal
                  {0x007f, 0x007f0000},  // the largest subnormal
                  {0x0080, 0x00800000},  // the smallest normal, 2^-126
                  {0x3eab, 0x3eab0000},  // 0.333984375
                  {0x3f80, 0x3f800000},  // 1
                  {0xc000, 0xc0000000},  // -2
                  {0x7f7f, 0x7f7f0000},  // the largest finite
                  {0x7f80, 0x7f800000},  // +infinity
                  {0xff80, 0xff800000},  // -infinity
                  {0x7fc0, 0x7fc00000},  // quiet NaN
                  {0xffc1, 0xffc10000},  // negative NaN with a payload
              });
}

TEST_F(SafetensorsDtypes, EveryF16ValueEqualsItsValueComputedInDouble) {
  std::vector<uint16_t> all(65536);
  for (size_t h = 0; h < all.size(); ++h) all[h] = static_cast<uint16_t>(h);
  fx::NamedArrays out = load(SafetensorsBuilder().add("all", "F16", {65536}, all));
  std::vector<double> got = out[0].second.to_doubles();
  int wrong = 0;
  for (uint32_t h = 0; h < 65536; ++h) {
    int exponent = static_cast<int>((h >> 10) & 31), mantissa = static_cast<int>(h & 1023);
    if (exponent == 31 && mantissa != 0) {
      wrong += !std::isnan(got[h]) || std::signbit(got[h]) != ((h & 0x8000u) != 0);
      continue;
    }
    double v = exponent == 31  ? std::numeric_limits<double>::infinity()
               : exponent == 0 ? std::ldexp(mantissa, -24)
                               : std::ldexp(1024 + mantissa, exponent - 25);
    double want = (h & 0x8000u) ? -v : v;
    if (std::bit_cast<uint64_t>(want) != std::bit_cast<uint64_t>(got[h])) {
      if (++wrong < 10) ADD_FAILURE() << "F16 0x" << std::hex << h << " -> " << got[h] << ", expected " << want;
    }
  }
  EXPECT_EQ(wrong, 0);
}

TEST_F(SafetensorsDtypes, IntegersBecomeI32Exactly) {
  constexpr int32_t lo = std::numeric_limits<int32_t>::min(), hi = std::numeric_limits<int32_t>::max();
  fx::NamedArrays out = load(SafetensorsBuilder()
                                 .add("i64", "I64", {5}, std::vector<int64_t>{0, -1, lo, hi, 42})
                                 .add("u64", "U64", {2}, std::vector<uint64_t>{0, static_cast<uint64_t>(hi)})
                                 .add("u32", "U32", {2}, std::vector<uint32_t>{7, static_cast<uint32_t>(hi)})
                                 .add("i16", "I16", {3}, std::vector<int16_t>{-32768, 32767, -2})
                                 .add("u16", "U16", {2}, std::vector<uint16_t>{0, 65535})
                                 .add("i8", "I8", {2}, std::vector<int8_t>{-128, 127})
                                 .add("u8", "U8", {2, 1}, std::vector<uint8_t>{0, 255})
                                 .add("b", "BOOL", {4}, std::vector<uint8_t>{0, 1, 2, 255}));
  std::vector<std::vector<int32_t>> want{{0, -1, lo, hi, 42}, {0, hi},     {7, hi}, {-32768, 32767, -2},
                                         {0, 65535},          {-128, 127}, {0, 255}};
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(out[i].second.dtype(), fx::i32) << out[i].first;
    EXPECT_EQ(out[i].second.to_vector<int32_t>(), want[i]) << out[i].first;
  }
  EXPECT_EQ(out[6].second.shape(), (Shape{2, 1}));
  EXPECT_EQ(out[7].second.dtype(), fx::boolean);
  EXPECT_EQ(bits_of<uint8_t>(out[7].second), (std::vector<uint8_t>{0, 1, 1, 1}));  // any nonzero byte is true
}

TEST_F(SafetensorsDtypes, IntegersOutsideI32AreErrorsNamingTheTensorAndTheValue) {
  auto expect = [&](const SafetensorsBuilder& file, const std::vector<std::string>& parts) {
    std::string m = load_error(file);
    for (const std::string& part : parts)
      EXPECT_NE(m.find(part), std::string::npos) << "want '" << part << "' in: " << m;
  };
  expect(SafetensorsBuilder().add("ids", "I64", {3}, std::vector<int64_t>{1, 2, 2147483648LL}),
         {"t.safetensors", "'ids'", "2147483648 at element 2", "I64 as i32"});
  expect(SafetensorsBuilder().add("ids", "I64", {1}, std::vector<int64_t>{std::numeric_limits<int64_t>::min()}),
         {"-9223372036854775808 at element 0"});
  expect(SafetensorsBuilder().add("n", "U64", {1}, std::vector<uint64_t>{std::numeric_limits<uint64_t>::max()}),
         {"'n'", "18446744073709551615", "U64 as i32"});
  expect(SafetensorsBuilder().add("u", "U32", {2}, std::vector<uint32_t>{0, 2147483648u}),
         {"'u'", "2147483648 at element 1", "U32 as i32"});
}

TEST_F(SafetensorsDtypes, UnalignedDataAndMixedDtypesInOneFile) {
  // A one-byte tensor first puts every later tensor at an odd offset.
  fx::NamedArrays out = load(SafetensorsBuilder()
                                 .add("flag", "U8", {1}, std::vector<uint8_t>{3})
                                 .add("half", "F16", {2}, std::vector<uint16_t>{0x3c00, 0xc100})
                                 .add("brain", "BF16", {1, 2}, std::vector<uint16_t>{0x4049, 0xbf80})
                                 .add("ids", "I64", {2}, std::vector<int64_t>{-5, 1 << 30})
                                 .add("none", "F16", {0, 4}, std::vector<uint16_t>{}));
  ASSERT_EQ(out.size(), 5u);
  EXPECT_EQ(out[0].second.to_vector<int32_t>(), (std::vector<int32_t>{3}));
  EXPECT_EQ(out[1].second.to_doubles(), (std::vector<double>{1.0, -2.5}));
  EXPECT_EQ(out[2].second.type(), (fx::TensorType{fx::bf16, {1, 2}}));
  EXPECT_EQ(out[2].second.to_doubles(), (std::vector<double>{3.140625, -1.0}));
  EXPECT_EQ(out[3].second.to_vector<int32_t>(), (std::vector<int32_t>{-5, 1 << 30}));
  EXPECT_EQ(out[4].second.type(), (fx::TensorType{fx::f16, {0, 4}}));
  // A wrong byte count is judged by the file's dtype.
  std::string m = load_error(SafetensorsBuilder().add("h", "F16", {3}, std::vector<uint32_t>{1, 2, 3}));
  EXPECT_NE(m.find("needs 6 bytes"), std::string::npos) << m;
}

TEST_F(SafetensorsDtypes, EveryFluxionDtypeIsWrittenAsItselfAndReadBackBitForBit) {
  auto with_bits = [](DType dtype, const auto& values) {
    Array a(dtype, {static_cast<int64_t>(values.size())});
    std::memcpy(a.mutable_data(), values.data(), values.size() * sizeof(values[0]));
    return a;
  };
  using f = std::numeric_limits<float>;
  using d = std::numeric_limits<double>;
  fx::NamedArrays in{
      {"f32", with_bits(fx::f32, std::vector<uint32_t>{std::bit_cast<uint32_t>(-0.0f), 0x7fc12345u, 0x7f800001u,
                                                       std::bit_cast<uint32_t>(f::infinity()),
                                                       std::bit_cast<uint32_t>(f::denorm_min()),
                                                       std::bit_cast<uint32_t>(f::lowest())})},
      {"f64", with_bits(fx::f64, std::vector<uint64_t>{std::bit_cast<uint64_t>(-0.0), 0x7ff8000000abcdefULL,
                                                       std::bit_cast<uint64_t>(-d::infinity()),
                                                       std::bit_cast<uint64_t>(d::denorm_min()),
                                                       std::bit_cast<uint64_t>(d::max())})},
      {"i32", with_bits(fx::i32, std::vector<int32_t>{std::numeric_limits<int32_t>::min(), -1, 0,
                                                      std::numeric_limits<int32_t>::max()})},
      {"bool", Array(std::vector<bool>{true, false, false, true}, {2, 2})},
      {"f16", with_bits(fx::f16, std::vector<uint16_t>{0x8000, 0x0001, 0x7bff, 0xfc00, 0x7e01})},
      {"bf16", with_bits(fx::bf16, std::vector<uint16_t>{0x8000, 0x0001, 0x7f7f, 0xff80, 0x7fc1})},
  };
  fx::save_safetensors(path("all.safetensors"), in);
  std::string header = read_bytes(path("all.safetensors"));
  for (const char* code : {R"("dtype":"F32")", R"("dtype":"F64")", R"("dtype":"I32")", R"("dtype":"BOOL")",
                           R"("dtype":"F16")", R"("dtype":"BF16")"})
    EXPECT_NE(header.find(code), std::string::npos) << code;
  fx::NamedArrays out = fx::load_safetensors(path("all.safetensors"));
  ASSERT_EQ(out.size(), in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    const Array &a = in[i].second, &b = out[i].second;
    EXPECT_EQ(b.type(), a.type()) << in[i].first;
    EXPECT_EQ(std::memcmp(a.data(), b.data(), static_cast<size_t>(a.size() * fx::dtype_size(a.dtype()))), 0)
        << in[i].first;
  }
}
