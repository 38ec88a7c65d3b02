"""A server URL's `user:password@` is never written or shown: not in the run folder's name,
run.json, recipe.json, any other record file, nor `repro runs`; a malformed URL is one line."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cli import isolated_env, repro
from tests.support.simulator import Sim, Simulators

SECRET = "S3cr3tPassw0rd"


@pytest.fixture(scope="module")
def sim(simulator: Simulators) -> Iterator[Sim]:
    server = simulator.tiny(REPRO_SIM_TIME_SCALE="0.1")
    yield server
    server.stop()


def test_credentials_in_the_url_are_never_written(sim: Sim, tmp_path: Path) -> None:
    url = sim.url.replace("http://", f"http://alice:{SECRET}@")
    plan = ["--concurrency", "1", "--prompts", "2", "--input-len", "8", "--output-len", "4"]
    env = isolated_env(tmp_path)
    result = repro("bench", "--url", url, *plan, cwd=tmp_path, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    assert SECRET not in result.stdout + result.stderr
    assert "user:password" in result.stderr  # the user is told it was dropped
    [run_dir] = (tmp_path / "runs").iterdir()
    assert SECRET not in run_dir.name and "alice" not in run_dir.name
    for path in run_dir.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path
    listed = repro("runs", "--json", cwd=tmp_path, env=env)
    assert listed.returncode == 0 and run_dir.name in listed.stdout
    assert SECRET not in listed.stdout


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("http://[::1", "is not a URL"),
        ("http://127.0.0.1:99999", "is not a URL"),
        ("ftp://127.0.0.1:1", "not an http(s) URL"),
        ("http://", "not an http(s) URL"),
    ],
)
def test_a_malformed_url_is_one_error_line(url: str, words: str, tmp_path: Path) -> None:
    for command in (["bench", "--url", url], ["accept", "demo", "--url", url]):
        result = repro(*command, cwd=tmp_path, env=isolated_env(tmp_path), timeout=60)
        assert result.returncode == 1, result.stderr
        assert "Traceback" not in result.stderr
        assert result.stderr.startswith("error: ") and words in result.stderr.splitlines()[0]
