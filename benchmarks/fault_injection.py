"""Fault injection: the probes of issue 17 (trust and safety) against the real engine.

Each fault is injected through the real CLI (or, for Compose's `$`, the launch library) in a
private state and locks directory, and counts as survived with nothing lost when repro
refuses it with a one-line error (or does what was asked), no traceback, no container left
behind, the lock byte for byte as it was, and every run record still valid JSON.

Run it from the repository root as root (full-disk probes mount small tmpfs folders), with
the Docker engine up, serialised with other Docker work:

    flock /tmp/repro-docker.lock env PYTHONPATH=$PWD/src .venv/bin/python \
        benchmarks/fault_injection.py

It prints one line per fault, then `faults injected N / survived with nothing lost M /
tracebacks T`; it exits 1 unless every fault was survived.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from repro.image.build import build_image
from repro.image.buildplan import plan_for_spec
from repro.image.engine import client
from repro.launch import launch, stop
from repro.launch.from_recipe import launch_spec_for
from repro.lock import load_locked
from repro.recipe.images import load_image_spec
from repro.runfolder import RunFolder

ROOT = Path(__file__).resolve().parent.parent
REPRO = str(Path(sys.executable).parent / "repro")
RESULTS: list[tuple[str, bool, bool]] = []  # (fault, survived with nothing lost, traceback)


def record(fault: str, survived: bool, *outputs: str) -> None:
    traceback = any("Traceback" in text for text in outputs)
    RESULTS.append((fault, survived and not traceback, traceback))
    print(f"{'ok  ' if survived and not traceback else 'LOST'} {fault}", flush=True)
    for text in outputs:
        if "Traceback" in text:  # where it came from, for the bug report
            print("     " + "\n     ".join(text[text.index("Traceback") :].splitlines()[-8:]))


def repro(
    env: dict[str, str], *args: str, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [REPRO, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout
    )


def refused(result: subprocess.CompletedProcess[str], needle: str = "") -> bool:
    """A one-line refusal: non-zero, `error:` first, the needle in it."""
    return result.returncode != 0 and "error:" in result.stderr and needle in result.stderr


def containers(name: str = "demo") -> list[object]:
    label = ("label", f"com.docker.compose.project=repro-{name}")
    return list(client().container.list(all=True, filters=[label]))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def healthy(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as response:
            return int(response.status) == 200
    except OSError:
        return False


@contextmanager
def small_disk(parent: Path, size: str = "2m") -> Iterator[Path]:
    mount = parent / f"disk-{uuid.uuid4().hex[:6]}"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", mount], check=True)
    try:
        yield mount
    finally:
        subprocess.run(["umount", mount], check=True)


def fill(disk: Path) -> None:
    with suppress(OSError), (disk / "filler").open("wb", buffering=0) as filler:
        while True:
            filler.write(b"\0" * 4096)


def valid_json_files(folder: Path) -> bool:
    for path in folder.rglob("*.json"):
        try:
            json.loads(path.read_text())
        except ValueError:
            return False
    return not list(folder.rglob("*.tmp"))


def popen_run(env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [REPRO, "run", *args], cwd=ROOT, env=env, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def signal_when(process: subprocess.Popen[str], sig: int, ready: Callable[[], bool]) -> str:
    deadline = time.monotonic() + 300
    while not ready() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    process.send_signal(sig)
    return process.communicate(timeout=300)[1]


def image_trust(env: dict[str, str], work: Path) -> None:
    """A tampered and a swapped image under the lock's tag: run, launch, build refuse it."""
    assert repro(env, "lock", "demo").returncode == 0
    assert repro(env, "image", "build", "demo").returncode == 0
    lock = Path(env["REPRO_LOCKS_DIR"]) / "demo.lock.json"
    data = json.loads(lock.read_text())
    tag = f"repro-fault/trust-{uuid.uuid4().hex[:6]}:1"
    client().image.tag(data["image"]["reference"], tag)
    data["image"]["reference"] = tag
    lock.write_text(json.dumps(data, indent=2) + "\n")
    try:
        for change in ("tampered", "swapped"):
            client().image.tag(data["image"]["reference"], tag)  # back to the locked content
            if change == "tampered":
                (work / "Dockerfile").write_text(f"FROM {tag}\nRUN echo evil >> /etc/motd\n")
                client().build(work, tags=[tag], load=True, progress=False)
            else:
                base = client().image.inspect(tag).config.labels
                client().image.tag(base["org.opencontainers.image.base.name"], tag)
            before = lock.read_bytes()
            for command in (
                ("run", str(lock), "--runs-dir", str(work / "runs"), "--port", str(free_port())),
                ("launch", str(lock), "--port", str(free_port())),
                ("image", "build", str(lock)),
            ):
                result = repro(env, *command)
                survived = refused(result, "is not the one") and lock.read_bytes() == before
                record(f"{change} image, repro {command[0]} LOCK", survived and
                       not containers(), result.stderr)  # fmt: skip
    finally:
        client().image.remove(tag, force=True)
        lock.unlink()


