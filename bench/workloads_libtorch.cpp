// The peer: Debian's libtorch through its C++ API, eager mode. Primal calls build no autograd
// graph; gradients are taken with torch::autograd::grad (nothing accumulates between calls);
// W6's training step is nn::LSTM + loss.backward() + optim::SGD, as a libtorch user writes it.
#include <torch/torch.h>

#include <cmath>
#include <memory>

#include "workloads.h"

namespace bench {
namespace {

torch::Tensor to_torch(const Buf& b, bool requires_grad = false) {
  torch::Tensor t = torch::from_blob(const_cast<float*>(b.data()), b.shape, torch::kFloat32).clone();
  return requires_grad ? t.requires_grad_(true) : t;
}

double norm(const std::vector<torch::Tensor>& grads) {
  double s = 0;
  for (const torch::Tensor& g : grads) s += g.to(torch::kFloat64).square().sum().item<double>();
  return std::sqrt(s);
}

// The state every libtorch case keeps between calls: its inputs, and the latest results.
struct S {
  std::vector<torch::Tensor> params, data;  // params are differentiated in grad mode
  torch::Tensor loss;
  std::vector<torch::Tensor> grads;
};

// A cell from a loss function over (params, data): primal without autograd, or value and
// gradients with respect to every param.
template <class Loss>
Case loss_case(std::vector<torch::Tensor> params, std::vector<torch::Tensor> data, bool grad, Loss loss) {
  auto s = std::make_shared<S>();
  for (torch::Tensor& p : params) s->params.push_back(grad ? p.requires_grad_(true) : p);
  s->data = std::move(data);
  Case c;
  if (grad) {
    c.run = [s, loss] {
      s->loss = loss(s->params, s->data);
      s->grads = torch::autograd::grad({s->loss}, s->params);
    };
    c.grad_norm = [s] { return norm(s->grads); };
  } else {
    c.run = [s, loss] { s->loss = loss(s->params, s->data); };
  }
  c.value = [s] { return s->loss.item<double>(); };
  return c;
}

using TV = std::vector<torch::Tensor>;

// Adds a primal and a grad CaseSpec for one loss.
template <class Loss>
void both(std::vector<CaseSpec>& out, const char* w, std::function<TV()> params, std::function<TV()> data, Loss loss) {
  for (bool grad : {false, true}) {
    out.push_back({w, "libtorch", grad ? "grad" : "primal",
                   [=] { return loss_case(params(), data(), grad, loss); }});
  }
}

// ---- W4: LeNet-5 from torch::nn layers.
struct LeNet5Impl : torch::nn::Module {
  torch::nn::Conv2d conv1{torch::nn::Conv2dOptions(1, 6, 5)}, conv2{torch::nn::Conv2dOptions(6, 16, 5)};
  torch::nn::Linear fc1{256, 120}, fc2{120, 84}, fc3{84, 10};

