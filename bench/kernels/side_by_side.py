"""Side-by-side benchmark (make bench): flashref's fast engine, OpenBLAS standard attention and PyTorch's
scaled_dot_product_attention (its fused CPU flash kernel), fp32 and bf16, forward and backward, with the machine's
peaks (AVX-512 FMA loop, vdpbf16ps loop, AMX TDPBF16PS tile loop, torch's bf16 4096^3 matmul), in one run.

Usage: side_by_side.py BENCH_KERNELS_EXE [--decode-only]. --decode-only: only the decode line (read loop, then
decode at S1 = 1 and 8, fp32 and bf16), without the peaks and the table. For every shape the flashref numbers (bench_kernels --row) and the torch
numbers are measured back to back, so the load of a shared machine hits both alike: only the ratios of one run
count. B = 1, H = 16 (FLASHREF_BENCH_HEADS), S in {1024, 4096}, D in {64, 128}, causal and not; threads from
FLASHREF_BENCH_THREADS (default 2). GFLOP/s are wall clock, best of a few calls, FLOPs 4 B H S^2 D (half for causal),
backward 2.5 x forward. Prints one markdown table; a missing torch is reported loudly and the torch columns say so.
"""
import os
import subprocess
import sys
import time


def best_time(fn, reps):
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def torch_row(torch, F, H, S, D, causal, reps):
    """fwd fp32, fwd bf16, bwd fp32, bwd bf16 GFLOP/s of torch SDPA."""
    sdpa = torch.nn.functional.scaled_dot_product_attention
    out = []
    for bwd in (False, True):
        for dt in (torch.float32, torch.bfloat16):
            g = torch.Generator().manual_seed(1)
            q, k, v, dy = (torch.rand(1, H, S, D, generator=g, dtype=torch.float32).mul_(2).sub_(1).to(dt)
                           for _ in range(4))
            if not bwd:
                with torch.no_grad():
                    sdpa(q, k, v, is_causal=causal)  # warm-up
                    t = best_time(lambda: sdpa(q, k, v, is_causal=causal), reps)
                out.append((dt, bwd, F / t * 1e-9))
            else:
                for x in (q, k, v):
                    x.requires_grad_(True)
                o = sdpa(q, k, v, is_causal=causal)
                torch.autograd.grad(o, (q, k, v), dy, retain_graph=True)  # warm-up
                t = best_time(lambda: torch.autograd.grad(o, (q, k, v), dy, retain_graph=True), reps)
                out.append((dt, bwd, 2.5 * F / t * 1e-9))
    # order: fwd f32, fwd bf16, bwd f32, bwd bf16
    return [out[0][2], out[1][2], out[2][2], out[3][2]]


def main():
    exe = sys.argv[1]
    nt = int(os.environ.get("FLASHREF_BENCH_THREADS", "2"))
    H = int(os.environ.get("FLASHREF_BENCH_HEADS", "16"))
    env = dict(os.environ, FLASHREF_BENCH_THREADS=str(nt), FLASHREF_BENCH_HEADS=str(H))
    env.setdefault("OMP_WAIT_POLICY", "passive")
    try:
        import torch
        torch.set_num_threads(nt)
        why = None
    except Exception as e:  # noqa: BLE001 - any import failure means: no torch here
        torch, why = None, str(e)
    if torch is None:
        print(f"side_by_side: SKIPPED the PyTorch columns: torch is not importable ({why}); "
              "`make torch` installs it into build/venv", flush=True)

    def run(*args):
        r = subprocess.run([exe, *args], env=env, capture_output=True, text=True, check=True)
        return [float(x) for x in r.stdout.split()]

    load = os.getloadavg()
    print(f"side_by_side: {nt} threads, B = 1, H = {H}; load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f} "
          f"on {os.cpu_count()} CPUs; torch {torch.__version__ if torch else 'missing'}", flush=True)
    if "--decode-only" not in sys.argv[2:]:
        table(run, torch, nt, H)
    decode_line(run, nt)
    load = os.getloadavg()
    print(f"\nload average after: {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")


def table(run, torch, nt, H):
    fma, dpbf, amx = run("--peaks")
    mm = 0.0
    if torch is not None:
        a = torch.rand(4096, 4096).to(torch.bfloat16)
        b = torch.rand(4096, 4096).to(torch.bfloat16)
        torch.mm(a, b)
        mm = 2 * 4096 ** 3 / best_time(lambda: torch.mm(a, b), 3) * 1e-9
    print(f"peaks (GFLOP/s, {nt} threads): AVX-512 FMA loop {fma:.0f}, vdpbf16ps loop {dpbf:.0f}, "
          f"AMX TDPBF16PS loop {amx:.0f}, torch bf16 4096^3 matmul {mm:.0f}\n", flush=True)
    print("| S, D | fwd fp32 flashref / torch | fwd bf16 flashref / torch | bwd fp32 flashref / torch "
          "| bwd bf16 flashref / torch | fwd fp32 flashref / OpenBLAS std |")
    print("|---|---|---|---|---|---|")
    for S in (4096, 1024):
        for D in (128, 64):
            for causal in (False, True):
                F = 4.0 * H * S * S * D * (0.5 if causal else 1.0)
                reps = 2 if S >= 4096 else 4
                f = run("--row", str(S), str(D), "1" if causal else "0")
                t = torch_row(torch, F, H, S, D, causal, reps) if torch is not None else None
                cells = []
                for k in range(4):
                    if t is None:
                        cells.append(f"{f[k]:.0f} / skipped")
                    else:
                        cells.append(f"{f[k]:.0f} / {t[k]:.0f} = {f[k] / t[k]:.2f}x")
                cells.append(f"{f[0]:.0f} / {f[4]:.0f} = {f[0] / f[4]:.2f}x")
                print(f"| {S}, {D}{' causal' if causal else ''} | " + " | ".join(cells) + " |", flush=True)


def decode_line(run, nt):
    bw, d32, d16, e32, e16 = run("--decode")
    print(f"\ndecode (S2 = 128K, N1 = N2 = 8, D = 128; K and V bytes read per second), against the read bandwidth "
          f"measured just before it ({bw:.1f} GB/s, sum over 1 GiB on {nt} threads): S1 = 1: fp32 {d32:.1f} GB/s = "
          f"{100 * d32 / bw:.0f}%, bf16 {d16:.1f} GB/s = {100 * d16 / bw:.0f}%; S1 = 8: fp32 {e32:.1f} GB/s = "
          f"{100 * e32 / bw:.0f}%, bf16 {e16:.1f} GB/s = {100 * e16 / bw:.0f}%")


if __name__ == "__main__":
    main()
