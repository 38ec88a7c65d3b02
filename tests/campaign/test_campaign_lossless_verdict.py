"""The lossless verdict from two points' probe files, by `repro accept`'s rule: identical ids
pass, the first differing token is named, and a probe whose requests failed checks nothing
(never a pass, never a divergence)."""

from __future__ import annotations

from pathlib import Path

from repro.campaign.lossless import ProbeLevel, ProbeOutputs, outputs_file, verdict
from repro.runfolder import write_model


def _probe(folder: Path, point: str, ids: list[list[int] | None]) -> None:
    path = outputs_file(folder, point)
    path.parent.mkdir(parents=True, exist_ok=True)
    level = ProbeLevel(concurrency=1, prompts=list(range(len(ids))), output_ids=ids)
    write_model(path, ProbeOutputs(point=point, prompt_set="chat", max_new_tokens=4,
                                   levels=[level]))  # fmt: skip


def test_identical_outputs_pass(tmp_path: Path) -> None:
    _probe(tmp_path, "plain", [[1, 2, 3], [4, 5]])
    _probe(tmp_path, "spec", [[1, 2, 3], [4, 5]])
    found = verdict(tmp_path, "spec", "plain")
    assert found.passed is True and found.verdict == "lossless: 2/2 identical at c=1"


def test_a_differing_token_is_named(tmp_path: Path) -> None:
    _probe(tmp_path, "plain", [[1, 2, 3], [4, 5]])
    _probe(tmp_path, "spec", [[1, 2, 3], [4, 9]])
    found = verdict(tmp_path, "spec", "plain")
    assert found.passed is False
    assert found.verdict.endswith("first: prompt 1 at output token 1 (c=1)")


def test_failed_requests_and_a_missing_probe_check_nothing(tmp_path: Path) -> None:
    _probe(tmp_path, "plain", [[1, 2, 3], None])
    _probe(tmp_path, "spec", [None, [4, 5]])
    found = verdict(tmp_path, "spec", "plain")
    assert found.passed is None and found.verdict.startswith("not checked")
    missing = verdict(tmp_path, "spec", "never-ran")
    assert missing.passed is None and "never-ran answered no probe" in missing.verdict
