"""SGLang's server command line, rebuilt from an option catalog.

The catalog (package data, `repro/catalogs/sglang-0.5.23.json`, the one recipes are checked
against) is the JSON dump of `ServerArgs.add_cli_args` from the SGLang 0.5.23 wheel: every
option's strings, dest, action kind, type, nargs, choices and default. Rebuilding the parser
from it means the simulator accepts exactly the argv SGLang accepts (and rejects the rest with
argparse's exit code 2), while only reading the handful of values it simulates.
`REPRO_SIM_CATALOG` points at another catalog file (e.g. one extracted from a newer image).
Without it, the catalog is the one repro ships for the SGLang version the source tree reports
(`sglang.version`): a simulator image patched to stand in for another release (the DDTree
image's 0.5.15, `repro run R --sim`) parses that release's command line.

Type converters and action classes carry SGLang's names (sglang/srt/utils/common.py,
sglang/srt/arg_groups/argparse_actions.py), so dumping this parser the way repro dumps a real
image's gives the same catalog back.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
from collections.abc import Callable, Sequence
from decimal import Decimal
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

CATALOG_ENV = "REPRO_SIM_CATALOG"
DEFAULT_CATALOG = resources.files("repro").joinpath("catalogs", "sglang-0.5.23.json")
# Added by sgl-project/sglang#29907 (DDTree) together with the DDTREE algorithm; offered only
# when the speculative registry has DDTREE, as on a patched image.
DDTREE_BUDGET_OPTION = "--speculative-ddtree-budget"

logger = logging.getLogger("sglang.srt.server_args")


def human_readable_int(value: str) -> int:
    """`25.6k` -> 25600, `1Ki` -> 1024 (mirrors sglang/srt/utils/common.py)."""
    value = value.strip()
    match = re.fullmatch(r"(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|k|M|G|T)", value)
    if match:
        number, suffix = match.groups()
        iec = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}
        if suffix in iec:
            if "." in number:
                raise argparse.ArgumentTypeError(
                    f"Decimals are not allowed with IEC suffixes like '{suffix}'."
                )
            return int(number) * iec[suffix]
        return int(Decimal(number) * {"k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}[suffix])
    try:
        return int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"Invalid integer value: {value!r}") from None


def json_list_type(value: str) -> Any:
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        raise argparse.ArgumentTypeError(
            f"Invalid JSON list: {value}. Please provide a valid JSON list."
        ) from None


def nullable_str(val: str) -> str | None:
    return None if not val or val == "None" else val


def parse_cuda_graph_backend_arg(raw: str) -> str:
    if raw == "tc_piecewise":
        raise argparse.ArgumentTypeError(
            "tc_piecewise was removed; select breakable, full, or disabled"
        )
    return raw


def parse_cuda_graph_config_arg(raw: str) -> Any:
    try:
        parsed = json.loads(raw)
    except json.JSONDecodeError as e:
        raise argparse.ArgumentTypeError(f"--cuda-graph-config must be JSON: {e}") from None
    if not isinstance(parsed, dict):
        raise argparse.ArgumentTypeError("--cuda-graph-config must be a JSON object")
    return parsed


_TYPES: dict[str, Callable[[str], Any]] = {
    "str": str,
    "int": int,
    "float": float,
    "human_readable_int": human_readable_int,
    "loads": json.loads,
    "json_list_type": json_list_type,
    "nullable_str": nullable_str,
    "parse_cuda_graph_backend_arg": parse_cuda_graph_backend_arg,
    "parse_cuda_graph_config_arg": parse_cuda_graph_config_arg,
}


def _deprecated(option: str | None, new_flag: str | None) -> None:
    replacement = f" Use '{new_flag}' instead." if new_flag else ""
    logger.warning(
        f"\033[1;33m'{option}' is deprecated and will be removed in a future release."
        f"{replacement}\033[0m"
    )


class LoRAPathAction(argparse.Action):
    """`--lora-paths a b {"lora_name":..,"lora_path":..}` (argparse_actions.py)."""

    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: Any = None):
        paths: list[Any] = []
        for value in values or []:
            value = value.strip()
            paths.append(json.loads(value) if value.startswith("{") else value)
        setattr(namespace, self.dest, paths)


class DeprecatedStoreTrueAction(argparse.Action):
    """A retired boolean that still stores True, with a warning (argparse_actions.py)."""

    def __init__(self, option_strings: Any, dest: str, new_flag: Any = None, **kwargs: Any):
        self.new_flag = new_flag
        kwargs.setdefault("default", False)
        super().__init__(option_strings, dest, nargs=0, const=True, **kwargs)

    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: Any = None):
        _deprecated(option_string, self.new_flag)
        setattr(namespace, self.dest, True)


class DeprecatedStoreConstAction(argparse.Action):
    """An old valued flag whose one value became a boolean (argparse_actions.py)."""

    def __init__(self, option_strings: Any, dest: str, new_flag: Any = None, **kwargs: Any):
        self.new_flag = new_flag
        super().__init__(option_strings, dest, **kwargs)

    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: Any = None):
        _deprecated(option_string, self.new_flag)
        setattr(namespace, self.dest, True)


# new_flag= of the deprecated registrations in sglang/srt/server_args.py (add_cli_args)
_NEW_FLAGS = {
    "--disable-cuda-graph": "--cuda-graph-backend-{decode,prefill}=disabled",
    "--enable-dp-attention": "--attn-dp-size <dp-size>",
    "--monokernel-backend": "--enable-amd-monokernel",
}


def shipped_catalog(version: str) -> Traversable | None:
    """The catalog repro ships for SGLang `version`, if any."""
    source = resources.files("repro").joinpath("catalogs", f"sglang-{version}.json")
    return source if source.is_file() else None


def _source_tree_catalog() -> Traversable:
    """The shipped catalog of the version `sglang.version` reports, else 0.5.23's."""
    try:
        from sglang.version import __version__ as version
    except ImportError:
        return DEFAULT_CATALOG
    return shipped_catalog(str(version)) or DEFAULT_CATALOG


