"""The speculative algorithms this "SGLang" knows, read from its own source tree.

In SGLang 0.5.23 the names live in `sglang/srt/speculative/spec_info.py` (the builtin
`SpeculativeAlgorithm` enum) plus plugins registered through `SpeculativeAlgorithm.register`
(`sglang/srt/speculative/spec_registry.py`), and `NEXTN` is a reserved alias of `EAGLE`
(`spec_registry._RESERVED_ALIASES`). A patch such as sgl-project/sglang#29907 adds `DDTREE`
there. In a simulator image the shim's `spec_info.py` plays that role, so a patch applied to
it changes what the simulator accepts, exactly as it would on a GPU image.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

SPEC_INFO_MODULE = "sglang.srt.speculative.spec_info"
# mirrors sglang/srt/speculative/spec_registry.py (_RESERVED_ALIASES: NEXTN -> EAGLE)
RESERVED_ALIASES = {"NEXTN": "EAGLE"}


@dataclass(frozen=True)
class Registry:
    names: tuple[str, ...]  # canonical upper-case names, NONE included
    source: str  # where they were read: the module's file, or "builtin list of <catalog>"

    def resolve(self, name: str) -> str | None:
        """The canonical name for `--speculative-algorithm NAME`, or None when unknown."""
        upper = name.upper()
        if upper in self.names:
            return upper
        return RESERVED_ALIASES.get(upper)

    def accepted(self) -> list[str]:
        return sorted({*self.names, *RESERVED_ALIASES} - {"NONE"})


def load_registry(builtin: list[str], catalog_name: str) -> Registry:
    """Read the registry from `sglang.srt.speculative.spec_info`, else use the builtin list."""
    try:
        module = importlib.import_module(SPEC_INFO_MODULE)
    except Exception:  # not importable here (host without the shim): the catalog's list
        return Registry(tuple(n.upper() for n in builtin), f"builtin list of {catalog_name}")
    names: list[str] = []
    enum = getattr(module, "SpeculativeAlgorithm", None)
    if enum is not None:
        names.extend(member.name for member in enum)
    registered = getattr(module, "registered_names", None)
    if callable(registered):
        names.extend(str(name) for name in registered())
    if not names:
        return Registry(tuple(n.upper() for n in builtin), f"builtin list of {catalog_name}")
    unique = tuple(dict.fromkeys(n.upper() for n in names))
    return Registry(unique, getattr(module, "__file__", None) or SPEC_INFO_MODULE)
