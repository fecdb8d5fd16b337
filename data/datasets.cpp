#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>

#include "data/char_vocab.h"
#include "data/idx_file.h"
#include "data/rows.h"
#include "fluxion/data.h"
#include "fluxion/error.h"
#include "support/settings.h"

namespace fluxion::data {

namespace {

int64_t row_bytes(const Array& a) {
  return a.rank() == 0 || a.shape()[0] == 0 ? 0 : a.size() / a.shape()[0] * dtype_size(a.dtype());
}

Shape with_rows(const Array& a, int64_t rows) {
  Shape s = a.shape();
  s[0] = rows;
  return s;
}

}  // namespace

Array gather_rows(const Array& a, std::span<const int64_t> rows) {
  auto count = static_cast<int64_t>(rows.size());
  Array out = Array::empty(a.dtype(), with_rows(a, count));
  int64_t rb = row_bytes(a);
  const auto* src = static_cast<const std::byte*>(a.data());
  auto* dst = static_cast<std::byte*>(out.mutable_data());
  for (int64_t i = 0; i < count; ++i)
    std::memcpy(dst + i * rb, src + rows[static_cast<size_t>(i)] * rb, static_cast<size_t>(rb));
  return out;
}

namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace

Dataset subset(const Dataset& d, int64_t begin, int64_t end) {
  if (d.inputs.rank() == 0 || d.targets.rank() == 0 || d.inputs.shape()[0] != d.targets.shape()[0])
    fluxion::detail::fail("data::subset", "inputs " + d.inputs.type().str() + " and targets " + d.targets.type().str() +
                                              ": expected the same number of rows");
  if (begin < 0 || end < begin || end > d.size())
    fluxion::detail::fail("data::subset", "rows [" + std::to_string(begin) + ", " + std::to_string(end) +
                                              ") of a dataset of " + std::to_string(d.size()));
  std::vector<int64_t> rows;
  for (int64_t i = begin; i < end; ++i) rows.push_back(i);
  return {gather_rows(d.inputs, rows), gather_rows(d.targets, rows)};
}

std::string fashion_mnist_dir() { return support::text(support::Setting::fashion_mnist); }

const std::vector<std::string>& fashion_mnist_classes() {
  static const std::vector<std::string> names{"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                              "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};
  return names;
}

Dataset fashion_mnist(const std::string& split, const std::string& dir) {
  if (split != "train" && split != "test")
    fluxion::detail::fail("data::fashion_mnist", "split '" + split + "': expected \"train\" or \"test\"");
  std::string stem = dir + "/" + (split == "train" ? "train" : "t10k");
  IdxFile images = read_idx_file(stem + "-images-idx3-ubyte.gz");
  IdxFile labels = read_idx_file(stem + "-labels-idx1-ubyte.gz");
  auto expect = [&](bool ok, const std::string& what) {
    if (!ok) fluxion::detail::fail("data::fashion_mnist", stem + ": " + what);
  };
  expect(images.type == 0x08 && images.shape.size() == 3 && images.shape[1] == 28 && images.shape[2] == 28,
         "images " + shape_str(images.shape) + ": expected u8 [N,28,28]");
  expect(labels.type == 0x08 && labels.shape.size() == 1 && labels.shape[0] == images.shape[0],
         "labels " + shape_str(labels.shape) + ": expected u8 [" + std::to_string(images.shape[0]) + "]");
  int64_t n = images.shape[0];
  Dataset d{Array::empty(f32, {n, 1, 28, 28}), Array::empty(i32, {n})};
  auto* x = static_cast<float*>(d.inputs.mutable_data());
  const auto* px = reinterpret_cast<const unsigned char*>(images.payload.data());
  for (int64_t i = 0; i < n * 784; ++i) x[i] = static_cast<float>(px[i]) * (1.0f / 255.0f);
  auto* y = static_cast<int32_t*>(d.targets.mutable_data());
  const auto* py = reinterpret_cast<const unsigned char*>(labels.payload.data());
  for (int64_t i = 0; i < n; ++i) {
    expect(py[i] < 10, "label " + std::to_string(py[i]) + " of example " + std::to_string(i) + " is not a class 0..9");
    y[i] = py[i];
  }
  return d;
}

std::vector<int64_t> permutation(int64_t n, uint64_t seed, uint64_t stream) {
  std::vector<int64_t> p(static_cast<size_t>(n > 0 ? n : 0));
  for (int64_t i = 0; i < n; ++i) p[static_cast<size_t>(i)] = i;
  uint64_t base = splitmix64(seed ^ splitmix64(stream + 0x632be59bd9b4e019ull));
  for (int64_t i = n - 1; i > 0; --i) {  // Fisher-Yates with a counter-based source
    uint64_t r = splitmix64(base + static_cast<uint64_t>(i));
    auto j = static_cast<int64_t>((static_cast<unsigned __int128>(r) * static_cast<uint64_t>(i + 1)) >> 64);
    std::swap(p[static_cast<size_t>(i)], p[static_cast<size_t>(j)]);
  }
  return p;
}

CharText CharText::from_string(std::string text) {
  if (text.size() < 2)
    fluxion::detail::fail("data::CharText", "a text of " + std::to_string(text.size()) + " characters: need at least 2");
  CharText t;
  CharVocab vocab = CharVocab::of(text);
  t.vocab_ = vocab.bytes;
  std::copy(std::begin(vocab.token), std::end(vocab.token), std::begin(t.index_));
  t.tokens_.reserve(text.size());
  for (char c : text) t.tokens_.push_back(vocab[c]);
  return t;
}

CharText CharText::load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fluxion::detail::fail("data::CharText::load", "'" + path + "': cannot open");
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) fluxion::detail::fail("data::CharText::load", "'" + path + "': read error");
  std::string text = ss.str();
  if (text.size() < 2)
    fluxion::detail::fail("data::CharText::load", "'" + path + "': " + std::to_string(text.size()) +
                                                      " bytes, need at least 2 characters");
  return from_string(std::move(text));
}

