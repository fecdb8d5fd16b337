// The one-rank communicator, the installed-communicator slot, and the collectives whose
// reductions run in rank order on top of an engine's plain exchanges.
#include "support/communicator.h"

#include <fluxion/error.h>
#include <fluxion/half.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>
#include <type_traits>

namespace fluxion {

std::string_view reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return "sum";
    case ReduceOp::Mean: return "mean";
    case ReduceOp::Max: return "max";
    case ReduceOp::Min: return "min";
  }
  return "?";
}

namespace support {
namespace {

// A job of one rank: every exchange is a copy.
class SelfCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string engine() const override { return "self"; }
  void barrier() override {}
  void all_gather(const void* send, void* recv, int64_t bytes) override { copy(recv, send, bytes); }
  void all_to_all(const void* send, const std::vector<int64_t>& send_bytes, const std::vector<int64_t>& send_offsets,
                  void* recv, const std::vector<int64_t>&, const std::vector<int64_t>& recv_offsets) override {
    copy(static_cast<char*>(recv) + recv_offsets[0], static_cast<const char*>(send) + send_offsets[0], send_bytes[0]);
  }
  void all_gather_varying(const void* send, void* recv, const std::vector<int64_t>& bytes,
                          const std::vector<int64_t>& offsets) override {
    copy(static_cast<char*>(recv) + offsets[0], send, bytes[0]);
  }
  void broadcast(void*, int64_t, int root) override {
    if (root != 0) detail::fail("broadcast", "root " + std::to_string(root) + " is not a rank of a job of 1 rank");
  }

 private:
  static void copy(void* to, const void* from, int64_t bytes) {
    if (bytes > 0 && to != from) std::memmove(to, from, static_cast<size_t>(bytes));
  }
};

std::mutex& slot_mutex() {
  static std::mutex m;
  return m;
}

std::shared_ptr<Communicator>& slot() {
  static std::shared_ptr<Communicator> installed = std::make_shared<SelfCommunicator>();
  return installed;
}

// The type an element is combined in: itself, or double for the 16-bit floats, whose result is
// rounded back once per combination as a program's op would round it.
template <class T>
struct Arithmetic {
  using type = T;
};
template <>
struct Arithmetic<Half> {
  using type = double;
};
template <>
struct Arithmetic<BFloat16> {
  using type = double;
};

// An integer sum wraps around (two's complement) instead of overflowing.
template <class T>
T add(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
  } else {
    return a + b;
  }
}

template <class T>
void combine_into(T* acc, const T* x, int64_t n, ReduceOp op) {
  using A = typename Arithmetic<T>::type;
  for (int64_t i = 0; i < n; ++i) {
    A a = static_cast<A>(acc[i]), b = static_cast<A>(x[i]);
    switch (op) {
      case ReduceOp::Sum:
      case ReduceOp::Mean: acc[i] = static_cast<T>(add(a, b)); break;
      case ReduceOp::Max: acc[i] = static_cast<T>(std::max(a, b)); break;
      case ReduceOp::Min: acc[i] = static_cast<T>(std::min(a, b)); break;
    }
  }
}

template <class T>
void scale(T* x, int64_t n, int ranks) {
  using A = typename Arithmetic<T>::type;
  for (int64_t i = 0; i < n; ++i) x[i] = static_cast<T>(static_cast<A>(x[i]) / static_cast<A>(ranks));
}

// acc = acc (op) x over n elements of dtype t.
void combine(void* acc, const void* x, int64_t n, DType t, ReduceOp op) {
  switch (t) {
    case DType::f32: combine_into(static_cast<float*>(acc), static_cast<const float*>(x), n, op); break;
    case DType::f64: combine_into(static_cast<double*>(acc), static_cast<const double*>(x), n, op); break;
    case DType::i32: combine_into(static_cast<int32_t*>(acc), static_cast<const int32_t*>(x), n, op); break;
    case DType::f16: combine_into(static_cast<Half*>(acc), static_cast<const Half*>(x), n, op); break;
    case DType::bf16: combine_into(static_cast<BFloat16*>(acc), static_cast<const BFloat16*>(x), n, op); break;
    case DType::boolean: detail::fail("all_reduce", "bool values cannot be reduced across ranks");
  }
}