def dollar_probe(env: dict[str, str], work: Path) -> None:
    """Recipe env values and argv with `$` reach the container as written."""
    os.environ.update(REPRO_STATE_DIR=env["REPRO_STATE_DIR"], HF_TOKEN="host-secret")
    image = build_image(plan_for_spec(load_image_spec(ROOT / "images" / "sim.yaml"))).tag
    spec = launch_spec_for(load_locked(ROOT / "recipes" / "demo.yaml"), image, free_port())
    values = {"BAZ": "${HF_TOKEN}", "QUX": "${NOPE:?boom}"}
    argv = [*spec.argv, "--served-model-name", "${USER}x$HOSTNAME"]
    name = f"fault-dollar-{spec.host_port}"
    spec = spec.model_copy(update={"name": name, "env": {**spec.env, **values}, "argv": argv})
    try:
        url = launch(spec)
        container = client().container.list(
            filters=[("label", f"com.docker.compose.project=repro-{name}")]
        )[0]
        for key, value in values.items():
            record(f"env {key}={value}", container.execute(["printenv", key]).strip() == value)
        with urllib.request.urlopen(f"{url}/model_info", timeout=10) as response:
            served = json.loads(response.read())["served_model_name"]
        record("argv ${USER}x$HOSTNAME", served == "${USER}x$HOSTNAME")
    except Exception as err:  # the fault was not survived: count it, go on with the rest
        record(f"`$` in recipe values ({type(err).__name__}: {err})", False)
    finally:
        stop(name)


def second_run_and_bench_disk(env: dict[str, str], work: Path) -> None:
    """A second run of a running recipe; `bench --output` onto a full disk, against it."""
    port = free_port()
    assert repro(env, "launch", "demo", "--port", str(port)).returncode == 0
    try:
        second = repro(env, "run", "demo", "--runs-dir", str(work / "r2"), "--port",
                       str(free_port()))  # fmt: skip
        record("second run of a running recipe", refused(second, "already running")
               and healthy(port), second.stderr)  # fmt: skip
        url = f"http://127.0.0.1:{port}"
        with small_disk(work) as disk:
            fill(disk)
            full = repro(env, "bench", "demo", "--url", url, "--output", str(disk / "b"))
            record("bench --output on a full disk", refused(full) and valid_json_files(disk),
                   full.stderr)  # fmt: skip
        with small_disk(work, "1m") as disk:
            bench = subprocess.Popen(
                [REPRO, "bench", "demo", "--url", url, "--output", str(disk / "b")],
                cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            )  # fmt: skip
            while not RunFolder(disk / "b").has_run() and bench.poll() is None:
                time.sleep(0.05)
            fill(disk)
            _, stderr = bench.communicate(timeout=300)
            (disk / "filler").unlink()
            record("disk full during bench --output", bench.returncode != 0
                   and valid_json_files(disk), stderr)  # fmt: skip
    finally:
        repro(env, "stop", "demo")


def signals_and_full_disk(env: dict[str, str], work: Path) -> None:
    """SIGTERM during launch, SIGHUP during bench (each then resumed), a disk full during
    run's bench, and a runs folder on a full disk."""
    runs = work / "signals"
    process = popen_run(env, "demo", "--runs-dir", str(runs), "--port", str(free_port()))
    stderr = signal_when(process, signal.SIGTERM, lambda: bool(containers()))
    record("SIGTERM during launch", process.returncode == 143 and not containers(), stderr)
    [run_dir] = runs.iterdir()
    level = RunFolder(run_dir).bench.requests_file(1, 0)
    process = popen_run(env, "--resume", str(run_dir))
    stderr = signal_when(process, signal.SIGHUP, level.is_file)
    kept = process.returncode == 129 and not containers() and valid_json_files(run_dir)
    finished = repro(env, "run", "--resume", str(run_dir))
    record("SIGHUP during bench, then --resume", kept and finished.returncode == 0
           and not containers(), stderr, finished.stderr)  # fmt: skip

    with small_disk(work) as disk:
        process = popen_run(env, "demo", "--runs-dir", str(disk / "runs"), "--port",
                            str(free_port()))  # fmt: skip
        runs = disk / "runs"
        while process.poll() is None and not any(
            RunFolder(r).bench.has_run() for r in runs.glob("*")
        ):
            time.sleep(0.05)
        fill(disk)
        _, stderr = process.communicate(timeout=300)
        (disk / "filler").unlink()
        record("disk full during run's bench", process.returncode == 16 and "No space" in
               stderr and not containers() and valid_json_files(disk), stderr)  # fmt: skip
    with small_disk(work, "64k") as disk:
        fill(disk)
        result = repro(env, "run", "demo", "--runs-dir", str(disk / "runs"))
        record("run --runs-dir on a full disk", refused(result, "No space")
               and not containers(), result.stderr)  # fmt: skip


