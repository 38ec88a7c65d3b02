"""Download throughput of `repro fetch` vs a plain `snapshot_download`, against the local Hub.

Serves a snapshot of N files (default 8 x 128 MiB = 1 GiB of random bytes, from disk, via the
test Hub server in tests/hubserver: LFS files redirect to a CDN origin, like the Hub), then
downloads it into a fresh, empty cache each run, taking turns at going first, after a `sync`, with

- `repro fetch bench` (space check, access check, snapshot_download, sha256 verification),
- `python -c "snapshot_download(repo, revision=sha, cache_dir=...)"` (the same files),

and prints MB/s, both for the whole process (start-up included) and for the download call
alone (repro: the `seconds` of its JSON report, which include the sha256 verification), each
the median of --runs runs, repro's ratio to the plain download for both, and how long each
spent outside its download call (start-up, checks, exit). The machine's cores and load average
are printed with them: on a busy machine the ratio says little.

    .venv/bin/python benchmarks/fetch_throughput.py [--files 8] [--file-mib 128] [--runs 5]

Not run by the tests. Needs about 2 x the snapshot size of free space in --workdir. On the lent
H200 host: benchmarks/on_device.sh. What it printed, and on which machine:
benchmarks/fetch_throughput.results.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from importlib.metadata import version
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from hubserver.fixtures import IMAGE_SPEC  # noqa: E402
from hubserver.repos import HubFile  # noqa: E402
from hubserver.server import HubServer  # noqa: E402

REPO = "org/bench-1g"
# repro's console script: beside this interpreter (a venv), else on PATH (benchmarks/on_device.sh)
REPRO = shutil.which("repro", path=str(Path(sys.executable).parent)) or shutil.which("repro")
PLAIN = """
import sys, time
from huggingface_hub import snapshot_download
t = time.monotonic()
snapshot_download(sys.argv[1], revision=sys.argv[2], cache_dir=sys.argv[3])
print(time.monotonic() - t)
"""


def make_files(folder: Path, count: int, mib: int) -> list[HubFile]:
    folder.mkdir(parents=True, exist_ok=True)
    files = [HubFile("config.json", b'{"model_type": "bench"}')]
    for i in range(count):
        path = folder / f"model-{i + 1:05d}-of-{count:05d}.safetensors"
        if not path.exists() or path.stat().st_size != mib << 20:
            with path.open("wb") as f:
                for _ in range(mib):
                    f.write(os.urandom(1 << 20))
        files.append(HubFile(path.name, source=path))
    return files


def run(cmd: list[str], env: dict[str, str], cwd: Path) -> tuple[float, str]:
    start = time.monotonic()
    proc = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, check=False)
    wall = time.monotonic() - start
    if proc.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{proc.stdout}\n{proc.stderr}")
    return wall, proc.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=8)
    parser.add_argument("--file-mib", type=int, default=128)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "repro-bench")
    args = parser.parse_args()

    work: Path = args.workdir
    print(machine(), flush=True)
    print(f"preparing {args.files} x {args.file_mib} MiB in {work} ...", flush=True)
    files = make_files(work / "source", args.files, args.file_mib)
    total = sum(f.size for f in files)
    project = work / "project"
    for sub in ("recipes", "images", "patches/fix"):
        (project / sub).mkdir(parents=True, exist_ok=True)
    (project / "images/gpu.yaml").write_text(IMAGE_SPEC)
    (project / "patches/fix/fix.patch").write_text("--- a/x\n+++ b/x\n")
    (project / "recipes/bench.yaml").write_text(
        f"image: gpu\nmodel: {{repo: {REPO}}}\nparallelism: {{tp: 1}}\ntopology: {{gpus: 1}}\n"
    )

    with HubServer() as hub:
        sha = hub.add_repo(REPO, files).refs["main"]
        env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
        env.update(HF_ENDPOINT=hub.endpoint, HF_HUB_DISABLE_PROGRESS_BARS="1", HF_HOME=str(work))
        if REPRO is None:
            sys.exit("no `repro` beside this python or on PATH")
        run([REPRO, "lock", "bench"], env, project)
        results: dict[str, list[tuple[float, float]]] = {"repro fetch": [], "snapshot_download": []}
        tails: list[float] = []  # repro: seconds of verification after the download ended
        for i in range(args.runs):
            # each goes first every other run, after the last run's writes reached the disk:
            # the disk's write-back of one run must not slow the next (on the lent host it
            # halved a run's speed at 8 GB)
            for name in list(results) if i % 2 == 0 else reversed(list(results)):
                cache = work / f"cache-{name.replace(' ', '-')}-{i}"
                shutil.rmtree(cache, ignore_errors=True)
                os.sync()
                if name == "repro fetch":
                    cmd = [REPRO, "fetch", "bench", "--json",
                           "--cache-dir", str(cache), "--keep-free", "0",
                           "--margin-percent", "0"]  # fmt: skip
                    wall, out = run(cmd, env, project)
                    repo = json.loads(out)["repos"][0]
                    inner = repo["seconds"]
                    if "verify_seconds" in repo:  # older repro reports lack it
                        tails.append(repo["verify_seconds"])
                else:
                    cmd = [sys.executable, "-c", PLAIN, REPO, sha, str(cache)]
                    wall, out = run(cmd, env, project)
                    inner = float(out.strip().splitlines()[-1])
                results[name].append((wall, inner))
                print(f"  run {i + 1} {name:18s} {total / wall / 1e6:7.1f} MB/s process, "
                      f"{total / inner / 1e6:7.1f} MB/s download call", flush=True)  # fmt: skip
                shutil.rmtree(cache, ignore_errors=True)

    print(f"\n{total / 1e9:.2f} GB in {len(files)} files, median of {args.runs} runs:")
    medians = {}
    for name, rows in results.items():
        wall = statistics.median(r[0] for r in rows)
        inner = statistics.median(r[1] for r in rows)
        medians[name] = (wall, inner)
        print(f"  {name:18s} {total / wall / 1e6:7.1f} MB/s (process, {wall:.2f} s)   "
              f"{total / inner / 1e6:7.1f} MB/s (download call, {inner:.2f} s)")  # fmt: skip
    (repro_wall, repro_inner), (plain_wall, plain_inner) = medians.values()
    print(f"  repro fetch / snapshot_download: {plain_wall / repro_wall:.3f}x per process, "
          f"{plain_inner / repro_inner:.3f}x per download call")  # fmt: skip
    outside = {n: statistics.median(r[0] - r[1] for r in rows) for n, rows in results.items()}
    print(
        f"  outside the download call (start-up, checks, exit): repro fetch "
        f"{outside['repro fetch']:.2f} s, snapshot_download {outside['snapshot_download']:.2f} s"
    )
    print(f"  {break_even(medians, outside, total)}")
    if tails:
        print(f"  repro fetch's verification after the download ended: median "
              f"{statistics.median(tails):.3f} s (max {max(tails):.3f} s)")  # fmt: skip
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


def break_even(
    medians: dict[str, tuple[float, float]],
    outside: dict[str, float],
    total: int,
    goal: float = 0.97,
) -> str:
    """The snapshot size from which repro's per-process ratio reaches `goal`, with this run's
    download rates and time outside the call: a fixed start-up matters less the larger the
    download (plain / repro = (o_p + S/r_p) / (o_r + S/r_r) >= goal, solved for S)."""
    rate = {name: total / inner for name, (_wall, inner) in medians.items()}
    o_r, o_p = outside["repro fetch"], outside["snapshot_download"]
    slack = 1 / rate["snapshot_download"] - goal / rate["repro fetch"]
    if o_p >= goal * o_r:
        return f"per process at or above {goal}x at any size (start-up included)"
    if slack <= 0:
        return f"per process below {goal}x at any size: the download call itself is slower"
    size = (goal * o_r - o_p) / slack
    return f"per process at or above {goal}x from about {size / 1e9:.2f} GB (this run's rates)"


def machine() -> str:
    """Where the numbers were taken: host, CPU model, cores, load average now."""
    model = platform.processor() or platform.machine()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        names = [ln.split(":", 1)[1].strip() for ln in cpuinfo.read_text().splitlines()
                 if ln.startswith("model name")]  # fmt: skip
        model = names[0] if names else model
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    return (f"machine: {platform.node()}, {model}, {os.cpu_count()} cores, "
            f"Python {platform.python_version()}, huggingface_hub {version('huggingface_hub')}, "
            f"load average {load}")  # fmt: skip


if __name__ == "__main__":
    main()
