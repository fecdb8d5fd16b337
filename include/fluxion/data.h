// Data loading: IDX files (Fashion-MNIST, MNIST, any IDX a user gives; gzipped or not),
// datasets held in host memory, seeded shuffling and batching, and a character-level text
// dataset. A missing, truncated or corrupt file raises fluxion::Error naming the file and what
// is wrong with it.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fluxion/array.h"

namespace fluxion::data {

// Reads an IDX file (gzip-compressed when it starts with gzip's magic bytes). Element types:
// unsigned/signed byte, short and int become i32; float f32; double f64. The shape is the
// file's dimensions.
Array read_idx(const std::string& path);

// Inputs and targets with the same leading dimension (one row per example).
struct Dataset {
  Array inputs;
  Array targets;
  int64_t size() const { return inputs.rank() == 0 ? 0 : inputs.shape()[0]; }
};

// Rows [begin, end) of `d` (copied).
Dataset subset(const Dataset& d, int64_t begin, int64_t end);

// $FLUXION_FASHION_MNIST, else /usr/share/datasets/fashion-mnist (Debian's dataset-fashion-mnist).
std::string fashion_mnist_dir();
// split "train" (60,000 images) or "test" (10,000): inputs f32 [N, 1, 28, 28] scaled to [0, 1],
// targets i32 [N] class labels 0..9.
Dataset fashion_mnist(const std::string& split, const std::string& dir = fashion_mnist_dir());
// The ten class names of Fashion-MNIST.
const std::vector<std::string>& fashion_mnist_classes();

// A counter-based random permutation of [0, n): the same (seed, stream) gives the same order
// on every platform (no dependence on the standard library's distributions).
std::vector<int64_t> permutation(int64_t n, uint64_t seed, uint64_t stream = 0);

// Batches of a dataset, in a seeded random order per epoch (or in order).
class Loader {
 public:
  struct Options {
    int64_t batch_size = 128;
    bool shuffle = true;
    uint64_t seed = 0;
    bool drop_last = false;  // drop the last batch when it is smaller than batch_size
    // Data-parallel training: batch_size is the global batch, of which rank `rank` of `ranks`
    // takes its own contiguous block of batch_size / ranks rows (batch_size must be a multiple
    // of ranks). A shorter last batch is split the same way, the rows left over by the
    // division dropped, so every rank gets as many rows. Together the ranks see, step by step,
    // the rows a single process with the same seed and batch size sees.
    int rank = 0;
    int ranks = 1;
  };
  Loader(const Dataset& data, Options opt);
  // Batches per epoch.
  int64_t size() const;
  // Fixes the order of the epoch's batches: permutation(n, seed, epoch) when shuffling.
  void set_epoch(int64_t epoch);
  // Batch i of the current epoch (this rank's block of it): rows gathered into fresh Arrays
  // (the last may be shorter).
  std::pair<Array, Array> batch(int64_t i) const;

 private:
  Dataset data_;
  Options opt_;
  std::vector<int64_t> order_;
};

// A character-level text corpus: the vocabulary is the set of bytes that occur, in byte
// order; a token is an index into it.
class CharText {
 public:
  // Raises Error when the file cannot be read or is shorter than 2 bytes.
  static CharText load(const std::string& path);
  static CharText from_string(std::string text);
  const std::string& vocab() const { return vocab_; }
  int64_t vocab_size() const { return static_cast<int64_t>(vocab_.size()); }
  int64_t length() const { return static_cast<int64_t>(tokens_.size()); }
  // Error for a character outside the vocabulary.
  std::vector<int32_t> encode(std::string_view text) const;
  std::string decode(std::span<const int32_t> tokens) const;
  // Non-overlapping windows of the text: inputs i32 [N, seq_len], targets the same windows
  // shifted by one character (the next character to predict).
  Dataset sequences(int64_t seq_len) const;

 private:
  std::string vocab_;
  std::vector<int32_t> tokens_;
  int32_t index_[256] = {};
};

}  // namespace fluxion::data
