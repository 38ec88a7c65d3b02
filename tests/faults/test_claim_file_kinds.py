"""Issue 70: the claim file is only ever the claim. An `owner.lock` that is a hard link to a
file elsewhere, a symlink or a FIFO is refused with one line naming it; the file it leads to
is neither truncated nor written, and nothing waits for a FIFO's writer. The campaign folder's
claim (`repro campaign run --resume`) and a deployment's (`repro launch`) share the code."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from rich.console import Console

from repro.campaign.execute import start_campaign
from repro.launch.claim import CLAIM_FILE
from tests.campaign.demo import demo_campaign
from tests.support.cli import isolated_env, repro

DEADLINE_S = 120  # a FIFO that blocked would show as subprocess.TimeoutExpired
PRECIOUS = "a file the user keeps elsewhere\n"


def _hard_link(claim: Path, outside: Path) -> None:
    os.link(outside, claim)


def _symlink(claim: Path, outside: Path) -> None:
    claim.symlink_to(outside)


def _fifo(claim: Path, outside: Path) -> None:
    os.mkfifo(claim)


KINDS: dict[str, tuple[Callable[[Path, Path], None], str]] = {
    "hard link": (_hard_link, "a file with 2 names (a hard link)"),
    "symlink": (_symlink, "a link"),
    "fifo": (_fifo, "a FIFO, device or socket"),
}


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    path = tmp_path / "elsewhere" / "precious.txt"
    path.parent.mkdir()
    path.write_text(PRECIOUS)
    return path


def _refused(result_stderr: str, returncode: int, claim: Path, what: str) -> None:
    assert returncode == 1, result_stderr
    assert "Traceback" not in result_stderr
    first = result_stderr.splitlines()[0]
    assert f"{claim}: {what}" in first, result_stderr  # a symlink: the folder's own refusal
    assert "remove it" in result_stderr


@pytest.mark.parametrize("kind", KINDS)
def test_a_campaign_folder_claim_that_is_not_a_plain_file_is_refused(
    tmp_path: Path, repo_root: Path, outside: Path, kind: str
) -> None:
    made, _plan, _index = start_campaign(
        demo_campaign(tmp_path, repo_root), tmp_path / "campaigns", Console(quiet=True)
    )
    claim = made.path / CLAIM_FILE
    make, what = KINDS[kind]
    make(claim, outside)
    index = made.index_file.read_bytes()
    result = repro(
        "campaign", "run", "--resume", str(made.path),
        cwd=tmp_path, env=isolated_env(tmp_path), timeout=DEADLINE_S,
    )  # fmt: skip
    _refused(result.stderr, result.returncode, claim, what)
    assert outside.read_text() == PRECIOUS  # not truncated, no pid written into it
    assert made.index_file.read_bytes() == index  # nothing marked, nothing run
    assert not (made.path / "points").exists()


@pytest.mark.parametrize("kind", KINDS)
def test_a_deployment_claim_that_is_not_a_plain_file_is_refused(
    tmp_path: Path, repo_root: Path, outside: Path, kind: str
) -> None:
    state = tmp_path / "state" / "deployments" / "demo"
    state.mkdir(parents=True)
    claim = state / CLAIM_FILE
    make, what = KINDS[kind]
    make(claim, outside)
    result = repro("launch", "demo", cwd=repo_root, env=isolated_env(tmp_path), timeout=DEADLINE_S)
    _refused(result.stderr, result.returncode, claim, what)
    assert outside.read_text() == PRECIOUS
