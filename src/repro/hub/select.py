"""Which files of a model repository a server needs.

One list of patterns (fnmatch, as huggingface_hub's `allow_patterns`; `*` also matches `/`):
weights, configs, tokenizer, chat template and the python files of trust_remote_code models.
Pickled/legacy weight formats are taken only when the repo has no safetensors; READMEs,
images and other documentation are skipped.
"""

from __future__ import annotations

from collections.abc import Iterable
from fnmatch import fnmatchcase

# What a server loads. Order does not matter; a file is selected when any pattern matches.
SELECT_PATTERNS: tuple[str, ...] = (
    "*.safetensors",  # weights
    "*.json",  # config.json, generation_config.json, *.safetensors.index.json, tokenizer*.json
    "*.jinja",  # chat_template.jinja (newer repos keep the chat template out of the tokenizer)
    "*.model",  # sentencepiece / tiktoken.model tokenizers
    "*.tiktoken",
    "*.txt",  # merges.txt, vocab.txt
    "*.py",  # configuration_*.py, modeling_*.py, tokenization_*.py (trust_remote_code)
)

# Other weight formats: used only when the repository has no *.safetensors at all.
FALLBACK_WEIGHT_PATTERNS: tuple[str, ...] = ("*.bin", "*.pt", "*.pth", "*.gguf")

# Never downloaded, even when a pattern above matches.
SKIP_PATTERNS: tuple[str, ...] = (
    "README*",
    "*/README*",
    "*.md",
    "LICENSE*",
    "*/LICENSE*",
    ".gitattributes",
    "*.png",
    "*.jpg",
    "*.jpeg",
    "*.gif",
    "*.svg",
    "*.webp",
    "*.pdf",
    "*.mp4",
)

# Index files of the fallback formats, dropped together with them when safetensors exist.
_FALLBACK_INDEX = ("*.bin.index.json", "*.pt.index.json", "*.pth.index.json")


def _any(path: str, patterns: Iterable[str]) -> bool:
    return any(fnmatchcase(path, p) for p in patterns)


def select_files(paths: Iterable[str]) -> list[str]:
    """The paths (sorted) a server needs, out of every path of a repository at a commit."""
    all_paths = sorted(set(paths))
    has_safetensors = any(fnmatchcase(p, "*.safetensors") for p in all_paths)
    wanted = SELECT_PATTERNS if has_safetensors else SELECT_PATTERNS + FALLBACK_WEIGHT_PATTERNS
    skip = SKIP_PATTERNS + (_FALLBACK_INDEX if has_safetensors else ())
    return [p for p in all_paths if _any(p, wanted) and not _any(p, skip)]


def is_weight_file(path: str) -> bool:
    return _any(path, ("*.safetensors", *FALLBACK_WEIGHT_PATTERNS))
