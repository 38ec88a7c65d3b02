"""All-reduce bus bandwidth across this machine's GPUs: one process per GPU, PyTorch
distributed (NCCL on GPUs, gloo on CPUs for a machine without any).

Self-contained (imports only torch and the standard library) so that it runs as
`python3 -c "$(cat allreduce_worker.py)" ARGS` inside a deployment's image, where repro is not
installed, as well as with the host's torch. Prints one JSON object (rank 0) on stdout.

Bandwidth as nccl-tests defines it (doc/PERFORMANCE.md): algbw = bytes / time, and for
all-reduce busbw = algbw * 2 (n - 1) / n, the figure comparable with the link's peak.

    python3 allreduce_worker.py --ranks 8 --sizes 1048576,1073741824 --backend nccl
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import time


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _measure(rank: int, args: argparse.Namespace, port: int) -> None:
    import torch
    import torch.distributed as dist

    dist.init_process_group(
        args.backend, init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=args.ranks
    )
    on_gpu = args.backend == "nccl"
    device = torch.device("cuda", rank) if on_gpu else torch.device("cpu")
    if on_gpu:
        torch.cuda.set_device(device)

    def sync() -> None:
        if on_gpu:
            torch.cuda.synchronize(device)

    points = []
    for size in args.sizes:
        tensor = torch.ones(max(1, size // 4), dtype=torch.float32, device=device)
        for _ in range(args.warmup):
            dist.all_reduce(tensor)
        sync()
        dist.barrier()
        start = time.perf_counter()
        for _ in range(args.iters):
            dist.all_reduce(tensor)
        sync()
        seconds = (time.perf_counter() - start) / args.iters
        nbytes = tensor.numel() * tensor.element_size()
        algbw = nbytes / seconds / 1e9
        points.append(
            {
                "size_bytes": nbytes,
                "time_us": seconds * 1e6,
                "algbw_gbps": algbw,
                "busbw_gbps": algbw * 2 * (args.ranks - 1) / args.ranks,
            }
        )
    if rank == 0:
        versions: dict[str, str] = {"torch": str(torch.__version__)}
        if on_gpu:
            versions["nccl"] = ".".join(str(v) for v in torch.cuda.nccl.version())
        print(json.dumps({"points": points, "versions": versions}), flush=True)
    dist.destroy_process_group()


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description="all-reduce bus bandwidth probe")
    parser.add_argument("--ranks", type=int, required=True)
    parser.add_argument("--sizes", type=lambda s: [int(x) for x in s.split(",")], required=True)
    parser.add_argument("--backend", choices=("nccl", "gloo"), default="nccl")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--iters", type=int, default=20)
    args = parser.parse_args(argv)
    import torch.multiprocessing as mp

    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    # fork, not spawn: under `python3 -c` (inside an image) there is no main file to re-import;
    # the parent never touches CUDA, so forking is safe.
    mp.start_processes(
        _measure, args=(args, _free_port()), nprocs=args.ranks, join=True, start_method="fork"
    )


if __name__ == "__main__":
    main(sys.argv[1:])
