"""Which files of a model repository are locked and fetched."""

from __future__ import annotations

from repro.hub import select_files

KIMI_LIKE = [
    ".gitattributes",
    "LICENSE",
    "README.md",
    "chat_template.jinja",
    "config.json",
    "configuration_deepseek.py",
    "docs/deploy_guidance.md",
    "figures/kimi-logo.png",
    "generation_config.json",
    "model-00001-of-000064.safetensors",
    "model-00064-of-000064.safetensors",
    "model.safetensors.index.json",
    "modeling_deepseek.py",
    "tiktoken.model",
    "tokenization_kimi.py",
    "tokenizer_config.json",
]


def test_weights_configs_tokenizer_template_and_code_are_selected() -> None:
    assert select_files(KIMI_LIKE) == [
        "chat_template.jinja",
        "config.json",
        "configuration_deepseek.py",
        "generation_config.json",
        "model-00001-of-000064.safetensors",
        "model-00064-of-000064.safetensors",
        "model.safetensors.index.json",
        "modeling_deepseek.py",
        "tiktoken.model",
        "tokenization_kimi.py",
        "tokenizer_config.json",
    ]


def test_pickled_duplicates_are_skipped_only_when_safetensors_exist() -> None:
    both = ["config.json", "model.safetensors", "pytorch_model.bin",
            "pytorch_model.bin.index.json", "consolidated.pt", "model.gguf"]  # fmt: skip
    assert select_files(both) == ["config.json", "model.safetensors"]
    legacy = ["config.json", "pytorch_model.bin", "pytorch_model.bin.index.json", "vocab.txt"]
    assert select_files(legacy) == legacy


def test_docs_and_images_are_skipped_even_in_subfolders() -> None:
    paths = ["sub/README.md", "assets/a.jpg", "notes.pdf", "sub/config.json", "LICENSE.txt"]
    assert select_files(paths) == ["sub/config.json"]