  explicit LeNet5Impl(const LeNet& p) {
    register_module("conv1", conv1);
    register_module("conv2", conv2);
    register_module("fc1", fc1);
    register_module("fc2", fc2);
    register_module("fc3", fc3);
    torch::NoGradGuard no_grad;
    conv1->weight.copy_(to_torch(p.conv1_w));
    conv1->bias.copy_(to_torch(p.conv1_b));
    conv2->weight.copy_(to_torch(p.conv2_w));
    conv2->bias.copy_(to_torch(p.conv2_b));
    fc1->weight.copy_(to_torch(p.fc1_w));
    fc1->bias.copy_(to_torch(p.fc1_b));
    fc2->weight.copy_(to_torch(p.fc2_w));
    fc2->bias.copy_(to_torch(p.fc2_b));
    fc3->weight.copy_(to_torch(p.fc3_w));
    fc3->bias.copy_(to_torch(p.fc3_b));
  }
  torch::Tensor forward(torch::Tensor x) {
    x = torch::max_pool2d(torch::relu(conv1(x)), 2);
    x = torch::max_pool2d(torch::relu(conv2(x)), 2);
    x = x.flatten(1);
    x = torch::relu(fc1(x));
    x = torch::relu(fc2(x));
    return fc3(x);
  }
};
TORCH_MODULE(LeNet5);

void w4(std::vector<CaseSpec>& out, const Inputs& in) {
  struct M {
    LeNet5 net;
    torch::Tensor x, loss;
    TV grads;
  };
  for (bool grad : {false, true}) {
    out.push_back({"W4", "libtorch", grad ? "grad" : "primal", [&in, grad] {
                     auto m = std::make_shared<M>(M{LeNet5(in.w4), to_torch(in.w4.x), {}, {}});
                     Case c;
                     if (grad) {
                       c.run = [m] {
                         torch::Tensor y = m->net(m->x);
                         m->loss = (y * y).sum();
                         m->grads = torch::autograd::grad({m->loss}, m->net->parameters());
                       };
                       c.grad_norm = [m] { return norm(m->grads); };
                     } else {
                       c.run = [m] {
                         torch::NoGradGuard no_grad;
                         torch::Tensor y = m->net(m->x);
                         m->loss = (y * y).sum();
                       };
                     }
                     c.value = [m] { return m->loss.item<double>(); };
                     return c;
                   }});
  }
}

// ---- W6: nn::LSTM (2 layers, 64 -> 64) over [50, 256, 64]; the step is forward, backward, SGD.
void w6(std::vector<CaseSpec>& out, const Inputs& in) {
  struct M {
    torch::nn::LSTM lstm;
    torch::Tensor xs, loss;
    std::unique_ptr<torch::optim::SGD> sgd;
  };
  auto make = [&in] {
    const Lstm& p = in.w6;
    auto m = std::make_shared<M>(M{torch::nn::LSTM(torch::nn::LSTMOptions(Lstm::kInput, Lstm::kHidden).num_layers(2)),
                                   to_torch(p.xs), {}, nullptr});
    torch::NoGradGuard no_grad;
    auto named = m->lstm->named_parameters();
    for (int k = 0; k < 2; ++k) {
      std::string l = "_l" + std::to_string(k);
      named["weight_ih" + l].copy_(to_torch(p.w_ih[k]));
      named["weight_hh" + l].copy_(to_torch(p.w_hh[k]));
      named["bias_ih" + l].copy_(to_torch(p.b_ih[k]));
      named["bias_hh" + l].copy_(to_torch(p.b_hh[k]));
    }
    m->sgd = std::make_unique<torch::optim::SGD>(m->lstm->parameters(), torch::optim::SGDOptions(p.lr));
    return m;
  };
  out.push_back({"W6", "libtorch", "primal", [make] {
                   auto m = make();
                   Case c;
                   c.run = [m] {
                     torch::NoGradGuard no_grad;
                     torch::Tensor ys = std::get<0>(m->lstm->forward(m->xs));
                     m->loss = (ys * ys).sum();
                   };
                   c.value = [m] { return m->loss.item<double>(); };
                   return c;
                 }});
  out.push_back({"W6", "libtorch", "step", [make] {
                   auto m = make();
                   Case c;
                   c.run = [m] {
                     m->sgd->zero_grad();
                     torch::Tensor ys = std::get<0>(m->lstm->forward(m->xs));
                     m->loss = (ys * ys).sum();
                     m->loss.backward();
                     m->sgd->step();
                   };
                   c.value = [m] { return m->loss.item<double>(); };
                   return c;
                 }});
}

}  // namespace

void libtorch_set_threads(int n) { torch::set_num_threads(n); }

std::vector<CaseSpec> libtorch_cases(const Inputs& in) {
  std::vector<CaseSpec> out;
  const Buf& x = in.w1.x;
  both(out, "W1", [&x] { return TV{to_torch(x)}; }, [] { return TV{}; },
       [](const TV& p, const TV&) { return (p[0] * p[0]).sum(); });
  both(out, "W2", [&x] { return TV{to_torch(x)}; }, [] { return TV{torch::full({}, 2.0f)}; },
       [](const TV& p, const TV& d) { return torch::atan2(p[0], d[0]).sum(); });

  const Mlp& m = in.w3;
  both(out, "W3", [&m] { return TV{to_torch(m.W1), to_torch(m.b1), to_torch(m.W2), to_torch(m.b2)}; },
       [&m] { return TV{to_torch(m.x)}; },
       [](const TV& p, const TV& d) {
         torch::Tensor h = torch::tanh(torch::addmm(p[1], p[0], d[0]));
         torch::Tensor y = torch::addmm(p[3], p[2], h);
         return (y * y).sum();
       });

  w4(out, in);

  const ExpLayer& e = in.w5;
  both(out, "W5", [&e] { return TV{to_torch(e.W), to_torch(e.b)}; }, [&e] { return TV{to_torch(e.x)}; },
       [](const TV& p, const TV& d) { return torch::exp(torch::addmm(p[1], p[0], d[0])).sum(); });

  w6(out, in);

  // W7: the eager loop, one small op after another; the noise is split into scalars beforehand.
  const SmallLoop& l = in.w7;
  both(out, "W7", [&l] { return TV{to_torch(l.w1), to_torch(l.w2)}; },
       [&l] {
         TV d{torch::full({}, l.s0)};
         for (const torch::Tensor& n : to_torch(l.noise).unbind(0)) d.push_back(n);
         return d;
       },
       [](const TV& p, const TV& d) {
         torch::Tensor k1 = torch::softplus(p[0]), k2 = torch::softplus(p[1]);
         torch::Tensor s = d[0];
         for (size_t i = 1; i < d.size(); ++i) s = torch::sigmoid(torch::dot(k2, torch::sigmoid(s * k1))) + d[i];
         return s;
       });
  return out;
}

}  // namespace bench
