"""The GPU benchmark's one table: reads what run_device.sh left in OUT (fluxion_gpu_bench's and
workload_peers.py's WL lines, fluxion_gpu_kernels' and peers.py's RES lines), prints Markdown
tables (workloads by median, kernels by minimum microseconds) with Fluxion's ratio to the
fastest FP32 peer, and the host CPU's table (Fluxion's CPU backend beside PyTorch on the CPU at
each thread count, "system@threads"), and writes every measurement to OUT/gpu_bench.json.
usage: python3 bench/gpu/table.py OUT"""
import json
import os
import sys

FP32_PEERS = ("torch", "jax")
WORKLOAD_SYSTEMS = ("fluxion-vulkan", "torch", "torch-tf32", "jax")
KERNEL_SYSTEMS = ("fluxion-vulkan", "fluxion-vulkan-coop", "torch", "torch-tf32", "jax", "jax-tf32")


def lines(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [line.rstrip("\n").split("\t") for line in f]


def number(field):  # "median_us 12.5" or "12.5"
    return float(field.split()[-1])


def read(out):
    records = []
    for name in ("workloads.txt", "workload_peers.txt", "cpu_workloads.txt", "cpu_peers.txt"):
        for f in lines(os.path.join(out, name)):
            if f[0] == "WL" and len(f) == 7:
                records.append({"kind": "workload", "system": f[1], "workload": f[2], "mode": f[3],
                                "median_us": float(f[4]), "min_us": float(f[5]), "first_ms": float(f[6])})
    for name in ("kernels.txt", "peers.txt"):
        for f in lines(os.path.join(out, name)):
            if f[0] != "RES":
                continue
            tag = f[1] if len(f) == 7 else None
            f = f[2:] if tag else f[1:]
            system, _, kernel = f[0].rpartition("-")
            if tag == "cooperative" and kernel.startswith("matmul_"):
                system = "fluxion-vulkan-coop"
            elif tag not in (None, "planner"):
                continue  # a rules file's sweep, or a kernel cooperative matrices do not change
            records.append({"kind": "kernel", "system": system or "fluxion-vulkan", "kernel": kernel,
                            "size": int(f[1]), "median_us": number(f[2]), "min_us": number(f[3]),
                            "rate": f[4]})
    return records


def ratio(records, key, value):
    ours = records.get(("fluxion-vulkan",) + key)
    peers = [records[(p,) + key] for p in FP32_PEERS if (p,) + key in records]
    if ours is None or not peers:
        return "-"
    return f"{ours[value] / min(p[value] for p in peers):.2f}x"


def table(header, rows):
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for r in rows:
        print("| " + " | ".join(r) + " |")
    print()


def cpu_table(cells, workloads):
    """Rows by workload, mode and thread count: Fluxion's and PyTorch's medians, their ratio, and
    Fluxion's speed-up over its own time at the fewest threads measured."""
    threads = sorted({int(s.rpartition("@")[2]) for s, _, _ in cells if s.startswith(("fluxion-cpu@", "torch-cpu@"))})
    if not threads:
        return
    print("Host CPU, median microseconds per call (Fluxion: CPU backend; PyTorch: eager, CPU)\n")
    rows = []
    for w, m in workloads:
        base = cells.get((f"fluxion-cpu@{threads[0]}", w, m))
        for n in threads:
            ours, torch = cells.get((f"fluxion-cpu@{n}", w, m)), cells.get((f"torch-cpu@{n}", w, m))
            if not ours and not torch:
                continue
            rows.append([w, m, str(n), f"{ours['median_us']:,.0f}" if ours else "-",
                         f"{torch['median_us']:,.0f}" if torch else "-",
                         f"{ours['median_us'] / torch['median_us']:.2f}x" if ours and torch else "-",
                         f"{base['median_us'] / ours['median_us']:.2f}x" if ours and base else "-"])
    table(["workload", "mode", "threads", "Fluxion", "PyTorch", "Fluxion / PyTorch",
           f"Fluxion speed-up over {threads[0]} thread(s)"], rows)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "."
    records = read(out)
    cells = {}
    for r in records:
        if r["kind"] == "workload":
            cells[(r["system"], r["workload"], r["mode"])] = r
        else:
            cells[(r["system"], r["kernel"], r["size"])] = r
    fmt = lambda r, value: f"{r[value]:,.0f}" if r else "-"
    modes = {"primal": 0, "grad": 1, "step": 2}
    workloads = sorted({(r["workload"], r["mode"]) for r in records if r["kind"] == "workload"},
                       key=lambda wm: (wm[0], modes.get(wm[1], 3)))
    print("Workloads, median microseconds per call (Fluxion: Vulkan, arguments on the device)\n")
    table(["workload", "mode"] + list(WORKLOAD_SYSTEMS) + ["Fluxion / best FP32 peer"],
          [[w, m] + [fmt(cells.get((s, w, m)), "median_us") for s in WORKLOAD_SYSTEMS] +
           [ratio(cells, (w, m), "median_us")] for w, m in workloads
           if any((s, w, m) in cells for s in WORKLOAD_SYSTEMS)])
    kernels = sorted({(r["kernel"], r["size"]) for r in records if r["kind"] == "kernel"})
    print("Kernels, minimum microseconds of 9 calls (operands on the device)\n")
    table(["kernel", "size"] + list(KERNEL_SYSTEMS) + ["Fluxion / best FP32 peer", "Fluxion rate"],
          [[k, str(n)] + [fmt(cells.get((s, k, n)), "min_us") for s in KERNEL_SYSTEMS] +
           [ratio(cells, (k, n), "min_us"), cells.get(("fluxion-vulkan", k, n), {}).get("rate", "-")]
           for k, n in kernels])
    cpu_table(cells, workloads)
    path = os.path.join(out, "gpu_bench.json")
    with open(path + ".tmp", "w") as f:
        json.dump(records, f, indent=1)
    os.replace(path + ".tmp", path)
    print(f"{len(records)} measurements in {path}")


if __name__ == "__main__":
    main()