void check_reducible(std::string_view op_name, DType t, ReduceOp op) {
  if (t == DType::boolean || (op == ReduceOp::Mean && !is_float(t)))
    detail::fail(op_name, std::string("cannot take the ") + std::string(reduce_op_name(op)) + " of " + dtype_name(t) +
                              " values across ranks");
}

std::vector<int64_t> offsets_of(const std::vector<int64_t>& bytes) {
  std::vector<int64_t> out(bytes.size(), 0);
  for (size_t i = 1; i < bytes.size(); ++i) out[i] = out[i - 1] + bytes[i - 1];
  return out;
}

thread_local std::string current_label;

}  // namespace

CollectiveLabel::CollectiveLabel(std::string what) : previous_(std::move(current_label)) {
  current_label = std::move(what);
}
CollectiveLabel::~CollectiveLabel() { current_label = std::move(previous_); }
const std::string& CollectiveLabel::current() { return current_label; }

std::shared_ptr<Communicator> communicator() {
  std::lock_guard<std::mutex> lock(slot_mutex());
  return slot();
}

void install_communicator(std::shared_ptr<Communicator> c) {
  std::lock_guard<std::mutex> lock(slot_mutex());
  slot() = c ? std::move(c) : std::make_shared<SelfCommunicator>();
}

std::vector<int64_t> chunk_counts(int64_t count, int ranks) {
  std::vector<int64_t> out(static_cast<size_t>(ranks), count / ranks);
  for (int64_t r = 0; r < count % ranks; ++r) out[static_cast<size_t>(r)] += 1;
  return out;
}

void reduce_scatter(Communicator& c, const void* send, void* recv, int64_t count, DType t, ReduceOp op) {
  check_reducible("reduce_scatter", t, op);
  int n = c.size(), me = c.rank();
  int64_t es = dtype_size(t);
  std::vector<int64_t> counts = chunk_counts(count, n), send_bytes(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) send_bytes[static_cast<size_t>(r)] = counts[static_cast<size_t>(r)] * es;
  int64_t mine = send_bytes[static_cast<size_t>(me)];
  // Every rank's contribution to my chunk, in rank order, then summed in that order.
  // Not zero-filled: every byte is received (a 16 MB all-reduce spent milliseconds clearing it).
  std::unique_ptr<char[]> staged =
      std::make_unique_for_overwrite<char[]>(static_cast<size_t>(std::max<int64_t>(1, mine * n)));
  std::vector<int64_t> recv_bytes(static_cast<size_t>(n), mine), recv_offsets(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) recv_offsets[static_cast<size_t>(r)] = r * mine;
  c.all_to_all(send, send_bytes, offsets_of(send_bytes), staged.get(), recv_bytes, recv_offsets);
  int64_t elements = counts[static_cast<size_t>(me)];
  if (mine > 0) std::memcpy(recv, staged.get(), static_cast<size_t>(mine));
  for (int r = 1; r < n; ++r) combine(recv, staged.get() + r * mine, elements, t, op);
  if (op == ReduceOp::Mean) {
    if (t == DType::f32) scale(static_cast<float*>(recv), elements, n);
    if (t == DType::f64) scale(static_cast<double*>(recv), elements, n);
    if (t == DType::f16) scale(static_cast<Half*>(recv), elements, n);
    if (t == DType::bf16) scale(static_cast<BFloat16*>(recv), elements, n);
  }
}

void all_reduce(Communicator& c, const void* send, void* recv, int64_t count, DType t, ReduceOp op) {
  check_reducible("all_reduce", t, op);
  int n = c.size();
  int64_t es = dtype_size(t);
  if (n == 1) {  // one rank's sum, mean, max or min is its own value
    if (send != recv && count > 0) std::memcpy(recv, send, static_cast<size_t>(count * es));
    return;
  }
  std::vector<int64_t> counts = chunk_counts(count, n), bytes(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) bytes[static_cast<size_t>(r)] = counts[static_cast<size_t>(r)] * es;
  std::unique_ptr<char[]> mine = std::make_unique_for_overwrite<char[]>(
      static_cast<size_t>(std::max<int64_t>(1, bytes[static_cast<size_t>(c.rank())])));
  reduce_scatter(c, send, mine.get(), count, t, op);
  c.all_gather_varying(mine.get(), recv, bytes, offsets_of(bytes));
}

}  // namespace support
}  // namespace fluxion
