"""Client CPU per streamed event on SGLang's real `/generate` stream: repro vs bench_serving.

The stream is benchmarks/sglang_stream_server.py: SGLang 0.5.23's default chunks (cumulative
`text` and `output_ids`, a full `meta_info` on each), one batched step every `--step-ms` (10),
`--streams` (256) concurrent requests of `--tokens` (256) tokens, with 1 and then 4 tokens per
chunk. Unlike benchmarks/bench_client.py's replay of a short stream, each chunk here grows to
the length of a real one (~2.5 kB at 256 tokens), so the cost of reading it counts.

Against the same server, one after the other, three clients each run a one-request warmup
and then `--streams` requests all at once, as `sglang.benchmark.serving` does:
- repro's StreamClient (this file, `--our-client`, the code `repro bench` runs);
- bench_serving's Python client (`python -m sglang.benchmark.serving --backend sglang`);
- its Rust client (the same with `--rust-client`).
Client and server are pinned to different cores (`--client-cpu`, `--server-cpu`; the client
before it starts, so the Rust client sizes its Tokio pool to that one core). The server reads
the client process's CPU time (all its threads, user + system, from /proc/PID/task; a thread
that ends meanwhile counts what it had used at the server's last step) when the measured
batch's first stream opens and 20 ms after its last one closes, and counts the chunks it sent
meanwhile: CPU per event = that CPU time / those chunks (beside it, the user and system split
from /proc/PID/stat, in 10 ms ticks). Imports, warmup and the report a client prints
afterwards are not counted. For repro's client it also checks per-event timing: its median ITL
(gap between token-carrying events) against the median gap between a stream's chunks as the
server wrote them to the socket (target: within 0.01 ms; also per half of a stream), and its
per-token median ITL (each gap spread over the tokens its chunk carried) against
bench_serving's own `median_itl_ms` on the same stream (target: within 5%).

bench_serving runs with `--bench-python` (default: $BENCH_SERVING_PYTHON, else
/tmp/benchvenv/bin/python, else this interpreter) when `sglang.benchmark.serving` imports
there; otherwise the script says so and measures repro's client alone. A venv for it:
    python -m venv /tmp/benchvenv && /tmp/benchvenv/bin/pip install torch==2.13.0
    /tmp/benchvenv/bin/pip install --no-deps sglang==0.5.23
    /tmp/benchvenv/bin/pip install transformers aiohttp orjson msgspec requests tqdm uvloop \
        pybase64 psutil pillow starlette pyzmq ipython datasets torchvision apache-tvm-ffi \
        sentencepiece compressed-tensors gguf triton
(the imports `sglang.benchmark.serving` pulls in; no model is needed: a word-level tokenizer
is written to a temporary folder). The Rust client can also run from its extension alone,
`--rust-so sglang/srt/rust_extensions/_bench.cpython-311-x86_64-linux-gnu.so` under a Python
3.11 `--rust-python` (benchmarks/sglang_rust_client.py loads it as `python -m
sglang.benchmark.rust_client` does, without the sglang package). Run:
    .venv/bin/python benchmarks/bench_client_cpu.py [--per-chunk 1,4] [--repeats 1]
On the lent H200 host (16 quiet cores): benchmarks/on_device.sh; its output there is in
benchmarks/results/client_cpu_h200_host.txt.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "src"))

from repro.bench.client.stream import StreamClient, measure  # noqa: E402
from repro.bench.client.wire import generate_body  # noqa: E402
from repro.bench.metrics import per_token_itl  # noqa: E402
from repro.bench.prompts.sets import bench_prompts  # noqa: E402
from tests.support.ports import free_port  # noqa: E402

SERVER = Path(__file__).with_name("sglang_stream_server.py")
RUST_RUNNER = Path(__file__).with_name("sglang_rust_client.py")


def _post(url: str, body: dict[str, Any] | None = None) -> Any:
    data = json.dumps(body).encode() if body is not None else None
    with urllib.request.urlopen(urllib.request.Request(url, data=data), timeout=10) as resp:
        return json.loads(resp.read())


def our_client(url: str, streams: int, tokens: int) -> None:
    """`--our-client`: a warmup request, then the measured batch; prints its timing as JSON."""
    prompts = bench_prompts("random", streams, 32, seed=0)
    bodies = [generate_body(p, tokens, temperature=0.0, ignore_eos=True) for p in prompts]

    async def go() -> list[Any]:
        async with StreamClient(url, "generate", read_timeout=120) as client:
            await client.run(bodies[:1], 1)
            await asyncio.sleep(0.2)  # the server's busy period of the warmup ends
            return (await client.run(bodies, streams)).results

    results = measure(go())
    itl = [gap for r in results if r.ok for gap in r.chunk_gap_s]
    halves: tuple[list[float], list[float]] = ([], [])  # as the stream server splits them
    for r in results:
        done = 1  # the first event's token
        for gap, new in zip(r.chunk_gap_s, r.chunk_tokens, strict=True):
            done += new
            halves[2 * done > tokens].append(gap)
    per_token = [t for r in results if r.ok for t in per_token_itl(r.chunk_gap_s, r.chunk_tokens)]
    print(json.dumps({
        "failed": sum(not r.ok for r in results),
        "median_itl_ms": float(np.median(itl)) * 1e3 if itl else None,
        "median_token_itl_ms": float(np.median(per_token)) * 1e3 if per_token else None,
        "median_itl_halves_ms": [float(np.median(h)) * 1e3 if h else None for h in halves],
        "itl_pct_ms": [float(x) * 1e3 for x in np.percentile(itl, [1, 10, 25, 50, 75, 90, 99])]
        if itl else [],
    }))  # fmt: skip


def _tokenizer(folder: Path) -> Path:
    """A word-level tokenizer (tokenizers' JSON format) for bench_serving's random-ids prompts."""
    vocab = {"<unk>": 0, **{f"w{i}": i for i in range(1, 4096)}}
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "tokenizer.json").write_text(json.dumps({
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [{"id": 0, "content": "<unk>", "single_word": False, "lstrip": False,
                          "rstrip": False, "normalized": False, "special": True}],
        "normalizer": None, "pre_tokenizer": {"type": "WhitespaceSplit"},
        "post_processor": None, "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": False},
        "model": {"type": "WordLevel", "vocab": vocab, "unk_token": "<unk>"},
    }))  # fmt: skip
    (folder / "tokenizer_config.json").write_text(
        json.dumps({"tokenizer_class": "PreTrainedTokenizerFast", "unk_token": "<unk>"})
    )
    return folder


def _bench_python(arg: str | None) -> str | None:
    """The first python where sglang.benchmark.serving imports (only `arg` when given)."""
    default = [os.environ.get("BENCH_SERVING_PYTHON"), "/tmp/benchvenv/bin/python", sys.executable]
    for python in [arg] if arg else default:
        if python and Path(python).exists():
            check = [python, "-W", "ignore", "-c", "import sglang.benchmark.serving"]
            if subprocess.run(check, capture_output=True).returncode == 0:
                return python
    return None


class Bench:
    def __init__(self, args: argparse.Namespace, tmp: Path) -> None:
        self.args, self.tmp = args, tmp
        self.bench_python = _bench_python(args.bench_python)
        self.tokenizer = _tokenizer(tmp / "tokenizer")
        self.itl_error_ms: dict[int, list[float]] = {}  # repro's median ITL - the server's

    def commands(self, url: str) -> dict[str, list[str]]:
        a = self.args
        ours = [sys.executable, __file__, "--our-client", url, str(a.streams), str(a.tokens)]
        out: dict[str, list[str]] = {"repro": ours}
        flags = [
            "--backend", "sglang", "--base-url", url, "--model", "bench",
            "--tokenizer", str(self.tokenizer), "--dataset-name", "random-ids",
            "--random-input-len", "32", "--random-output-len", str(a.tokens),
            "--random-range-ratio", "1", "--num-prompts", str(a.streams),
            "--max-concurrency", str(a.streams), "--disable-tqdm",
        ]  # fmt: skip
        rust_out = ["--output-file", str(self.tmp / "rust.jsonl")]
        if self.bench_python:
            serving = [self.bench_python, "-W", "ignore", "-m", "sglang.benchmark.serving", *flags]
            out["bench_serving"] = [*serving, "--output-file", str(self.tmp / "py.jsonl")]
            out["bench_serving --rust-client"] = [*serving, *rust_out, "--rust-client"]
        if a.rust_so:
            runner = [a.rust_python or sys.executable, str(RUST_RUNNER), a.rust_so]
            out["bench_serving --rust-client"] = [*runner, *flags, *rust_out]
        return out

    def one(self, url: str, argv: list[str]) -> tuple[dict[str, float], str]:
        cpu = self.args.client_cpu
        proc = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            preexec_fn=lambda: os.sched_setaffinity(0, {cpu}),
            env={**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONWARNINGS": "ignore"},
        )  # fmt: skip
        _post(url + "/_bench/watch", {"pid": proc.pid})
        out, err = proc.communicate(timeout=600)
        if proc.returncode != 0:
            raise SystemExit(f"{argv[:6]} failed ({proc.returncode}):\n{err[-3000:]}")
        periods = _post(url + "/_bench/stats")
        return max(periods, key=lambda p: p["events"]), out

    def run(self, per_chunk: int) -> dict[str, list[float]]:
        a = self.args
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        server = subprocess.Popen(
            [sys.executable, str(SERVER), str(port), str(per_chunk), str(a.step_ms)],
            preexec_fn=lambda: os.sched_setaffinity(0, {a.server_cpu}),
        )  # fmt: skip
        us: dict[str, list[float]] = {}
        token_itl: dict[str, list[float]] = {}
        try:
            _wait_up(url)
            print(f"{per_chunk} token(s) per chunk ({a.streams} streams x {a.tokens} tokens,"
                  f" {a.step_ms:g} ms steps):")  # fmt: skip
            print(
                "  client                          events  us_cpu/event (user+sys ticks)"
                "  median send gap  client median ITL"
            )
            for _ in range(a.repeats):
                for name, argv in self.commands(url).items():
                    period, out = self.one(url, argv)
                    per_event = period["client_cpu_s"] / max(period["events"], 1) * 1e6
                    us.setdefault(name, []).append(per_event)
                    itl = ""
                    if name == "repro":
                        got = json.loads(out.strip().splitlines()[-1])
                        token_itl.setdefault(name, []).append(got["median_token_itl_ms"])
                        itl = self._timing(per_chunk, got, period)
                    else:  # bench_serving's own per-token ITL (benchmark/serving.py), this run's
                        output = self.tmp / ("rust.jsonl" if "rust" in name else "py.jsonl")
                        if output.is_file():
                            theirs = json.loads(output.read_text().splitlines()[-1])
                            token_itl.setdefault(name, []).append(theirs["median_itl_ms"])
                    gap = period["median_send_gap_ms"]
                    print(f"  {name:30s} {_cpu(period, per_event)}  {gap:12.3f} ms  {itl}",
                          flush=True)  # fmt: skip
            ours = float(np.median(token_itl.get("repro", [np.nan])))
            for name, values in token_itl.items():
                median = float(np.median(values))
                print(f"  per-token median ITL {name:30s} {median:8.3f} ms"
                      f"  (repro / this: {ours / median:.3f})")  # fmt: skip
        finally:
            server.terminate()
            server.wait()
        return us

    def _timing(self, per_chunk: int, got: dict[str, Any], period: dict[str, Any]) -> str:
        """Prints repro's ITL against the server's gaps; the table's ITL column."""
        diff = got["median_itl_ms"] - period["median_send_gap_ms"]
        self.itl_error_ms.setdefault(per_chunk, []).append(diff)
        print("    ITL percentiles 1..99:", [round(x, 2) for x in got["itl_pct_ms"]])
        mine, theirs = got["median_itl_halves_ms"], period["median_send_gap_halves_ms"]
        print(f"    median ITL in the first and second half of a stream, client / server:"
              f" {mine[0]:.3f} / {theirs[0]:.3f} ms, {mine[1]:.3f} / {theirs[1]:.3f} ms"
              f" (between step starts: {period['median_step_gap_ms']:.3f} ms)")  # fmt: skip
        return f"{got['median_itl_ms']:.3f} ms ({diff:+.3f}), failed {got['failed']}"


def _cpu(period: dict[str, Any], per_event: float) -> str:
    """Events, CPU us per event and its user + system split (from /proc/PID/stat ticks)."""
    events = max(period["events"], 1)
    split = (f"({period['client_user_s'] / events * 1e6:5.1f}"
             f"+{period['client_sys_s'] / events * 1e6:4.1f})")  # fmt: skip
    return f"{period['events']:7.0f}  {per_event:12.2f} {split:>15s}"


def _wait_up(url: str) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            _post(url + "/health")
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit("the stream server did not start")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--streams", type=int, default=256)
    parser.add_argument("--tokens", type=int, default=256)
    parser.add_argument("--step-ms", type=float, default=10.0)
    parser.add_argument("--per-chunk", default="1,4", help="tokens per chunk, comma-separated")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--client-cpu", type=int, default=0)
    parser.add_argument("--server-cpu", type=int, default=1)
    parser.add_argument("--bench-python", help="a python where sglang.benchmark.serving imports")
    parser.add_argument("--rust-so", help="SGLang's _bench extension: the Rust client alone")
    parser.add_argument("--rust-python", help="the Python 3.11 for --rust-so")
    parser.add_argument("--our-client", nargs=3, metavar=("URL", "STREAMS", "TOKENS"),
                        help=argparse.SUPPRESS)  # fmt: skip
    args = parser.parse_args()
    if args.our_client:
        url, streams, tokens = args.our_client
        our_client(url, int(streams), int(tokens))
        return
    with tempfile.TemporaryDirectory() as tmp:
        bench = Bench(args, Path(tmp))
        if bench.bench_python is None:
            print("sglang.benchmark.serving is not importable (--bench-python, "
                  "$BENCH_SERVING_PYTHON, /tmp/benchvenv/bin/python, this python):"
                  " measuring repro's client alone")  # fmt: skip
        else:
            print(f"bench_serving from {bench.bench_python}")
        summary = []
        for per_chunk in [int(k) for k in args.per_chunk.split(",")]:
            us = {name: float(np.median(v)) for name, v in bench.run(per_chunk).items()}
            for other in ("bench_serving", "bench_serving --rust-client"):
                if other in us:
                    summary.append(f"  {per_chunk} token(s)/chunk: repro / {other} ="
                                   f" {us['repro'] / us[other]:.2f}")  # fmt: skip
        if summary:
            print("client CPU per event, ratios (median of repeats):")
            print("\n".join(summary))
        print("repro's median ITL - the server's median send gap, each repeat:")
        for per_chunk, errors in bench.itl_error_ms.items():
            print(f"  {per_chunk} token(s)/chunk: {', '.join(f'{e:+.3f}' for e in errors)} ms")


if __name__ == "__main__":
    main()
