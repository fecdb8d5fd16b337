"""W1-W7 and gpt_train's training step (batch 16 and 256) in PyTorch (CUDA, eager autograd; FP32,
and TF32 for the workloads with products) and JAX (jit, FP32 products), on the same GPU as
fluxion_gpu_bench, printing its lines:
  WL <tab> system <tab> workload <tab> mode <tab> median_us <tab> min_us <tab> first_ms
With --cpu-threads, PyTorch on the CPU instead, at each thread count (system "torch-cpu@N";
W1-W6 and the GPT step at batch 16 unless --workloads names others: eager W7 takes about a
second a call there). JAX is not
run on the CPU: its thread count is fixed when it starts.
Shapes are those of docs/performance.md; inputs are random (times do not depend on the values).
Each peer is skipped when its package or a GPU is missing.
usage: python3 bench/gpu/workload_peers.py [--time S] [--workloads W1,...,GPT] [--cpu-threads 1,2,...]"""
import argparse
import statistics
import time

parser = argparse.ArgumentParser()
parser.add_argument("--time", type=float, default=0.3)
parser.add_argument("--workloads")
parser.add_argument("--cpu-threads")
args = parser.parse_args()
CPU_THREADS = [int(n) for n in args.cpu_threads.split(",")] if args.cpu_threads else []
WANTED = set((args.workloads or ("W1,W2,W3,W4,W5,W6,GPT" if CPU_THREADS else "W1,W2,W3,W4,W5,W6,W7,GPT")).split(","))
W7_STEPS = 8000
PRODUCTS = {"W3", "W4", "W5", "W6", "GPT"}  # the workloads TF32 changes


def measure(call, sync, budget):
    start = time.perf_counter()
    call()
    sync()
    first_ms = (time.perf_counter() - start) * 1e3
    call()
    sync()
    times = []
    begin = time.perf_counter()
    while len(times) < 3 or (time.perf_counter() - begin < budget and len(times) < 2000):
        start = time.perf_counter()
        call()
        sync()
        times.append((time.perf_counter() - start) * 1e6)
    return statistics.median(times), min(times), first_ms


def cell(system, workload, mode, call, sync, budget=None):
    try:
        median, least, first = measure(call, sync, args.time if budget is None else budget)
        print(f"WL\t{system}\t{workload}\t{mode}\t{median:.1f}\t{least:.1f}\t{first:.1f}", flush=True)
    except Exception as e:  # report and go on
        print(f"ERR\t{system}\t{workload}\t{mode}\t{e!r}"[:300], flush=True)


def torch_workloads(tf32):
    import torch
    if not torch.cuda.is_available():
        return
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    torch_cells(torch, "torch-tf32" if tf32 else "torch", WANTED & PRODUCTS if tf32 else WANTED,
                torch.device("cuda"), torch.cuda.synchronize)


def torch_cpu_workloads():
    import torch
    for threads in CPU_THREADS:
        torch.set_num_threads(threads)
        torch_cells(torch, f"torch-cpu@{threads}", WANTED, torch.device("cpu"), lambda: None)


