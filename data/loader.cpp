// Loader: the rows of each batch (seeded order, rank blocks) and reading batches ahead.
#include <algorithm>
#include <future>
#include <map>
#include <mutex>

#include "data/rows.h"
#include "fluxion/data.h"
#include "fluxion/error.h"

namespace fluxion::data {

// The batches being read ahead, by index in the current epoch. A copy of a Loader starts with
// none: the reads belong to the Loader that started them.
struct Loader::ReadAhead {
  std::mutex mutex;
  std::map<int64_t, std::shared_future<Dataset>> batches;
};

Loader::Loader(const Dataset& data, Options opt)
    : Loader(
          [data](std::span<const int64_t> rows) {
            return Dataset{gather_rows(data.inputs, rows), gather_rows(data.targets, rows)};
          },
          data.size(), opt) {
  if (data.inputs.rank() == 0 || data.targets.rank() == 0 || data.inputs.shape()[0] != data.targets.shape()[0])
    fluxion::detail::fail("data::Loader", "inputs " + data.inputs.type().str() + " and targets " +
                                              data.targets.type().str() + ": expected the same number of rows");
  // Reads ahead run on other threads: bring device data to the host once, here, so that they
  // only read it.
  data.inputs.data();
  data.targets.data();
}

Loader::Loader(const ShardedDataset& data, Options opt)
    : Loader([data](std::span<const int64_t> rows) { return data.rows(rows); }, data.size(), opt) {}

Loader::Loader(std::function<Dataset(std::span<const int64_t>)> gather, int64_t rows, Options opt)
    : gather_(std::move(gather)), rows_(rows), opt_(opt), read_ahead_(std::make_unique<ReadAhead>()) {
  if (opt_.batch_size < 1)
    fluxion::detail::fail("data::Loader", "batch size " + std::to_string(opt_.batch_size) + ": expected >= 1");
  if (opt_.ranks < 1 || opt_.rank < 0 || opt_.rank >= opt_.ranks || opt_.batch_size % opt_.ranks != 0)
    fluxion::detail::fail("data::Loader",
                          "rank " + std::to_string(opt_.rank) + " of " + std::to_string(opt_.ranks) +
                              " with batch size " + std::to_string(opt_.batch_size) +
                              ": expected 0 <= rank < ranks and a batch size that is a multiple of ranks");
  if (opt_.prefetch < 0)
    fluxion::detail::fail("data::Loader", "prefetch " + std::to_string(opt_.prefetch) + ": expected >= 0 batches");
  set_epoch(0);
}

Loader::Loader(const Loader& other)
    : gather_(other.gather_),
      rows_(other.rows_),
      opt_(other.opt_),
      order_(other.order_),
      read_ahead_(std::make_unique<ReadAhead>()) {}

Loader& Loader::operator=(const Loader& other) {
  if (this != &other) {
    std::lock_guard lock(read_ahead_->mutex);
    read_ahead_->batches.clear();
    gather_ = other.gather_;
    rows_ = other.rows_;
    opt_ = other.opt_;
    order_ = other.order_;
  }
  return *this;
}

Loader::~Loader() = default;  // waits for the reads in flight

int64_t Loader::size() const {
  // A last batch too short to give every rank a row is dropped.
  int64_t full = rows_ / opt_.batch_size;
  return opt_.drop_last || rows_ % opt_.batch_size < opt_.ranks ? full : full + 1;
}

void Loader::set_epoch(int64_t epoch) {
  std::lock_guard lock(read_ahead_->mutex);
  read_ahead_->batches.clear();
  if (opt_.shuffle) {
    order_ = permutation(rows_, opt_.seed, static_cast<uint64_t>(epoch));
  } else {
    order_.resize(static_cast<size_t>(rows_));
    for (size_t i = 0; i < order_.size(); ++i) order_[i] = static_cast<int64_t>(i);
  }
}

std::vector<int64_t> Loader::rows_of(int64_t i) const {
  int64_t begin = i * opt_.batch_size;
  int64_t count = std::min(opt_.batch_size, rows_ - begin) / opt_.ranks;
  const int64_t* first = order_.data() + begin + opt_.rank * count;
  return {first, first + count};
}

std::pair<Array, Array> Loader::batch(int64_t i) const {
  if (i < 0 || i >= size())
    fluxion::detail::fail("data::Loader::batch", "batch " + std::to_string(i) + " of " + std::to_string(size()));
  std::shared_future<Dataset> read;
  if (opt_.prefetch > 0) {
    std::lock_guard lock(read_ahead_->mutex);
    auto& batches = read_ahead_->batches;
    if (auto it = batches.find(i); it != batches.end()) read = it->second;
    std::erase_if(batches, [&](const auto& entry) { return entry.first <= i || entry.first > i + opt_.prefetch; });
    for (int64_t j = i + 1; j <= std::min(i + opt_.prefetch, size() - 1); ++j) {
      if (!batches.contains(j))
        batches.emplace(j,
                        std::async(std::launch::async, [gather = gather_, rows = rows_of(j)] { return gather(rows); }));
    }
  }
  Dataset d = read.valid() ? read.get() : gather_(rows_of(i));
  return {d.inputs, d.targets};
}

}  // namespace fluxion::data
