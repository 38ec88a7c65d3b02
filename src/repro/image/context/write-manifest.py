"""Write /opt/repro/manifest.json inside the image being built (standard library only).

The manifest records what the image really contains: SGLang version and commit, torch, CUDA,
sgl-kernel and flashinfer versions, compiled GPU architectures, the applied patches with their
sha256, the server option catalog (`ServerArgs.add_cli_args` on an argparse parser, the
same shape as repro's catalogs/sglang-<version>.json) and, on an image whose Python packages
were installed from downloaded wheels, each wheel's name, version and sha256.

With `--catalog-only` it writes just the option catalog, in the shipped catalogs' form: how
`repro image catalog` extracts a release's catalog from its wheel on the CPU.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path


def package_version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def git_commit(directory: str) -> str | None:
    result = subprocess.run(
        ["git", "-C", directory, "rev-parse", "HEAD"], capture_output=True, text=True
    )
    return result.stdout.strip() or None if result.returncode == 0 else None


def action_kind(action: argparse.Action) -> str:
    return type(action).__name__.replace("Action", "").replace("_", "").lower()


def json_default(value: object) -> object:
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list | tuple):
        return [json_default(item) for item in value]
    if isinstance(value, set | frozenset):  # e.g. SGLang's SAMPLING_BACKEND_CHOICES
        return sorted(json_default(item) for item in value)  # type: ignore[type-var]
    return str(value)


def option_catalog() -> list[dict[str, object]]:
    """Every server option, read from the image's own SGLang (sglang/srt/server_args.py)."""
    from sglang.srt.server_args import ServerArgs

    parser = argparse.ArgumentParser()
    ServerArgs.add_cli_args(parser)
    flags = []
    for action in parser._actions:
        kind = action_kind(action)
        flag: dict[str, object] = {
            "options": list(action.option_strings),
            "dest": action.dest,
            "kind": kind,
            "type": getattr(action.type, "__name__", None) if action.type else None,
            "nargs": action.nargs
            if action.nargs is not None
            else (0 if kind in ("storetrue", "storefalse", "help") else None),
            "choices": json_default(action.choices) if action.choices else None,
            "default": json_default(action.default),
        }
        # SGLang's Deprecated*Action carry the spelling that replaces them
        # (sglang/srt/arg_groups/argparse_actions.py)
        new_flag = getattr(action, "new_flag", None)
        if isinstance(new_flag, str):
            flag["new_flag"] = new_flag
        flags.append(flag)
    return flags


def speculative_algorithms() -> list[str]:
    try:
        from sglang.srt.speculative import spec_info
    except ImportError:
        return []
    names = getattr(spec_info, "ALGORITHM_NAMES", None) or getattr(spec_info, "NAMES", None)
    if names:
        return list(names)
    enum = getattr(spec_info, "SpeculativeAlgorithm", None)
    return [member.name for member in enum] if enum is not None else []


def declared_env() -> list[str]:
    """The SGLANG_* environment variables SGLang reads: those sglang/srt/environ.py declares
    (class Envs) and every quoted SGLANG_* name in its source (raw os.getenv calls)."""
    import sglang

    names: set[str] = set()
    try:
        from sglang.srt import environ

        names.update(name for name in vars(type(environ.envs)) if name.isupper() and name[0] != "_")
    except (ImportError, AttributeError):
        pass
    quoted = re.compile(r"[\"'](SGLANG_[A-Z0-9_]+)[\"']")
    for source in Path(sglang.__file__).parent.rglob("*.py"):
        names.update(quoted.findall(source.read_text(encoding="utf-8", errors="replace")))
    return sorted(names)


def model_architectures() -> list[str]:
    """The architectures SGLang can load: every class an `EntryClass` of sglang/srt/models
    names (what its ModelRegistry imports, sglang/srt/models/registry.py), read as text so
    that no model module is imported."""
    import sglang

    entry = re.compile(r"^EntryClass\s*=\s*(\[[^\]]*\]|[A-Za-z_]\w*)", re.MULTILINE)
    names: set[str] = set()
    for source in (Path(sglang.__file__).parent / "srt" / "models").rglob("*.py"):
        for found in entry.findall(source.read_text(encoding="utf-8", errors="replace")):
            names.update(re.findall(r"[A-Za-z_]\w*", found))
    return sorted(names)