def load_catalog(path: str | Path | None = None) -> dict[str, Any]:
    chosen = path or os.environ.get(CATALOG_ENV)
    source: Traversable = Path(chosen) if chosen else _source_tree_catalog()
    data = json.loads(source.read_text(encoding="utf-8"))
    data.setdefault("_path", str(source))
    return dict(data)


def _add_flag(parser: argparse.ArgumentParser, flag: dict[str, Any]) -> None:
    options = list(flag["options"])
    kind = flag["kind"]
    dest = flag["dest"]
    default = flag.get("default")
    choices = flag.get("choices")
    if kind == "help":
        return
    if kind in ("storetrue", "storefalse"):
        action = "store_true" if kind == "storetrue" else "store_false"
        parser.add_argument(*options, dest=dest, action=action, default=default)
    elif kind == "booleanoptional":
        positive = [o for o in options if not o.startswith("--no-")]
        parser.add_argument(
            *positive, dest=dest, action=argparse.BooleanOptionalAction, default=default
        )
    elif kind == "deprecatedstoretrue":
        parser.add_argument(
            *options,
            dest=dest,
            action=DeprecatedStoreTrueAction,
            new_flag=_NEW_FLAGS.get(options[0]),
            default=default,
        )
    elif kind == "deprecatedstoreconst":
        parser.add_argument(
            *options,
            dest=dest,
            action=DeprecatedStoreConstAction,
            new_flag=_NEW_FLAGS.get(options[0]),
            choices=choices,
            default=default,
        )
    elif kind == "lorapath":
        parser.add_argument(
            *options,
            dest=dest,
            action=LoRAPathAction,
            type=_TYPES.get(str(flag.get("type")), str),
            nargs=flag.get("nargs") or "*",
        )
    else:  # "store" and anything unknown: take a value, converted when the type is known
        kwargs: dict[str, Any] = {"dest": dest, "default": default}
        if flag.get("type") in _TYPES:
            kwargs["type"] = _TYPES[flag["type"]]
        if flag.get("nargs") not in (None, 0):
            kwargs["nargs"] = flag["nargs"]
        if choices:
            kwargs["choices"] = choices
        parser.add_argument(*options, **kwargs)


def add_cli_args(
    parser: argparse.ArgumentParser,
    catalog: dict[str, Any] | None = None,
    algorithms: Sequence[str] = (),
) -> None:
    """Add every option of the catalog (plus DDTree's budget when DDTREE is registered)."""
    catalog = catalog if catalog is not None else load_catalog()
    known: set[str] = set()
    for flag in catalog["flags"]:
        if known.intersection(flag["options"]):
            continue
        known.update(flag["options"])
        _add_flag(parser, flag)
    if "DDTREE" in {a.upper() for a in algorithms} and DDTREE_BUDGET_OPTION not in known:
        parser.add_argument(DDTREE_BUDGET_OPTION, dest="speculative_ddtree_budget", type=int)


def build_parser(
    catalog: dict[str, Any] | None = None, algorithms: Sequence[str] = ()
) -> argparse.ArgumentParser:
    # mirrors sglang/srt/server_args.py prepare_server_args (prog name included)
    parser = argparse.ArgumentParser(prog="sglang serve")
    add_cli_args(parser, catalog, algorithms)
    return parser