def torch_cells(torch, system, wanted, dev, sync):
    import torch.nn.functional as F
    gen = torch.Generator().manual_seed(0)

    def rand(*shape, scale=1.0):
        return (torch.randn(*shape, generator=gen) * scale).to(dev)

    def grad_of(loss, params):
        return lambda: torch.autograd.grad(loss(), params)

    def both(workload, loss, params):
        cell(system, workload, "primal", lambda: loss().detach(), sync)
        cell(system, workload, "grad", grad_of(loss, params), sync)

    if "W1" in wanted:
        x = rand(28, 28, 1, 128).requires_grad_()
        both("W1", lambda: (x * x).sum(), [x])
    if "W2" in wanted:
        x = rand(28, 28, 1, 128).requires_grad_()
        two = torch.full_like(x, 2.0)
        both("W2", lambda: torch.atan2(x, two).sum(), [x])
    if "W3" in wanted:
        x = rand(784, 128)
        p = [rand(32, 784, scale=0.05), rand(32, 1), rand(10, 32, scale=0.2), rand(10, 1)]
        for t in p:
            t.requires_grad_()
        both("W3", lambda: (p[2] @ torch.tanh(p[0] @ x + p[1]) + p[3]).square().sum(), p)
    if "W4" in wanted:
        x = rand(128, 1, 28, 28)
        p = [rand(6, 1, 5, 5, scale=0.2), rand(6), rand(16, 6, 5, 5, scale=0.1), rand(16), rand(120, 256, scale=0.06),
             rand(120), rand(84, 120, scale=0.09), rand(84), rand(10, 84, scale=0.1), rand(10)]
        for t in p:
            t.requires_grad_()

        def lenet():
            h = F.max_pool2d(F.relu(F.conv2d(x, p[0], p[1])), 2)
            h = F.max_pool2d(F.relu(F.conv2d(h, p[2], p[3])), 2).flatten(1)
            h = F.relu(F.linear(F.relu(F.linear(h, p[4], p[5])), p[6], p[7]))
            return F.linear(h, p[8], p[9]).square().sum()
        both("W4", lenet, p)
    if "W5" in wanted:
        x = rand(512, 4096, scale=0.01)
        p = [rand(256, 512, scale=0.01).requires_grad_(), rand(256, 1).requires_grad_()]
        both("W5", lambda: torch.exp(p[0] @ x + p[1]).sum(), p)
    if "W6" in wanted:
        lstm = torch.nn.LSTM(64, 64, num_layers=2).to(dev)
        sgd = torch.optim.SGD(lstm.parameters(), lr=1e-3)
        xs = rand(50, 256, 64)

        def lstm_step():
            sgd.zero_grad(set_to_none=True)
            loss = lstm(xs)[0].square().sum()
            loss.backward()
            sgd.step()
            return loss.detach()
        cell(system, "W6", "step", lstm_step, sync)
    if "GPT" in wanted:
        gpt_steps(torch, F, system, dev, sync, gen)
    if "W7" in wanted:
        noise = (torch.randn(W7_STEPS, generator=gen) * 0.01).tolist()
        w = [rand(1, 12).requires_grad_(), rand(12, 1).requires_grad_()]

        def loop():
            s = torch.zeros(1, 1, device=dev)
            k1, k2 = F.softplus(w[0]), F.softplus(w[1])
            for n in noise:
                s = torch.sigmoid(torch.sigmoid(s @ k1) @ k2) + n
            return s.sum()
        # Eager W7 takes about a second a call: the fewest calls measure allows.
        cell(system, "W7", "primal", lambda: loop().detach(), sync, budget=0.0)
        cell(system, "W7", "grad", grad_of(loop, w), sync, budget=0.0)


