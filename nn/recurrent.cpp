#include "fluxion/nn/recurrent.h"

#include "fluxion/error.h"
#include "fluxion/ops.h"

namespace fluxion::nn {

namespace {

int64_t gate_count(CellKind kind) { return kind == CellKind::Lstm ? 4 : 3; }
const char* kind_name(CellKind kind) { return kind == CellKind::Lstm ? "LSTM" : "GRU"; }
size_t state_size(CellKind kind) { return kind == CellKind::Lstm ? 2 : 1; }

std::vector<ParamSpec> cell_params(CellKind kind, int64_t input, int64_t hidden, const std::string& suffix) {
  int64_t g = gate_count(kind) * hidden;
  Initializer init = Initializer::fan_in_uniform(hidden);  // PyTorch: U(+-1/sqrt(hidden)) for all four
  return {{"weight_ih" + suffix, {g, input}, init},
          {"weight_hh" + suffix, {g, hidden}, init},
          {"bias_ih" + suffix, {g}, init},
          {"bias_hh" + suffix, {g}, init}};
}

Tensor gate(const Tensor& gates, int64_t k, int64_t hidden) {
  return slice_axis(gates, -1, k * hidden, (k + 1) * hidden);
}

// The input's contribution to every gate, for every row of x [..., input] at once; for an LSTM
// both biases are added here, so a step adds only h W_hh^T.
Tensor input_gates(CellKind kind, std::span<const Tensor> p, const Tensor& x) {
  Tensor xg = matmul(x, transpose(p[0])) + p[2];
  return kind == CellKind::Lstm ? xg + p[3] : xg;
}

// One step from the input gates xg [B, G*hidden] and the state.
std::vector<Tensor> cell_step(CellKind kind, std::span<const Tensor> p, const Tensor& xg,
                              const std::vector<Tensor>& state) {
  const Tensor& h = state[0];
  int64_t H = h.dim(-1);
  if (kind == CellKind::Lstm) {
    Tensor gates = xg + matmul(h, transpose(p[1]));
    Tensor i = sigmoid(gate(gates, 0, H)), f = sigmoid(gate(gates, 1, H));
    Tensor g = tanh(gate(gates, 2, H)), o = sigmoid(gate(gates, 3, H));
    Tensor c = f * state[1] + i * g;
    return {o * tanh(c), c};
  }
  Tensor hg = matmul(h, transpose(p[1])) + p[3];
  Tensor r = sigmoid(gate(xg, 0, H) + gate(hg, 0, H));
  Tensor z = sigmoid(gate(xg, 1, H) + gate(hg, 1, H));
  Tensor n = tanh(gate(xg, 2, H) + r * gate(hg, 2, H));
  return {n + z * (h - n)};
}

void check_params(const std::string& who, std::span<const Tensor> p, size_t want) {
  if (p.size() != want)
    fluxion::detail::fail(who, std::to_string(p.size()) + " parameters given, expected " + std::to_string(want));
}

void check_state(const std::string& who, CellKind kind, const std::vector<Tensor>& state, size_t layers, int64_t batch,
                 int64_t hidden) {
  size_t want = layers * state_size(kind);
  if (state.size() != want)
    fluxion::detail::fail(who, "state has " + std::to_string(state.size()) + " tensors, expected " + std::to_string(want));
  for (const Tensor& s : state) {
    if (!s.valid() || s.shape() != Shape{batch, hidden})
      fluxion::detail::fail(who, "state tensor " + (s.valid() ? s.type().str() : std::string("(empty)")) + ": expected [" +
                            std::to_string(batch) + "," + std::to_string(hidden) + "]");
  }
}

}  // namespace

std::vector<ParamSpec> RecurrentCell::params() const { return cell_params(kind_, input_, hidden_, ""); }

std::vector<Tensor> RecurrentCell::step(std::span<const Tensor> p, const Tensor& x,
                                        const std::vector<Tensor>& state) const {
  expect_input(describe(), x, 2, 1, input_);
  check_params(describe(), p, 4);
  check_state(describe(), kind_, state, 1, x.dim(0), hidden_);
  return cell_step(kind_, p, input_gates(kind_, p, x), state);
}

Tensor RecurrentCell::forward(std::span<const Tensor> p, const Tensor& x) const {
  expect_input(describe(), x, 2, 1, input_);
  std::vector<Tensor> zero(state_size(kind_), zeros({x.dim(0), hidden_}, x.dtype()));
  return step(p, x, zero)[0];
}

std::vector<Tensor> RecurrentCell::zero_state(int64_t batch) const {
  return std::vector<Tensor>(state_size(kind_), zeros({batch, hidden_}));
}

std::string RecurrentCell::describe() const {
  return std::string(kind_name(kind_)) + "Cell(" + std::to_string(input_) + " -> " + std::to_string(hidden_) + ")";
}

Recurrent::Recurrent(CellKind kind, RecurrentOptions opt) : kind_(kind), opt_(opt) {
  if (opt_.input < 1 || opt_.hidden < 1 || opt_.layers < 1) {
    fluxion::detail::fail(std::string("nn::") + kind_name(kind), "input " + std::to_string(opt_.input) + ", hidden " +
                                                            std::to_string(opt_.hidden) + ", layers " +
                                                            std::to_string(opt_.layers) + ": all must be positive");
  }
}

std::vector<ParamSpec> Recurrent::params() const {
  std::vector<ParamSpec> out;
  for (int64_t k = 0; k < opt_.layers; ++k) {
    auto cell = cell_params(kind_, k == 0 ? opt_.input : opt_.hidden, opt_.hidden, "_l" + std::to_string(k));
    out.insert(out.end(), cell.begin(), cell.end());
  }
  return out;
}

std::pair<Tensor, std::vector<Tensor>> Recurrent::run(std::span<const Tensor> p, const Tensor& x,
                                                      const std::vector<Tensor>& state) const {
  expect_input(describe(), x, 3, 2, opt_.input);
  check_params(describe(), p, 4 * static_cast<size_t>(opt_.layers));
  Tensor seq = opt_.batch_first ? permute(x, {1, 0, 2}) : x;  // [T, B, input]
  int64_t T = seq.dim(0), B = seq.dim(1);
  check_state(describe(), kind_, state, static_cast<size_t>(opt_.layers), B, opt_.hidden);
  size_t per_layer = state_size(kind_);
  std::vector<Tensor> final_state;
  for (int64_t k = 0; k < opt_.layers; ++k) {
    std::span<const Tensor> pk = p.subspan(static_cast<size_t>(k) * 4, 4);
    // One matmul over every step's input: [T*B, in] x [in, G*hidden].
    Tensor xg = reshape(input_gates(kind_, pk, reshape(seq, {T * B, seq.dim(2)})), {T, B, -1});
    std::vector<Tensor> init(state.begin() + static_cast<std::ptrdiff_t>(k * per_layer),
                             state.begin() + static_cast<std::ptrdiff_t>((k + 1) * per_layer));
    auto [last, ys] = scan(
        [&](const std::vector<Tensor>& s, const Tensor& xg_t) {
          std::vector<Tensor> next = cell_step(kind_, pk, xg_t, s);
          return std::make_pair(next, next[0]);
        },
        init, xg, ScanOptions{.checkpoint = opt_.checkpoint});
    final_state.insert(final_state.end(), last.begin(), last.end());
    seq = ys;  // [T, B, hidden]
  }
  return {opt_.batch_first ? permute(seq, {1, 0, 2}) : seq, final_state};
}

std::pair<Tensor, std::vector<Tensor>> Recurrent::step(std::span<const Tensor> p, const Tensor& x,
                                                       const std::vector<Tensor>& state) const {
  expect_input(describe(), x, 2, 1, opt_.input);
  check_params(describe(), p, 4 * static_cast<size_t>(opt_.layers));
  check_state(describe(), kind_, state, static_cast<size_t>(opt_.layers), x.dim(0), opt_.hidden);
  size_t per_layer = state_size(kind_);
  std::vector<Tensor> next_state;
  Tensor h = x;
  for (int64_t k = 0; k < opt_.layers; ++k) {
    std::span<const Tensor> pk = p.subspan(static_cast<size_t>(k) * 4, 4);
    std::vector<Tensor> s(state.begin() + static_cast<std::ptrdiff_t>(k * per_layer),
                          state.begin() + static_cast<std::ptrdiff_t>((k + 1) * per_layer));
    std::vector<Tensor> next = cell_step(kind_, pk, input_gates(kind_, pk, h), s);
    h = next[0];
    next_state.insert(next_state.end(), next.begin(), next.end());
  }
  return {h, next_state};
}

Tensor Recurrent::forward(std::span<const Tensor> p, const Tensor& x) const {
  expect_input(describe(), x, 3, 2, opt_.input);
  int64_t B = x.dim(opt_.batch_first ? 0 : 1);
  std::vector<Tensor> zero(static_cast<size_t>(opt_.layers) * state_size(kind_), zeros({B, opt_.hidden}, x.dtype()));
  auto [ys, state] = run(p, x, zero);
  return opt_.last_only ? state[state.size() - state_size(kind_)] : ys;
}

std::vector<Tensor> Recurrent::zero_state(int64_t batch) const {
  return std::vector<Tensor>(static_cast<size_t>(opt_.layers) * state_size(kind_), zeros({batch, opt_.hidden}));
}

std::string Recurrent::describe() const {
  return std::string(kind_name(kind_)) + "(" + std::to_string(opt_.input) + " -> " + std::to_string(opt_.hidden) +
         ", " + std::to_string(opt_.layers) + (opt_.layers == 1 ? " layer" : " layers") +
         (opt_.batch_first ? ", batch first" : ", time first") + (opt_.last_only ? ", last step" : "") + ")";
}

}  // namespace fluxion::nn