def corrupt_state(env: dict[str, str], work: Path) -> None:
    """--resume of folders that are no run, or whose state files were damaged."""
    empty = work / "empty"
    empty.mkdir()
    bench = work / "bench-folder"
    bench.mkdir()
    RunFolder(bench).run_file.write_text('{"kind": "bench"}')
    for label, folder in (("an empty folder", empty), ("a bench folder", bench)):
        result = repro(env, "run", "--resume", str(folder))
        context = RunFolder(folder).context_file.name
        record(f"run --resume on {label}", refused(result, context), result.stderr)
    for name in ("context_file", "stages_file"):
        for content in ("", '{"ref": "de', "{}", "[1, 2]"):
            folder = RunFolder(work / f"state-{uuid.uuid4().hex[:6]}")
            folder.path.mkdir()
            folder.context_file.write_text(json.dumps({"ref": "demo"}))
            folder.stages_file.write_text('{"updated_at": "x", "stages": []}')
            damaged: Path = getattr(folder, name)
            damaged.write_text(content)
            result = repro(env, "run", "--resume", str(folder.path), "--dry-run")
            record(f"{damaged.name} holding {content!r}", refused(result, damaged.name),
                   result.stderr)  # fmt: skip


def bad_options(env: dict[str, str], work: Path) -> None:
    """Ports out of range, plans for rejected recipes, a corrupt lock, 1e308."""
    launches = [("launch", "demo", "--port", port) for port in ("99999", "0")]
    dry_runs = [("run", "demo", "--dry-run", "--port", port) for port in ("0", "-1", "99999")]
    for args in (*launches, *dry_runs):
        result = repro(env, *args)
        record(" ".join(args), result.returncode == 2 and "1<=x<=65535" in result.stderr,
               result.stderr)  # fmt: skip
    (work / "images").symlink_to(ROOT / "images")
    (work / "recipes").mkdir()
    text = (ROOT / "recipes" / "demo.yaml").read_text()
    no_drafter = work / "recipes" / "no-drafter.yaml"
    lines = text.splitlines(keepends=True)
    start = lines.index("drafter:\n")  # the drafter's three lines out: DFLASH without one
    no_drafter.write_text("".join(lines[:start] + lines[start + 3 :]))
    plans = {"recipe render": ("recipe", "render"), "run --dry-run": ("run", "--dry-run")}
    for label, (command, option) in plans.items():
        result = repro(env, command, option, str(no_drafter))
        record(f"{label} of a recipe check rejects", refused(result, "drafter"), result.stderr)
    lock = Path(env["REPRO_LOCKS_DIR"]) / "demo.lock.json"
    lock.parent.mkdir(parents=True, exist_ok=True)
    lock.write_text('{"model": ')
    result = repro(env, "lock", "demo")
    record("a truncated lock", refused(result, "mv ") and lock.read_text() == '{"model": ',
           result.stderr)  # fmt: skip
    lock.unlink()
    big = work / "recipes" / "big.yaml"
    kimi = (ROOT / "recipes" / "kimi26-tp8.yaml").read_text()
    big.write_text(kimi.replace("weights_gb: 595", "weights_gb: 1e308"))
    result = repro(env, "recipe", "check", str(big))
    record("weights_gb: 1e308", result.returncode == 1 and "expected a value" in result.stdout,
           result.stderr)  # fmt: skip


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="repro-faults-") as tmp:
        work = Path(tmp)
        env = {**os.environ, "REPRO_STATE_DIR": str(work / "state"),
               "REPRO_LOCKS_DIR": str(work / "locks")}  # fmt: skip
        probes: list[Callable[[dict[str, str], Path], None]] = [
            corrupt_state,
            bad_options,
            image_trust,
            dollar_probe,
            second_run_and_bench_disk,
            signals_and_full_disk,
        ]
        for probe in probes:
            folder = work / probe.__name__
            folder.mkdir()
            try:
                probe(env, folder)
            except Exception as err:  # a probe that could not finish: its fault was lost
                record(f"{probe.__name__} stopped: {type(err).__name__}: {err}", False)
    survived = sum(1 for _, ok, _ in RESULTS if ok)
    tracebacks = sum(1 for *_, traceback in RESULTS if traceback)
    print(f"faults injected {len(RESULTS)} / survived with nothing lost {survived} / "
          f"tracebacks {tracebacks}")  # fmt: skip
    return 0 if survived == len(RESULTS) else 1


if __name__ == "__main__":
    sys.exit(main())
