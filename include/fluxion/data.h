// Data loading: IDX files (Fashion-MNIST, MNIST, any IDX a user gives; gzipped or not),
// datasets held in host memory, datasets read from memory-mapped shards as batches need their
// rows (larger than memory), seeded shuffling, batching with read-ahead on a background thread,
// and a character-level text dataset. A missing, truncated or corrupt file raises fluxion::Error naming the file and
// what is wrong with it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fluxion/array.h"
#include "fluxion/dtype.h"

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

// A dataset whose rows stay in their files until a batch reads them: the files are mapped into
// memory, so the operating system reads the pages a batch touches and may drop them again, and
// a dataset larger than memory trains like one in memory. Rows are numbered across the shards in
// the order given; every shard's rows have the same dtypes and shapes. Copies share the files.
class ShardedDataset {
 public:
  // safetensors files, each holding a tensor named `inputs` and one named `targets` with the
  // same number of rows (their leading dimension). Stored dtypes convert as load_safetensors's.
  static ShardedDataset safetensors(const std::vector<std::string>& paths, const std::string& inputs = "inputs",
                                    const std::string& targets = "targets");
  // Uncompressed IDX files, an (inputs, targets) pair per shard; elements convert as read_idx's
  // (bytes to i32: scale or cast them in the program). A gzipped file is an Error (it cannot
  // be read in place: gunzip it once).
  static ShardedDataset idx(const std::vector<std::pair<std::string, std::string>>& shards);
  // The windows of a text file as CharText::sequences makes them (i32 [seq_len] inputs, the
  // next characters as targets), the vocabulary found by one pass over the file.
  static ShardedDataset text(const std::string& path, int64_t seq_len);

  int64_t size() const;
  // One row's dtype and shape.
  const TensorType& input_type() const;
  const TensorType& target_type() const;
  // A text dataset's vocabulary (CharText's: the bytes that occur, in byte order); else empty.
  const std::string& vocab() const;
  // The rows `rows` (each in [0, size())), read from the files into fresh Arrays.
  Dataset rows(std::span<const int64_t> rows) const;

 private:
  struct Source;
  explicit ShardedDataset(std::shared_ptr<const Source> source) : source_(std::move(source)) {}
  std::shared_ptr<const Source> source_;
};

// Batches of a dataset, in a seeded random order per epoch (or in order). The batches are the
// same whatever the read-ahead: batch i depends on the seed, the epoch, i and the rank only.
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
    // Batches read ahead on background threads: batch(i) starts reading batches i+1 ..
    // i+prefetch, which batch(i+1) then finds read (0: each batch is read when asked for).
    int prefetch = 2;
  };
  Loader(const Dataset& data, Options opt);
  Loader(const ShardedDataset& data, Options opt);
  Loader(const Loader& other);
  Loader& operator=(const Loader& other);
  ~Loader();
  // Batches per epoch.
  int64_t size() const;
  // Fixes the order of the epoch's batches: permutation(n, seed, epoch) when shuffling.
  void set_epoch(int64_t epoch);
  // Batch i of the current epoch (this rank's block of it): rows gathered into fresh Arrays
  // (the last may be shorter).
  std::pair<Array, Array> batch(int64_t i) const;

 private:
  struct ReadAhead;
  Loader(std::function<Dataset(std::span<const int64_t>)> gather, int64_t rows, Options opt);
  std::vector<int64_t> rows_of(int64_t i) const;

  std::function<Dataset(std::span<const int64_t>)> gather_;  // rows of the dataset, thread-safe
  int64_t rows_ = 0;
  Options opt_;
  std::vector<int64_t> order_;
  std::unique_ptr<ReadAhead> read_ahead_;
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
