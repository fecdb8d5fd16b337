// safetensors: round trips of every dtype, a file laid out as the format specifies, damaged
// files, and saves that fail midway leaving the previous file intact.
#include <cstring>

#include "common/test_names.h"
#include "data/data_test_util.h"
#include "support/files.h"

class Safetensors : public FileTest {
 protected:
  // A valid file of one f32 [2] tensor "w" (values 1, 2) with `header` replaced when given.
  std::string file_with(const std::string& header, const std::string& data = std::string("\0\0\x80?\0\0\0@", 8)) {
    uint64_t n = header.size();
    std::string s(8, '\0');
    std::memcpy(s.data(), &n, 8);
    return s + header + data;
  }
  std::string load_error(const std::string& bytes) {
    write_bytes(path("bad.safetensors"), bytes);
    return error_of([&] { fx::load_safetensors(path("bad.safetensors")); });
  }
};

TEST_F(Safetensors, RoundTripsEveryDtypeAndMetadata) {
  fx::NamedArrays in{{"w", Array(std::vector<float>{1.5f, -2, 3, 4}, {2, 2})},
                     {"d", Array(std::vector<double>{1e-300, 2}, {2})},
                     {"i", Array(std::vector<int32_t>{-7}, {})},
                     {"b", Array(std::vector<bool>{true, false, true}, {3})},
                     {"empty", Array(fx::f32, {0, 3})}};
  fx::save_safetensors(path("a.safetensors"), in, {{"format", "fluxion"}, {"note", "quote \" and \\ and \n"}});
  std::map<std::string, std::string> meta;
  fx::NamedArrays out = fx::load_safetensors(path("a.safetensors"), &meta);
  ASSERT_EQ(out.size(), in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    EXPECT_EQ(out[i].first, in[i].first);
    EXPECT_EQ(out[i].second.type(), in[i].second.type());
    EXPECT_EQ(out[i].second.to_doubles(), in[i].second.to_doubles()) << in[i].first;
  }
  EXPECT_EQ(meta["note"], "quote \" and \\ and \n");
}

TEST_F(Safetensors, FileLayoutFollowsTheFormat) {
  fx::save_safetensors(path("w.safetensors"), {{"w", Array(std::vector<float>{1, 2}, {2})}});
  std::string bytes = read_bytes(path("w.safetensors"));
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  EXPECT_EQ((8 + n) % 8, 0u);  // data 8-byte aligned
  std::string header = bytes.substr(8, n);
  EXPECT_EQ(header.substr(0, header.find_last_not_of(' ') + 1),
            R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})");
  EXPECT_EQ(bytes.substr(8 + n), std::string("\0\0\x80?\0\0\0@", 8));
  // And a file written by another tool, with whitespace and metadata first, reads back.
  write_bytes(
      path("other.safetensors"),
      file_with(R"( { "__metadata__" : {"a":"b"}, "w" : {"dtype":"F32", "shape":[2], "data_offsets":[0, 8]} } )"));
  EXPECT_EQ(fx::load_safetensors(path("other.safetensors"))[0].second.to_vector<float>(), (std::vector<float>{1, 2}));
}

TEST_F(Safetensors, DamagedFilesRaiseErrorsNamingTheProblem) {
  auto expect = [&](const std::string& bytes, const std::string& part) {
    std::string m = load_error(bytes);
    EXPECT_NE(m.find(part), std::string::npos) << "want '" << part << "' in: " << m;
    EXPECT_NE(m.find("bad.safetensors"), std::string::npos) << m;
  };
  const std::string ok = R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  expect("", "truncated");
  expect(std::string("\xff\xff\xff\xff\0\0\0\0", 8), "header length");
  expect(file_with(ok).substr(0, file_with(ok).size() - 3), "truncated");
  expect(file_with(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})"), "malformed JSON");
  expect(file_with(R"({"w":{"dtype":"F8_E4M3","shape":[8],"data_offsets":[0,8]}})"), "F8_E4M3");
  expect(file_with(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})"), "needs 12 bytes");
  expect(file_with(R"({"w":{"dtype":"F32","shape":[2]}})"), "data_offsets");
  expect(file_with(R"({"w":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})"), "bad dimension");
  expect(
      file_with(
          R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})"),
      "overlapping");
  expect(file_with(ok, std::string(12, '\0')), "holds 12");
  expect(file_with(R"([1,2])"), "not a JSON object");
  expect(file_with(R"({"w":{"dtype":"F32","shape":[99999999999999999999],"data_offsets":[0,8]}})"), "64-bit integer");
  expect(file_with(std::string(100, '[') + std::string(100, ']')), "nesting");
  expect(file_with(R"({"":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})"), "empty name");
  EXPECT_NE(error_of([&] { fx::load_safetensors(path("missing")); }).find("no such file"), std::string::npos);
}

TEST_F(Safetensors, SaveRejectsBadNames) {
  Array a(fx::f32, {1});
  EXPECT_THROW(fx::save_safetensors(path("x"), {{"a", a}, {"a", a}}), fx::Error);
  EXPECT_THROW(fx::save_safetensors(path("x"), {{"", a}}), fx::Error);
  EXPECT_THROW(fx::save_safetensors(path("x"), {{"__metadata__", a}}), fx::Error);
}

TEST_F(Safetensors, AFailedSaveLeavesThePreviousFileIntact) {
  fx::save_safetensors(path("c.safetensors"), {{"w", Array(std::vector<float>{1, 2, 3}, {3})}});
  std::string before = read_bytes(path("c.safetensors"));
  for (int64_t budget : {0, 10, 100}) {  // the disk fills up at several points of the write
    fluxion::support::fail_writes_after_for_testing(budget);
    std::string m = error_of([&] {
      fx::save_safetensors(path("c.safetensors"), {{"w", Array(std::vector<float>(1000, 9.0f), {1000})}});
    });
    fluxion::support::fail_writes_after_for_testing(-1);
    EXPECT_NE(m.find("previous file is unchanged"), std::string::npos) << m;
    EXPECT_EQ(read_bytes(path("c.safetensors")), before);
  }
  // No temporary files are left behind.
  int files = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(path(""))) ++files;
  EXPECT_EQ(files, 1);
}
