"""A run record's prompt source is typed by its `kind`; records written earlier still load."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from repro.schema.dataset import FileSource, HubSource, ShippedSource
from repro.schema.record import BenchWorkload

HUB = {
    "kind": "hub", "ref": "hf:org/qa:question", "endpoint": "https://huggingface.co",
    "repo": "org/qa", "revision": "main", "commit": "a" * 40, "files": ["data/test.jsonl"],
    "column": "question", "pinned": f"hf:org/qa@{'a' * 40}:question",
}  # fmt: skip


def test_sources_are_told_apart_by_kind_and_keep_unknown_keys() -> None:
    shipped = BenchWorkload.model_validate(
        {"dataset_source": {"kind": "shipped", "name": "chat", "sha256": "0" * 64, "later": 1}}
    ).dataset_source
    assert isinstance(shipped, ShippedSource) and shipped.model_extra == {"later": 1}
    file = BenchWorkload.model_validate(
        {"dataset_source": {"kind": "file", "path": "p.jsonl", "sha256": "1" * 64}}
    ).dataset_source
    assert isinstance(file, FileSource) and file.column is None
    hub = BenchWorkload.model_validate({"dataset_source": HUB}).dataset_source
    assert isinstance(hub, HubSource) and hub.variant is None and hub.pinned.endswith(":question")
    assert hub.model_dump(mode="json", exclude_none=True) == HUB
    assert BenchWorkload.model_validate({}).dataset_source is None  # before sources were kept


def test_identity_separates_the_prompts_not_the_names() -> None:
    a = ShippedSource(name="chat", sha256="0" * 64)
    assert a.identity() == ShippedSource(name="renamed", sha256="0" * 64).identity()
    assert a.identity() != ShippedSource(name="chat", sha256="1" * 64).identity()
    hub = HubSource.model_validate(HUB)
    assert hub.identity() != hub.model_copy(update={"commit": "b" * 40}).identity()


def test_an_unknown_kind_is_refused() -> None:
    with pytest.raises(ValidationError, match="kind"):
        BenchWorkload.model_validate({"dataset_source": {"kind": "s3", "url": "s3://x"}})