def torch_facts() -> dict[str, object]:
    try:
        import torch
    except ImportError:
        return {"torch": None, "cuda": None, "compiled_archs": []}
    # The arch flags are compiled in; they are readable without a GPU (none at build time).
    flags = getattr(torch._C, "_cuda_getArchFlags", lambda: "")() or ""
    archs = sorted(set(flags.split()))
    return {"torch": torch.__version__, "cuda": torch.version.cuda, "compiled_archs": archs}


def patches(patch_dir: Path) -> list[dict[str, str]]:
    series = patch_dir / "series"
    if not series.exists():
        return []
    names = [line.strip() for line in series.read_text().splitlines() if line.strip()]
    return [
        {"name": name, "sha256": hashlib.sha256((patch_dir / name).read_bytes()).hexdigest()}
        for name in names
    ]


def installed_wheels(path: Path = Path("/opt/repro/wheels.json")) -> list[object] | None:
    """What a base built from downloaded wheels recorded of them (name, version, sha256)."""
    return list(json.loads(path.read_text())) if path.is_file() else None


def tolerate_registered_configs() -> None:
    """Let an older SGLang register model configs that a newer transformers already ships.

    A release wheel imported beside the CPU engine's transformers (0.5.15 registers
    `qwen3_asr`, which transformers 5.19 has) would stop at import; the parser is unaffected.
    """
    try:
        from transformers import AutoConfig
    except ImportError:  # an image without transformers (the simulator's) registers nothing
        return
    register = AutoConfig.register

    def register_again(*args: object, **kwargs: object) -> None:
        kwargs["exist_ok"] = True
        register(*args, **kwargs)

    AutoConfig.register = register_again


def write_catalog_only(output: Path) -> None:
    tolerate_registered_configs()
    import sglang

    catalog = {
        "sglang_version": getattr(sglang, "__version__", None) or package_version("sglang"),
        "flags": option_catalog(),
        "builtin_speculative_algorithms": speculative_algorithms(),
        "env": declared_env(),
        "model_architectures": model_architectures(),
    }
    output.write_text(json.dumps(catalog, indent=1) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--catalog-only", action="store_true", help="write only the catalog")
    parser.add_argument("--sglang-dir")
    parser.add_argument("--gpu-archs", default="", help="comma list declared by the image spec")
    parser.add_argument("--patches", type=Path)
    parser.add_argument("--output", type=Path, required=True)
    args = parser.parse_args()
    if args.catalog_only:
        write_catalog_only(args.output)
        return
    if args.sglang_dir is None or args.patches is None:
        parser.error("--sglang-dir and --patches are required (unless --catalog-only)")

    import sglang

    facts = torch_facts()
    declared = [arch for arch in args.gpu_archs.split(",") if arch]
    manifest = {
        "sglang_version": getattr(sglang, "__version__", None) or package_version("sglang"),
        "sglang_commit": git_commit(args.sglang_dir),
        "simulated": bool(getattr(sglang, "REPRO_SIMULATED", False)),
        "python": sys.version.split()[0],
        "torch": facts["torch"],
        "cuda": facts["cuda"],
        # the kernel distribution is sglang-kernel since SGLang 0.5.17 (import name sgl_kernel)
        "sgl_kernel": package_version("sglang-kernel") or package_version("sgl-kernel"),
        "flashinfer": package_version("flashinfer-python") or package_version("flashinfer"),
        "gpu_archs": declared,
        "compiled_archs": facts["compiled_archs"],
        "patches": patches(args.patches),
        "speculative_algorithms": speculative_algorithms(),
        "environment": declared_env(),
        "model_architectures": model_architectures(),
        "catalog": option_catalog(),
    }
    wheels = installed_wheels()
    if wheels is not None:
        manifest["wheels"] = wheels
    args.output.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    print(f"repro: wrote {args.output} ({len(manifest['catalog'])} server options)")  # type: ignore[arg-type]


if __name__ == "__main__":
    main()