std::vector<int32_t> CharText::encode(std::string_view text) const {
  std::vector<int32_t> out;
  for (char c : text) {
    int32_t k = index_[static_cast<unsigned char>(c)];
    if (k < 0)
      fluxion::detail::fail("data::CharText::encode", "character " + std::to_string(static_cast<unsigned char>(c)) +
                                                          " is not in the vocabulary");
    out.push_back(k);
  }
  return out;
}

std::string CharText::decode(std::span<const int32_t> tokens) const {
  std::string out;
  for (int32_t k : tokens) {
    if (k < 0 || k >= vocab_size())
      fluxion::detail::fail("data::CharText::decode", "token " + std::to_string(k) + " outside the vocabulary of " +
                                                          std::to_string(vocab_size()));
    out += vocab_[static_cast<size_t>(k)];
  }
  return out;
}

Dataset CharText::sequences(int64_t seq_len) const {
  int64_t n = seq_len < 1 ? 0 : (length() - 1) / seq_len;
  if (n < 1)
    fluxion::detail::fail("data::CharText::sequences", "a text of " + std::to_string(length()) +
                                                           " characters has no window of " + std::to_string(seq_len) + " + 1");
  Dataset d{Array::empty(i32, {n, seq_len}), Array::empty(i32, {n, seq_len})};
  auto* x = static_cast<int32_t*>(d.inputs.mutable_data());
  auto* y = static_cast<int32_t*>(d.targets.mutable_data());
  for (int64_t k = 0; k < n * seq_len; ++k) {
    x[k] = tokens_[static_cast<size_t>(k)];
    y[k] = tokens_[static_cast<size_t>(k + 1)];
  }
  return d;
}

}  // namespace fluxion::data
