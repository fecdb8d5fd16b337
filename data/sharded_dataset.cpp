// ShardedDataset: rows read in place from memory-mapped safetensors, IDX and text files.
#include <algorithm>
#include <cstring>

#include "data/char_vocab.h"
#include "data/idx_file.h"
#include "data/mapped_file.h"
#include "data/safetensors_bytes.h"
#include "fluxion/data.h"
#include "fluxion/error.h"

namespace fluxion::data {

namespace {

// How one shard's inputs or targets are read: row r's elements into dst (the row's dtype).
using ReadRow = std::function<void(int64_t row, void* dst)>;

TensorType row_type(const TensorType& whole) {
  return {whole.dtype, Shape(whole.shape.begin() + 1, whole.shape.end())};
}

int64_t row_bytes(const TensorType& row) { return numel(row.shape) * dtype_size(row.dtype); }

}  // namespace

struct ShardedDataset::Source {
  struct Shard {
    int64_t rows = 0;
    ReadRow inputs, targets;
  };
  const char* op;  // the constructor's name, for errors
  std::vector<Shard> shards;
  std::vector<int64_t> ends;  // the row after each shard's last
  TensorType input, target;
  std::string vocab;

  // Adds a shard whose rows have the types `input` and `target` (the first shard's set them).
  void add(const std::string& name, int64_t rows, const TensorType& in, const TensorType& tgt, ReadRow read_inputs,
           ReadRow read_targets) {
    if (shards.empty()) {
      input = in;
      target = tgt;
    } else if (in != input || tgt != target) {
      fluxion::detail::fail(op, name + ": rows of inputs " + in.str() + " and targets " + tgt.str() +
                                    ", but the first shard's are " + input.str() + " and " + target.str());
    }
    shards.push_back({rows, std::move(read_inputs), std::move(read_targets)});
    ends.push_back((ends.empty() ? 0 : ends.back()) + rows);
  }
};

namespace {

constexpr const char* kSafetensorsOp = "data::ShardedDataset::safetensors";
constexpr const char* kIdxOp = "data::ShardedDataset::idx";

const StoredTensor& tensor_named(const std::vector<StoredTensor>& tensors, const std::string& name,
                                 const std::string& path) {
  std::string have;
  for (const StoredTensor& t : tensors) {
    if (t.name == name) return t;
    have += (have.empty() ? "" : ", ") + t.name;
  }
  fluxion::detail::fail(kSafetensorsOp, "'" + path + "' has no tensor '" + name + "' (it has: " + have + ")");
}

ReadRow safetensors_rows(const std::shared_ptr<const MappedFile>& file, const StoredTensor& t) {
  int64_t per_row = numel(row_type(t.type).shape);
  return
      [file, t, per_row](int64_t row, void* dst) { t.read(file->bytes(), row * per_row, per_row, dst, file->path()); };
}

// One IDX file of a shard: its mapping and where its elements are.
struct IdxColumn {
  std::shared_ptr<const MappedFile> file;
  IdxLayout layout;

