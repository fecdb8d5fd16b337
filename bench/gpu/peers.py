"""The kernels of fluxion_gpu_kernels in PyTorch (CUDA) and JAX (jit), products in FP32 and TF32
in both (and of f16 and bf16 operands), on the same GPU, printing the same RES lines: square f32 products, a 64 MB map, row
sums, column sums, a whole-array sum and an embedding gradient (scatter-add of 16,384 rows). Each peer is skipped when its package or a GPU is missing.
usage: python3 bench/gpu/peers.py [N...]   (product sizes, default 1024 2048 4096)"""
import statistics
import sys
import time

SIDE = 4096  # 64 MB of f32
BYTES = 4.0 * SIDE * SIDE
TOKENS, WIDTH, VOCAB = 16384, 128, 65  # GPT's token-embedding gradient at batch 256
EMBEDDING_BYTES = 4.0 * TOKENS * WIDTH + 4.0 * TOKENS


def token_ids():
    return [(k * 7919 + k // 3) % VOCAB for k in range(TOKENS)]


def timed(call, sync, repeat=9):
    call(), call()
    sync()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        sync()
        times.append((time.perf_counter() - start) * 1e6)
    return statistics.median(times), min(times)


def report(peer, kernel, size, median_us, min_us, amount, unit):
    print(f"RES\t{peer}-{kernel}\t{size}\tmedian_us {median_us:.1f}\tmin_us {min_us:.1f}\t{unit} {amount / min_us / 1e6:.2f}",
          flush=True)


def torch_peer(sizes):
    import torch
    if not torch.cuda.is_available():
        return
    sync = torch.cuda.synchronize
    for tf32 in (False, True):
        torch.backends.cuda.matmul.allow_tf32 = tf32
        name = "torch-tf32" if tf32 else "torch"
        for n in sizes:
            a = torch.rand(n, n, device="cuda") - 0.5
            b = torch.rand(n, n, device="cuda") - 0.5
            report(name, "matmul", n, *timed(lambda: a @ b, sync), 2.0 * n ** 3, "TFLOP/s")
    # 16-bit products as PyTorch runs them by default (cuBLAS on tensor cores).
    for dtype, kernel in ((torch.float16, "matmul_f16"), (torch.bfloat16, "matmul_bf16")):
        for n in sizes:
            a = (torch.rand(n, n, device="cuda") - 0.5).to(dtype)
            b = (torch.rand(n, n, device="cuda") - 0.5).to(dtype)
            times = timed(lambda: a @ b, sync)
            report("torch", kernel, n, *times, 2.0 * n ** 3, "TFLOP/s")
            if dtype == torch.float16:
                # The same product: PyTorch lets cuBLAS reduce f16 products in f16 by default
                # (allow_fp16_reduced_precision_reduction), as fx::F16Sums allows.
                report("torch", "matmul_f16_sums", n, *times, 2.0 * n ** 3, "TFLOP/s")
    x = torch.rand(SIDE, SIDE, device="cuda")
    report("torch", "map", SIDE * SIDE, *timed(lambda: x * 1.5 + 0.5, sync), BYTES * 1e3, "GB/s")
    report("torch", "row_sums", SIDE, *timed(lambda: x.sum(1), sync), BYTES * 1e3, "GB/s")
    report("torch", "column_sums", SIDE, *timed(lambda: x.sum(0), sync), BYTES * 1e3, "GB/s")
    report("torch", "sum", SIDE * SIDE, *timed(lambda: x.sum(), sync), BYTES * 1e3, "GB/s")
    u = torch.rand(TOKENS, WIDTH, device="cuda")
    ids = torch.tensor(token_ids(), device="cuda")
    scatter = lambda: torch.zeros(VOCAB, WIDTH, device="cuda").index_add_(0, ids, u)
    report("torch", "embedding_grad", TOKENS, *timed(scatter, sync), EMBEDDING_BYTES * 1e3, "GB/s")


def jax_peer(sizes):
    import jax
    import jax.numpy as jnp
    if jax.default_backend() != "gpu":
        return
    key = jax.random.PRNGKey(0)

    def run(f, *args):
        return lambda: f(*args).block_until_ready()

    # JAX multiplies f32 matrices in TF32 on NVIDIA GPUs unless asked for full precision.
    for name, precision in (("jax", "highest"), ("jax-tf32", "default")):
        product = jax.jit(lambda a, b, p=precision: jnp.matmul(a, b, precision=p))
        for n in sizes:
            a = jax.random.uniform(key, (n, n)) - 0.5
            report(name, "matmul", n, *timed(run(product, a, a), lambda: None), 2.0 * n ** 3, "TFLOP/s")
    # 16-bit operands summed into f32, as Fluxion's matmul_f16 and matmul_bf16 are.
    for dtype, kernel in ((jnp.float16, "matmul_f16"), (jnp.bfloat16, "matmul_bf16")):
        product = jax.jit(lambda a, b: jnp.matmul(a, b, preferred_element_type=jnp.float32))
        for n in sizes:
            a = (jax.random.uniform(key, (n, n)) - 0.5).astype(dtype)
            report("jax", kernel, n, *timed(run(product, a, a), lambda: None), 2.0 * n ** 3, "TFLOP/s")
    x = jax.random.uniform(key, (SIDE, SIDE))
    for kernel, f in (("map", lambda v: v * 1.5 + 0.5), ("row_sums", lambda v: v.sum(1)),
                      ("column_sums", lambda v: v.sum(0)), ("sum", lambda v: v.sum())):
        size = SIDE if kernel.endswith("_sums") else SIDE * SIDE
        report("jax", kernel, size, *timed(run(jax.jit(f), x), lambda: None), BYTES * 1e3, "GB/s")
    u = jax.random.uniform(key, (TOKENS, WIDTH))
    ids = jnp.array(token_ids())
    scatter = jax.jit(lambda u, i: jnp.zeros((VOCAB, WIDTH)).at[i].add(u))
    report("jax", "embedding_grad", TOKENS, *timed(run(scatter, u, ids), lambda: None), EMBEDDING_BYTES * 1e3,
           "GB/s")


def main():
    sizes = [int(a) for a in sys.argv[1:]] or [1024, 2048, 4096]
    for peer in (torch_peer, jax_peer):
        try:
            peer(sizes)
        except ImportError as e:
            print(f"# {peer.__name__}: {e}", flush=True)


if __name__ == "__main__":
    main()
