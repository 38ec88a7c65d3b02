"""The simulator's answer key (REPRO_SIM_ANSWER_KEY), which the accuracy gate is tested
with: a bad key or rate fails at start, in one line naming it."""

from __future__ import annotations

from pathlib import Path

import pytest

from repro.sim.config import StartupError, resolve


@pytest.mark.parametrize(
    ("rate", "key", "message"),
    [
        ("lots", '{"question": "q", "answer": "1"}', "REPRO_SIM_WRONG_ANSWERS='lots'"),
        ("1.5", '{"question": "q", "answer": "1"}', "a share in \\[0, 1\\]"),
        ("0", '{"question": "q"}', "key.jsonl:1: expected"),
        ("0", '{"question": "q", "answer": "many"}', "key.jsonl:1: the answer holds no number"),
    ],
)
def test_a_bad_answer_key_fails_at_start(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, rate: str, key: str, message: str
) -> None:
    (tmp_path / "key.jsonl").write_text(key + "\n")
    monkeypatch.setenv("REPRO_SIM_ANSWER_KEY", str(tmp_path / "key.jsonl"))
    monkeypatch.setenv("REPRO_SIM_WRONG_ANSWERS", rate)
    with pytest.raises(StartupError, match=message):
        resolve(["--model-path", "repro-sim/tiny-chat"])


def test_a_missing_key_file_fails_at_start(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("REPRO_SIM_ANSWER_KEY", str(tmp_path / "none.jsonl"))
    with pytest.raises(StartupError, match=r"none\.jsonl"):
        resolve(["--model-path", "repro-sim/tiny-chat"])
