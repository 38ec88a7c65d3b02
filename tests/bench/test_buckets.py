"""Acceptance by context-length and output-position bucket, on LongBench-v2 from the local Hub
and the simulator: which documents are sent, each bucket's acceptance, the drafter A/B by
bucket (two simulated drafters that differ only at long context are told apart there), and
bucket specs a user can get wrong."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from hubserver import HubServer
from hubserver.longdocs import CONTEXT_CHARS, add_longbench_v2
from repro.bench.prompts.sets import load_prompt_set
from repro.errors import ReproError
from repro.runfolder import RunFolder
from repro.schema.buckets import Bucket, parse_buckets
from tests.bench.hubcli import hub_cli
from tests.support.simulator import Sim, Simulators

DEMO_PROFILE = Path(__file__).resolve().parents[2] / "src/repro/sim/profiles/demo.json"


@pytest.fixture(scope="module")
def hub() -> Iterator[HubServer]:
    with HubServer() as server:
        add_longbench_v2(server)
        yield server


def test_bucket_specs() -> None:
    assert parse_buckets("0-8k,8k-32k,32k-", "--length-buckets") == [
        Bucket(0, 8192),
        Bucket(8192, 32768),
        Bucket(32768, None),
    ]
    assert [b.label for b in parse_buckets("0-1000,1k-", "--x")] == ["0-1000", "1k-"]
    for bad, says in (
        ("8k-0", "LOW < HIGH"),
        ("0-8k,4k-", "overlaps"),
        ("0-,8k-", "overlaps"),
        ("a-b", "not a token count"),
        ("8k", "not LOW-HIGH"),
        ("", "LOW < HIGH"),
    ):
        with pytest.raises(ReproError, match=says):
            parse_buckets(bad, "--length-buckets")


def test_longbench_v2_rows_become_its_zero_shot_prompt(hub: HubServer, tmp_path: Path) -> None:
    found = load_prompt_set("longbench-v2", endpoint=hub.endpoint, cache_dir=tmp_path)
    assert len(found.prompts) == len(CONTEXT_CHARS)
    first = found.prompts[0]
    assert first.startswith("Please read the following text and answer the question below.")
    assert "What is the correct answer to this question: What does document 0 say?" in first
    assert "(D) never" in first and "<text>\nbbbbb dbbbb" in first
    assert found.source.commit == hub.datasets["THUDM/LongBench-v2"].refs["main"]


def test_accept_by_bucket_and_the_ab_by_bucket(
    sim_spec: Sim, hub: HubServer, tmp_path: Path
) -> None:
    res = hub_cli(
        tmp_path, hub, "accept", "demo", "demo", "--url", sim_spec.url, "--url", sim_spec.url,
        "--prompt-sets", "longbench-v2", "-n", "2", "--max-new-tokens", "24",
        "--length-buckets", "0-1k,1k-4k", "--position-buckets", "0-8,8-", "--json",
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout[res.stdout.index("[") :])
    [longdocs] = doc[0]["sets"]
    assert doc[0]["protocol"]["endpoint"] == "/generate (streaming)"
    # two short and two middle documents; the longest (~12k tokens) fits no bucket: not sent
    assert longdocs["prompts"] == 4
    tokens = longdocs["prompt_tokens_per_prompt"]
    by_length = {b["bucket"]: b for b in longdocs["by_length"]}
    assert set(by_length) == {"0-1k", "1k-4k"}
    for label, bucket in by_length.items():
        low, high = (0, 1024) if label == "0-1k" else (1024, 4096)
        inside = [t for t in tokens if low <= t < high]
        assert bucket["prompts"] == len(inside) > 0
        assert 1.0 < bucket["accept_length"] <= 8.0
    # every verify step lands in one position bucket: together they are the whole set
    by_position = longdocs["by_position"]
    assert [b["bucket"] for b in by_position] == ["0-8", "8-"]
    assert sum(b["spec_verify_ct"] for b in by_position) == longdocs["spec_verify_ct"]
    assert all(b["prompts"] == 4 for b in by_position)
    assert "acceptance by bucket" in res.stderr and "output position" in res.stderr
    diffs = {d["bucket"]: d for d in doc[0]["comparison"]}
    assert set(diffs) == {None, "context 0-1k", "context 1k-4k", "position 0-8", "position 8-"}
    assert diffs["context 0-1k"]["pairs"] == by_length["0-1k"]["prompts"]
    assert "longbench-v2 context 1k-4k" in res.stderr  # the A/B table, a row per bucket
    report = hub_cli(tmp_path, hub, "report", doc[0]["run_dir"])
    assert report.returncode == 0, report.stderr
    assert "longbench-v2 position 8-" in report.stdout + report.stderr


def test_bad_buckets_and_lossless_with_positions_are_refused(
    sim_spec: Sim, hub: HubServer, tmp_path: Path
) -> None:
    res = hub_cli(tmp_path, hub, "accept", "--url", sim_spec.url, "--length-buckets", "9k-1k")
    assert res.returncode == 1 and "LOW < HIGH" in res.stderr and "Traceback" not in res.stderr
    res = hub_cli(
        tmp_path, hub, "accept", "demo", "--url", sim_spec.url, "--baseline", sim_spec.url,
        "--check-lossless", "--position-buckets", "0-8,8-",
    )  # fmt: skip
    assert res.returncode == 1 and "do not carry" in res.stderr
    res = hub_cli(tmp_path, hub, "accept", "--url", sim_spec.url, "--prompt-sets",
                  "longbench-v2", "--length-buckets", "64k-")  # fmt: skip
    assert res.returncode == 1 and "no prompt falls in the length buckets" in res.stderr


def test_bench_by_context_length_on_long_documents(
    sim_spec: Sim, hub: HubServer, tmp_path: Path
) -> None:
    out = tmp_path / "bench"
    res = hub_cli(
        tmp_path, hub, "bench", "--url", sim_spec.url, "--dataset", "longbench-v2",
        "--length-buckets", "0-1k,1k-4k", "--concurrency", "2", "--prompts", "6",
        "--output-len", "16", "--output", str(out), "--json",
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    [level] = json.loads(res.stdout[res.stdout.index("{") :])["levels"]
    rows = [json.loads(x) for x in RunFolder(out).requests_file(2, 0).read_text().splitlines()]
    # from each bucket in turn, the longest document (~12k tokens) never: 2 short, 2 middle
    assert [r["prompt_tokens"] < 1024 for r in rows] == [True, False] * 3
    buckets = {b["bucket"]: b for b in level["by_length"]}
    assert buckets["0-1k"]["requests"] == buckets["1k-4k"]["requests"] == 3
    assert buckets["1k-4k"]["mean_prompt_tokens"] > buckets["0-1k"]["mean_prompt_tokens"]
    assert all(1.0 < b["accept_length"] <= 8.0 for b in buckets.values())
    assert "by context length" in res.stderr
    recorded = json.loads(RunFolder(out).recipe_file.read_text())["bench"]
    assert recorded["length_buckets"] == "0-1k,1k-4k"
    res = hub_cli(tmp_path, hub, "bench", "--url", sim_spec.url, "--length-buckets", "0-1k")
    assert res.returncode == 1 and "random prompts are" in res.stderr


def _two_drafters(path: Path) -> Path:
    """The demo profile with drafters `org/short` (acceptance falling from 1000 prompt
    tokens) and `org/long` (the same, flat)."""
    profile = json.loads(DEMO_PROFILE.read_text())
    profile["drafters"] = {
        "org/short": {"context_scale": [[1000, 1.0], [1200, 0.3]], "assumption": "a test's"},
        "org/long": {"assumption": "a test's"},
    }
    path.write_text(json.dumps(profile))
    return path


def test_two_drafters_differ_only_in_the_long_bucket(
    hub: HubServer, tmp_path: Path, simulator: Simulators
) -> None:
    profile = _two_drafters(tmp_path / "two-drafters.json")
    servers = [
        simulator.tiny("--speculative-algorithm", "DFLASH",
                       "--speculative-draft-model-path", f"org/{name}",
                       "--speculative-num-draft-tokens", "8", profile=str(profile),
                       REPRO_SIM_TIME_SCALE="0.1")
        for name in ("short", "long")
    ]  # fmt: skip
    try:
        res = hub_cli(
            tmp_path, hub, "accept", "--url", servers[0].url, "--url", servers[1].url,
            "--prompt-sets", "longbench-v2", "-n", "2", "--max-new-tokens", "48",
            "--length-buckets", "0-1k,1k-4k", "--json",
        )  # fmt: skip
    finally:
        for server in servers:
            server.stop()
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout[res.stdout.index("[") :])
    diffs = {d["bucket"]: d for d in doc[0]["comparison"]}
    assert diffs["context 0-1k"]["difference"] == 0.0  # same drafts accepted: same seed
    assert diffs["context 0-1k"]["verdict"] == "within noise"
    assert diffs["context 1k-4k"]["difference"] > 1.0 and diffs["context 1k-4k"]["pairs"] == 2
    short, long = (d["sets"][0]["by_length"][1]["accept_length"] for d in doc)
    assert long > short + 1.0
