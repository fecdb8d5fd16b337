// The inputs of W1..W7 (WORKLOADS.md), made once from fixed seeds and shared by every system, so
// all of them compute on the same numbers. Row-major float32 buffers with their shapes.
#pragma once

#include <cstdint>
#include <vector>

namespace bench {

struct Buf {
  std::vector<float> v;
  std::vector<int64_t> shape;
  const float* data() const { return v.data(); }
  int64_t size() const { return static_cast<int64_t>(v.size()); }
};

// W1, W2: x of shape 28x28x1x128, uniform in [0, 1) (an image batch).
struct ImageBatch {
  Buf x;
};

// W3: x flattened to 784x128; h = tanh(W1 x + b1), y = W2 h + b2. Biases are columns [n, 1].
struct Mlp {
  Buf x, W1, b1, W2, b2;
};

// W4: LeNet-5, x [128, 1, 28, 28] (NCHW). Conv weights [out, in, 5, 5], biases [out]; dense
// weights [out, in] and biases [out], applied to batch-major activations (x W^T + b).
struct LeNet {
  Buf x, conv1_w, conv1_b, conv2_w, conv2_b, fc1_w, fc1_b, fc2_w, fc2_b, fc3_w, fc3_b;
};

// W5: loss = sum(exp(W x + b)), W 256x512 and x 512x4096 normal scaled by 0.01, b [256, 1] normal.
struct ExpLayer {
  Buf W, b, x;
};

// W6: 2-layer LSTM, input 64, hidden 64, batch 256, 50 steps, PyTorch's gate order (i, f, g, o)
// and parameters: per layer w_ih [256, in], w_hh [256, 64], b_ih [256], b_hh [256].
// xs is [50, 256, 64] (step, batch, feature), h0 = c0 = 0. One step is SGD with rate `lr`.
struct Lstm {
  static constexpr int64_t kSteps = 50, kBatch = 256, kInput = 64, kHidden = 64;
  Buf xs;
  Buf w_ih[2], w_hh[2], b_ih[2], b_hh[2];
  float lr = 1e-5f;
};

// W7: s <- sigmoid(softplus(w2) . sigmoid(s * softplus(w1))) + noise[i] for 8000 steps from s0.
struct SmallLoop {
  static constexpr int64_t kSteps = 8000, kWidth = 12;
  Buf w1, w2, noise;
  float s0 = 0.5f;
};

struct Inputs {
  ImageBatch w1;  // W1 and W2
  Mlp w3;
  LeNet w4;
  ExpLayer w5;
  Lstm w6;
  SmallLoop w7;
};

// Deterministic: the same numbers on every run and machine.
Inputs make_inputs();

}  // namespace bench
