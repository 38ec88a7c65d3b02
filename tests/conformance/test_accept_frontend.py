"""`repro accept --url` against SGLang's own front end: the record's per-request acceptance is
the `spec_accept_length` SGLang's tokenizer manager computed for the same requests (read back
from SGLang's own request log, `--log-requests-format json`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from repro.cli import main
from tests.conformance.conftest import RECIPE, Pair

pytestmark = pytest.mark.real_sglang
PROMPTS = 4


def finished_metas(log_dir: Path) -> list[dict[str, Any]]:
    """meta_info of every finished request in SGLang's JSON request log, in order."""
    metas = []
    for path in sorted(log_dir.iterdir()):
        for line in path.read_text(encoding="utf-8").splitlines():
            start = line.find("{")
            if start < 0:
                continue
            event = json.loads(line[start:])
            if event.get("event") == "request.finished":
                metas.append(event["out"]["meta_info"])
    return metas


@pytest.mark.parametrize("with_recipe", [True, False], ids=["recipe", "bare-url"])
def test_accept_record_matches_sglang_per_request(
    pair: Pair,
    tmp_path: Path,
    repo_root: Path,
    monkeypatch: pytest.MonkeyPatch,
    with_recipe: bool,
) -> None:
    """With the recipe the server runs, and with `--url` alone (a server repro did not
    launch, measured as it answers, rendered with the built-in template)."""
    monkeypatch.setenv("REPRO_RECIPES_DIR", str(repo_root / "recipes"))
    monkeypatch.chdir(tmp_path)  # run folders go to ./runs
    recipe = tmp_path / "tiny-frontend.yaml"
    recipe.write_text(RECIPE)
    target = [str(recipe)] if with_recipe else ["--chat-template-fallback"]
    res = CliRunner().invoke(
        main,
        ["accept", *target, "--url", pair.sglang.url, "--prompt-sets", "math",
         "-n", str(PROMPTS), "--max-new-tokens", "24", "--json"],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    (measured,) = json.loads(res.stdout[res.stdout.index("[") :])[0]["sets"]
    # concurrency 1: the set's requests are the last ones SGLang finished, in prompt order
    server = finished_metas(pair.request_log)[-PROMPTS:]
    assert measured["accept_length_per_prompt"] == pytest.approx(
        [m["spec_accept_length"] for m in server]
    )
    assert measured["completion_tokens"] == sum(m["completion_tokens"] for m in server)
    assert measured["spec_verify_ct"] == sum(m["spec_verify_ct"] for m in server)
    summed: list[int] = []
    for meta in server:
        for k, steps in enumerate(meta["spec_correct_drafts_histogram"]):
            summed += [0] * (k + 1 - len(summed))
            summed[k] += steps
    assert measured["accept_histogram"] == summed
    assert 1.0 < measured["accept_length"] <= 4.0  # at most the drafter's block size
