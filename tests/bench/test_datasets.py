"""Prompt sets from files and Hub datasets (the local Hub server), pinned to commits; and
`repro accept` / `repro bench` reading a Hub dataset against the simulator."""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pydantic import ValidationError

from repro.bench.prompts.chattemplate import BUILTIN_CHAT_TEMPLATE, ChatTemplate
from repro.bench.prompts.datasets import pick_data_files
from repro.bench.prompts.sets import bench_prompts, bench_source, load_prompt_set
from repro.bench.sweep import BenchOptions, run_bench
from repro.bench.sweeprecord import _source
from repro.bench.target import BenchTarget
from repro.errors import ReproError
from repro.hub import GatedRepoAccess, HubError
from repro.schema.dataset import SHAREGPT_FILE, SHAREGPT_REPO
from repro.schema.recipe import Bench
from tests.bench.hubcli import hub_cli

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from hubserver import HubFile, HubServer
from repro.runfolder import RunFolder
from tests.support.simulator import Sim


def jsonl(rows: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def parquet(columns: dict[str, list[Any]]) -> bytes:
    buf = io.BytesIO()
    pq.write_table(pa.table(columns), buf)
    return buf.getvalue()


QA_TEST = [{"id": i, "question": f"What is {i} + {i}?", "answer": str(2 * i)} for i in range(5)]
SHAREGPT = [
    {"id": "a", "conversations": [
        {"from": "human", "value": "Explain TCP slow start."},
        {"from": "gpt", "value": "TCP slow start ..."}]},
    {"id": "b", "conversations": [
        {"from": "system", "value": "You are terse."},
        {"from": "human", "value": "Name three sorting algorithms."},
        {"from": "gpt", "value": "Quicksort, mergesort, heapsort."}]},
    {"id": "c", "conversations": [{"from": "gpt", "value": "no human turn: skipped"}]},
]  # fmt: skip


@pytest.fixture
def hub() -> Iterator[HubServer]:
    with HubServer() as server:
        server.add_dataset(
            "org/qa",
            {
                "README.md": b"# qa",
                "data/test.jsonl": jsonl(QA_TEST),
                "data/train.jsonl": jsonl([{"question": "a training question"}]),
            },
        )
        yield server


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    return tmp_path / "hf-cache"


def load(hub: HubServer, cache: Path, ref: str) -> Any:
    return load_prompt_set(ref, endpoint=hub.endpoint, cache_dir=cache)


def test_jsonl_column_of_the_test_split_pinned_to_the_commit(hub: HubServer, cache: Path) -> None:
    ps = load(hub, cache, "hf:org/qa:question")
    assert ps.prompts == [r["question"] for r in QA_TEST]  # test split, not train
    first = hub.datasets["org/qa"].refs["main"]
    assert ps.source.commit == first and ps.source.files == ["data/test.jsonl"]
    assert ps.source.column == "question" and ps.source.revision == "main"
    assert ps.source.pinned == f"hf:org/qa@{first}:question"
    # files come from the commit, not the branch (which may move meanwhile)
    assert any(f"resolve/{first}/data/test.jsonl" in r.path for r in hub.downloads())

    moved = hub.datasets["org/qa"].update(put={"data/test.jsonl": jsonl([{"question": "new?"}])})
    again = load(hub, cache, "hf:org/qa:question")
    assert again.source.commit == moved != first and again.prompts == ["new?"]
    pinned = load(hub, cache, f"hf:org/qa@{first}:question")
    assert pinned.source.commit == first and pinned.prompts == ps.prompts


def test_credentials_in_the_endpoint_are_not_recorded(hub: HubServer, cache: Path) -> None:
    scheme, _, rest = hub.endpoint.partition("://")
    ps = load_prompt_set(
        "hf:org/qa:question", endpoint=f"{scheme}://reader:s3cret@{rest}", cache_dir=cache
    )
    assert ps.prompts == [r["question"] for r in QA_TEST]
    assert "s3cret" not in ps.source.model_dump_json() and ps.source.endpoint == hub.endpoint


def test_parquet_default_column_and_a_folder(hub: HubServer, cache: Path) -> None:
    hub.add_dataset(
        "org/math",
        [
            HubFile("main/test-00000-of-00001.parquet", parquet({"problem": ["p1", "p2"]})),
            HubFile("main/train-00000-of-00001.parquet", parquet({"problem": ["t1"]})),
            HubFile("other/test-00000-of-00001.parquet", parquet({"problem": ["o1"]})),
        ],
    )
    everything = load(hub, cache, "hf:org/math")
    assert everything.prompts == ["p1", "p2", "o1"] and everything.source.column == "problem"
    assert load(hub, cache, "hf:org/math/main").prompts == ["p1", "p2"]
    one = load(hub, cache, "hf:org/math/main/train-00000-of-00001.parquet")
    assert one.prompts == ["t1"]
    assert hub.downloads() and all(r.origin in ("hub", "cdn") for r in hub.downloads())


def test_csv_dataset(hub: HubServer, cache: Path) -> None:
    text = 'instruction,output\nSummarize the news.,ok\n"Write a haiku, please.",ok\n'
    hub.add_dataset("org/csv", {"train.csv": text.encode()})
    ps = load(hub, cache, "hf:org/csv")
    assert ps.prompts == ["Summarize the news.", "Write a haiku, please."]
    assert ps.source.files == ["train.csv"] and ps.source.column == "instruction"


def test_sharegpt_file_and_hub_reference(hub: HubServer, cache: Path, tmp_path: Path) -> None:
    expected = ["Explain TCP slow start.", "Name three sorting algorithms."]
    local = tmp_path / "sharegpt.json"
    local.write_bytes(json.dumps(SHAREGPT).encode())
    from_file = load_prompt_set(str(local))
    assert from_file.prompts == expected and from_file.source.column == "conversations"
    assert len(from_file.source.sha256) == 64
    hub.add_dataset("org/sharegpt", [HubFile("sg.json", json.dumps(SHAREGPT).encode(), lfs=True)])
    assert load(hub, cache, "hf:org/sharegpt").prompts == expected
    # bench sends them chat-formatted, as they are (no padding to input_len), in order
    prompts = bench_prompts(
        from_file, 3, input_len=512, template=ChatTemplate(BUILTIN_CHAT_TEMPLATE)
    )
    assert "Explain TCP slow start.<|im_end|>" in prompts[0]
    assert "Name three sorting algorithms.<|im_end|>" in prompts[1]
    assert "Explain TCP slow start.<|im_end|>" in prompts[2]


def test_sharegpt_is_bench_servings_file_from_the_hub(hub: HubServer, cache: Path) -> None:
    hub.add_dataset(
        SHAREGPT_REPO,
        [
            HubFile(SHAREGPT_FILE, json.dumps(SHAREGPT).encode(), lfs=True),
            HubFile("ShareGPT_V3_unfiltered_cleaned_split_no_imsorry.json", b"[]", lfs=True),
        ],
    )
    source = bench_source("sharegpt", endpoint=hub.endpoint, cache_dir=cache)
    assert source is not None and source.source.files == [SHAREGPT_FILE]
    assert source.prompts == ["Explain TCP slow start.", "Name three sorting algorithms."]
    assert source.source.commit == hub.datasets[SHAREGPT_REPO].refs["main"]
    # not bench_serving's own sampling (2+ turns, shuffled, each reply's length): named
    assert source.source.variant.startswith("repro-sharegpt-fixed:")
    fetched = len(hub.downloads())
    bench_source("sharegpt", endpoint=hub.endpoint, cache_dir=cache)
    assert len(hub.downloads()) == fetched  # cached after the first time


def test_bench_from_a_local_file(sim_spec: Sim, demo: Any, tmp_path: Path) -> None:
    data = tmp_path / "prompts.csv"
    data.write_text("question\nWhat is a B-tree?\nWhy is the sky blue?\n")
    opts = BenchOptions(
        url=sim_spec.url, concurrencies=[1, 2], output_len=8, prompts=3, dataset=str(data),
        runs_dir=tmp_path / "runs",
    )  # fmt: skip
    result = run_bench(BenchTarget.from_recipe(demo), opts)
    run = json.loads(RunFolder(result.run_dir).run_file.read_text())
    assert run["status"] == "complete" and run["workload"]["dataset"] == str(data)
    source = run["workload"]["dataset_source"]
    assert source["kind"] == "file" and source["column"] == "question"
    assert len(source["sha256"]) == 64
    RunFolder(result.run_dir).requests_file(2, 0).unlink()  # as if it crashed there
    data.write_text("question\nSomething else?\n")
    with pytest.raises(ReproError, match="changed since"):
        run_bench(
            BenchTarget.from_recipe(demo),
            BenchOptions(resume=result.run_dir),
        )


def test_missing_column_lists_the_columns(hub: HubServer, cache: Path) -> None:
    with pytest.raises(ReproError) as err:
        load(hub, cache, "hf:org/qa:query")
    assert "no column 'query'" in err.value.message
    assert "its columns are: id, question, answer" in err.value.message
    assert "hf:org/qa@main:COLUMN" in str(err.value.hint)
    hub.add_dataset("org/nocol", {"data.jsonl": jsonl([{"body": "x", "label": 1}])})
    with pytest.raises(ReproError, match="no prompt column; its columns are: body, label"):
        load(hub, cache, "hf:org/nocol")


def test_unknown_repo_revision_and_gated(hub: HubServer, cache: Path) -> None:
    with pytest.raises(HubError, match="dataset org/nope not found"):
        load(hub, cache, "hf:org/nope")
    with pytest.raises(HubError, match="has no revision 'v9'"):
        load(hub, cache, "hf:org/qa@v9")
    hub.add_dataset("org/gated", {"test.jsonl": jsonl([{"prompt": "x"}])}, gated="manual")
    with pytest.raises(GatedRepoAccess) as err:
        load(hub, cache, "hf:org/gated")
    assert f"{hub.endpoint}/datasets/org/gated" in str(err.value.hint)


def test_empty_datasets(hub: HubServer, cache: Path) -> None:
    hub.add_dataset("org/blank", {"test.jsonl": jsonl([{"prompt": ""}, {"prompt": "  "}])})
    with pytest.raises(ReproError, match="'hf:org/blank' is empty"):
        load(hub, cache, "hf:org/blank")
    hub.add_dataset("org/nodata", {"README.md": b"# nothing here"})
    with pytest.raises(ReproError, match=r"has no data files .*its files: README.md"):
        load(hub, cache, "hf:org/nodata")


def test_data_file_rule() -> None:
    files = ["README.md", "dataset_infos.json", "data/train.parquet", "data/train.jsonl"]
    assert pick_data_files(files) == ["data/train.parquet"]  # one format: parquet first
    assert pick_data_files(["b.jsonl", "a.jsonl", ".hidden/c.jsonl"]) == ["a.jsonl", "b.jsonl"]


def test_bad_references_and_recipe_values(tmp_path: Path) -> None:
    for ref, expected in [
        ("hf:org", "expected hf:ORG/NAME"),
        ("hf:org/ds@:col", "revision after '@' is empty"),
        ("hf:org/ds:a b", "one name without spaces"),
    ]:
        with pytest.raises(ReproError, match=expected):
            load_prompt_set(ref)
    with pytest.raises(ValidationError, match="'sharegtp' is not a dataset: expected one of"):
        Bench(dataset="sharegtp")
    assert Bench(dataset="hf:org/ds@refs/convert/parquet:question").dataset.startswith("hf:")
    with pytest.raises(ReproError, match="--dataset: 'sharegtp' is not a dataset"):
        _source("sharegtp")
    bad = tmp_path / "rows.json"
    bad.write_text('{"prompt": "one object, not a list"}')
    with pytest.raises(ReproError, match="expected a JSON list of rows"):
        bench_source(str(bad))


# ---- the CLI, against the simulator ----------------------------------------------------------


def test_cli_accept_and_bench_from_a_hub_dataset(
    sim_spec: Sim, hub: HubServer, tmp_path: Path
) -> None:
    sha = hub.datasets["org/qa"].refs["main"]
    res = hub_cli(tmp_path, hub, "accept", "demo", "--url", sim_spec.url, "--prompt-sets",
              "math,hf:org/qa:question", "-n", "3", "--max-new-tokens", "8", "--json")  # fmt: skip
    assert res.returncode == 0, res.stderr
    (doc,) = json.loads(res.stdout[res.stdout.index("[") :])
    assert [s["prompt_set"] for s in doc["sets"]] == ["math", "hf:org/qa:question"]
    hub_set = doc["sets"][1]
    assert hub_set["prompts"] == 3 and hub_set["accept_length"] > 1.0
    recorded = json.loads((tmp_path / RunFolder(doc["run_dir"]).accept_file).read_text())["sets"][1]
    assert recorded["source"]["commit"] == sha and recorded["source"]["column"] == "question"
    assert doc["sets"][0]["source"] == {"kind": "shipped", "name": "math",
                                        "sha256": doc["sets"][0]["source"]["sha256"]}  # fmt: skip

    # offline, the same reference resolves from the cache to the same commit
    offline = hub_cli(tmp_path, hub, "accept", "demo", "--url", sim_spec.url, "--prompt-sets",
                  "hf:org/qa:question", "-n", "2", "--max-new-tokens", "8", "--json",
                  HF_HUB_OFFLINE="1")  # fmt: skip
    assert offline.returncode == 0, offline.stderr
    (doc,) = json.loads(offline.stdout[offline.stdout.index("[") :])
    assert doc["sets"][0]["source"]["commit"] == sha

    run_dir = tmp_path / "bench-run"
    res = hub_cli(tmp_path, hub, "bench", "demo", "--url", sim_spec.url, "--dataset",
              "hf:org/qa:question", "--concurrency", "1,2", "--prompts", "4", "--output-len", "8",
              "--output", str(run_dir))  # fmt: skip
    assert res.returncode == 0, res.stderr
    run = json.loads(RunFolder(run_dir).run_file.read_text())
    assert run["status"] == "complete" and run["workload"]["dataset"] == "hf:org/qa:question"
    assert run["workload"]["dataset_source"]["commit"] == sha
    assert json.loads(RunFolder(run_dir).recipe_file.read_text())["bench"]["dataset"].startswith(
        "hf:"
    )
    rows = [
        json.loads(line) for line in RunFolder(run_dir).requests_file(2, 0).read_text().splitlines()
    ]
    assert len(rows) == 4 and all(r["ok"] and r["completion_tokens"] == 8 for r in rows)

    # a crashed level resumed after the branch moved: still the recorded commit
    RunFolder(run_dir).requests_file(2, 0).unlink()
    hub.datasets["org/qa"].update(put={"data/test.jsonl": jsonl([{"question": "moved"}])})
    hub.log.clear()
    res = hub_cli(tmp_path, hub, "bench", "--resume", str(run_dir))
    assert res.returncode == 0, res.stderr
    assert not any("revision/main" in r.path for r in hub.log)
    assert (
        json.loads(RunFolder(run_dir).run_file.read_text())["workload"]["dataset_source"]["commit"]
        == sha
    )

    bad = hub_cli(tmp_path, hub, "bench", "demo", "--url", sim_spec.url, "--dataset", "hf:org/qa:q")
    assert bad.returncode == 1 and "Traceback" not in bad.stderr
    assert "no column 'q'; its columns are: question" in bad.stderr  # the moved branch