  static IdxColumn open(const std::string& path) {
    auto file = std::make_shared<const MappedFile>(path, kIdxOp);
    std::string_view bytes = file->bytes();
    if (bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
        static_cast<unsigned char>(bytes[1]) == 0x8b)
      fluxion::detail::fail(kIdxOp,
                            "'" + path + "' is gzipped: a shard is read in place, so decompress it once (gunzip -k)");
    IdxLayout layout = parse_idx_layout(bytes, path);
    if (layout.shape.empty()) fluxion::detail::fail(kIdxOp, "'" + path + "' holds a scalar: expected rows");
    return {file, layout};
  }
  TensorType type() const { return {idx_dtype(layout.type), layout.shape}; }
  ReadRow rows() const {
    int64_t per_row = numel(row_type(type()).shape);
    int64_t stride = per_row * idx_element_bytes(layout.type);
    return [column = *this, per_row, stride](int64_t row, void* dst) {
      const auto* payload = reinterpret_cast<const unsigned char*>(
          column.file->bytes().substr(static_cast<size_t>(column.layout.payload_offset + row * stride)).data());
      convert_idx_elements(column.layout.type, payload, per_row, dst);
    };
  }
};

}  // namespace

ShardedDataset ShardedDataset::safetensors(const std::vector<std::string>& paths, const std::string& inputs,
                                           const std::string& targets) {
  auto source = std::make_shared<Source>();
  source->op = kSafetensorsOp;
  if (paths.empty()) fluxion::detail::fail(source->op, "no files given");
  for (const std::string& path : paths) {
    auto file = std::make_shared<const MappedFile>(path, source->op);
    std::vector<StoredTensor> tensors = parse_safetensors_layout(file->bytes(), path);
    const StoredTensor &in = tensor_named(tensors, inputs, path), &tgt = tensor_named(tensors, targets, path);
    std::string name = "'" + path + "'";
    if (in.type.shape.empty() || tgt.type.shape.empty() || in.type.shape[0] != tgt.type.shape[0])
      fluxion::detail::fail(source->op, name + ": inputs " + in.type.str() + " and targets " + tgt.type.str() +
                                            ": expected the same number of rows");
    source->add(name, in.type.shape[0], row_type(in.type), row_type(tgt.type), safetensors_rows(file, in),
                safetensors_rows(file, tgt));
  }
  return ShardedDataset(std::move(source));
}

ShardedDataset ShardedDataset::idx(const std::vector<std::pair<std::string, std::string>>& shards) {
  auto source = std::make_shared<Source>();
  source->op = kIdxOp;
  if (shards.empty()) fluxion::detail::fail(source->op, "no files given");
  for (const auto& [inputs, targets] : shards) {
    IdxColumn in = IdxColumn::open(inputs), tgt = IdxColumn::open(targets);
    int64_t rows = in.layout.shape[0];
    std::string name = "'" + inputs + "' and '";
    name += targets;
    name += "'";
    if (tgt.layout.shape[0] != rows)
      fluxion::detail::fail(source->op, name + ": " + std::to_string(rows) + " and " +
                                            std::to_string(tgt.layout.shape[0]) + " rows, expected as many");
    source->add(name, rows, row_type(in.type()), row_type(tgt.type()), in.rows(), tgt.rows());
  }
  return ShardedDataset(std::move(source));
}

ShardedDataset ShardedDataset::text(const std::string& path, int64_t seq_len) {
  auto source = std::make_shared<Source>();
  source->op = "data::ShardedDataset::text";
  auto file = std::make_shared<const MappedFile>(path, source->op);
  std::string_view text = file->bytes();
  int64_t length = static_cast<int64_t>(text.size());
  int64_t n = seq_len < 1 ? 0 : (length - 1) / seq_len;
  if (n < 1)
    fluxion::detail::fail(source->op, "'" + path + "': a text of " + std::to_string(length) +
                                          " characters has no window of " + std::to_string(seq_len) + " + 1");
  auto vocab = std::make_shared<const CharVocab>(CharVocab::of(text));
  source->vocab = vocab->bytes;
  auto window = [file, vocab, seq_len](int64_t shift) {
    return [file, vocab, seq_len, shift](int64_t row, void* dst) {
      const char* first = file->bytes().data() + row * seq_len + shift;
      auto* out = static_cast<int32_t*>(dst);
      for (int64_t k = 0; k < seq_len; ++k) out[k] = (*vocab)[first[k]];
    };
  };
  TensorType row{i32, {seq_len}};
  source->add("'" + path + "'", n, row, row, window(0), window(1));
  return ShardedDataset(std::move(source));
}

int64_t ShardedDataset::size() const { return source_->ends.back(); }
const TensorType& ShardedDataset::input_type() const { return source_->input; }
const TensorType& ShardedDataset::target_type() const { return source_->target; }
const std::string& ShardedDataset::vocab() const { return source_->vocab; }

Dataset ShardedDataset::rows(std::span<const int64_t> rows) const {
  auto count = static_cast<int64_t>(rows.size());
  auto with_rows = [count](const TensorType& row) {
    Shape s{count};
    s.insert(s.end(), row.shape.begin(), row.shape.end());
    return s;
  };
  Dataset out{Array::empty(source_->input.dtype, with_rows(source_->input)),
              Array::empty(source_->target.dtype, with_rows(source_->target))};
  auto* in = static_cast<std::byte*>(out.inputs.mutable_data());
  auto* tgt = static_cast<std::byte*>(out.targets.mutable_data());
  int64_t in_bytes = row_bytes(source_->input), tgt_bytes = row_bytes(source_->target);
  for (int64_t k = 0; k < count; ++k) {
    int64_t row = rows[static_cast<size_t>(k)];
    if (row < 0 || row >= size())
      fluxion::detail::fail("data::ShardedDataset::rows",
                            "row " + std::to_string(row) + " of a dataset of " + std::to_string(size()));
    auto shard =
        static_cast<size_t>(std::upper_bound(source_->ends.begin(), source_->ends.end(), row) - source_->ends.begin());
    int64_t local = row - (shard == 0 ? 0 : source_->ends[shard - 1]);
    source_->shards[shard].inputs(local, in + k * in_bytes);
    source_->shards[shard].targets(local, tgt + k * tgt_bytes);
  }
  return out;
}

}  // namespace fluxion::data