def gpt_steps(torch, F, system, dev, sync, gen):
    """gpt_train's model (samples/common/gpt.cpp) as PyTorch layers: width 128, 4 heads, 4 pre-norm
    blocks, context 64, 96 tokens, dropout 0.1; AdamW (0.9, 0.95) decaying matrices, clipping 1.0.
    At batch 16 and 256 on a GPU, at batch 16 on the CPU."""
    vocab, context, width, blocks = 96, 64, 128, 4

    class Gpt(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.tok = torch.nn.Embedding(vocab, width)
            self.pos = torch.nn.Parameter(torch.randn(context, width) * 0.02)
            self.drop = torch.nn.Dropout(0.1)
            self.blocks = torch.nn.ModuleList([torch.nn.TransformerEncoderLayer(
                width, 4, 4 * width, 0.1, activation="gelu", batch_first=True, norm_first=True)
                for _ in range(blocks)])
            self.norm = torch.nn.LayerNorm(width)
            self.head = torch.nn.Linear(width, vocab)
            self.register_buffer("mask", torch.nn.Transformer.generate_square_subsequent_mask(context))

        def forward(self, x):
            h = self.drop(self.tok(x) + self.pos[: x.shape[1]])
            for b in self.blocks:
                h = b(h, src_mask=self.mask)
            return self.head(self.norm(h))

    model = Gpt().to(dev)
    named = list(model.named_parameters())
    adamw = torch.optim.AdamW([{"params": [p for _, p in named if p.dim() >= 2], "weight_decay": 0.1},
                               {"params": [p for _, p in named if p.dim() < 2], "weight_decay": 0.0}],
                              lr=1e-3, betas=(0.9, 0.95))
    for batch in (16,) if dev.type == "cpu" else (16, 256):
        data = [(torch.randint(0, vocab, (batch, context), generator=gen).to(dev),
                 torch.randint(0, vocab, (batch, context), generator=gen).to(dev)) for _ in range(4)]
        turn = [0]

        def step():
            x, y = data[turn[0] % 4]
            turn[0] += 1
            adamw.zero_grad(set_to_none=True)
            loss = F.cross_entropy(model(x).reshape(-1, vocab), y.reshape(-1))
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            adamw.step()
            return loss.detach()
        cell(system, f"GPT-b{batch}", "step", step, sync)


def jax_workloads():
    import jax
    import jax.numpy as jnp
    from jax import lax
    if jax.default_backend() != "gpu":
        return
    # JAX multiplies f32 matrices in TF32 on NVIDIA GPUs unless asked for full precision.
    jax.config.update("jax_default_matmul_precision", "highest")
    system = "jax"
    key = [jax.random.PRNGKey(0)]

    def rand(*shape, scale=1.0):
        key[0], k = jax.random.split(key[0])
        return jax.random.normal(k, shape, jnp.float32) * scale

    def jitted(workload, mode, f, *a):
        jf = jax.jit(f)
        cell(system, workload, mode, lambda: jax.block_until_ready(jf(*a)), lambda: None)

    def both(workload, loss, argnums, *a):
        jitted(workload, "primal", loss, *a)
        jitted(workload, "grad", jax.value_and_grad(loss, argnums=argnums), *a)

    if "W1" in WANTED:
        both("W1", lambda x: jnp.sum(x * x), 0, rand(28, 28, 1, 128))
    if "W2" in WANTED:
        both("W2", lambda x: jnp.sum(jnp.arctan2(x, 2.0)), 0, rand(28, 28, 1, 128))
    if "W3" in WANTED:
        both("W3", lambda W1, b1, W2, b2, x: jnp.sum(jnp.square(W2 @ jnp.tanh(W1 @ x + b1) + b2)), (0, 1, 2, 3),
             rand(32, 784, scale=0.05), rand(32, 1), rand(10, 32, scale=0.2), rand(10, 1), rand(784, 128))
    if "W4" in WANTED:
        def conv(x, w, b):
            y = lax.conv_general_dilated(x, w, (1, 1), "VALID", dimension_numbers=("NCHW", "OIHW", "NCHW"))
            return jax.nn.relu(y + b[None, :, None, None])

        def pool(x):
            return lax.reduce_window(x, -jnp.inf, lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")

        def lenet(p, x):
            h = pool(conv(pool(conv(x, p[0], p[1])), p[2], p[3])).reshape(x.shape[0], -1)
            h = jax.nn.relu(jax.nn.relu(h @ p[4].T + p[5]) @ p[6].T + p[7])
            return jnp.sum(jnp.square(h @ p[8].T + p[9]))
        p = [rand(6, 1, 5, 5, scale=0.2), rand(6), rand(16, 6, 5, 5, scale=0.1), rand(16),
             rand(120, 256, scale=0.06), rand(120), rand(84, 120, scale=0.09), rand(84), rand(10, 84, scale=0.1),
             rand(10)]
        both("W4", lenet, 0, p, rand(128, 1, 28, 28))
    if "W5" in WANTED:
        both("W5", lambda W, b, x: jnp.sum(jnp.exp(W @ x + b)), (0, 1), rand(256, 512, scale=0.01), rand(256, 1),
             rand(512, 4096, scale=0.01))
    if "W6" in WANTED:
        hidden = 64

        def layer(params, xs):
            w_ih, w_hh, b = params
            projected = xs @ w_ih.T + b

            def body(carry, xt):
                h, c = carry
                i, f, g, o = jnp.split(xt + h @ w_hh.T, 4, axis=-1)
                c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
                h = jax.nn.sigmoid(o) * jnp.tanh(c)
                return (h, c), h
            zero = jnp.zeros((xs.shape[1], hidden), xs.dtype)
            return lax.scan(body, (zero, zero), projected)[1]

        def loss(params, x):
            return jnp.sum(jnp.square(layer(params[1], layer(params[0], x))))

        def step(params, x):
            value, grads = jax.value_and_grad(loss)(params, x)
            return value, jax.tree_util.tree_map(lambda p, d: p - 1e-3 * d, params, grads)
        params = [(rand(4 * hidden, 64, scale=0.1), rand(4 * hidden, hidden, scale=0.1), rand(4 * hidden, scale=0.1))
                  for _ in range(2)]
        jitted("W6", "step", step, params, rand(50, 256, 64))
    if "W7" in WANTED:
        def loop(w1, w2, noise):
            k1, k2 = jax.nn.softplus(w1), jax.nn.softplus(w2)
            return lax.scan(lambda s, n: (jax.nn.sigmoid(jnp.dot(k2, jax.nn.sigmoid(s * k1))) + n, None),
                            jnp.float32(0), noise)[0]
        both("W7", loop, (0, 1), rand(12), rand(12), rand(W7_STEPS, scale=0.01))


def main():
    peers = [torch_cpu_workloads] if CPU_THREADS else [lambda: torch_workloads(False), lambda: torch_workloads(True),
                                                        jax_workloads]
    for peer in peers:
        try:
            peer()
        except ImportError as e:
            print(f"# {e}", flush=True)


if __name__ == "__main__":
    main()
