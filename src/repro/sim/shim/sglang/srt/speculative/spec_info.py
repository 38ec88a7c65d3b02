"""Speculative decoding algorithms known to this SGLang (the simulator's copy of the registry).

The members are SGLang 0.5.23's builtins (sglang/srt/speculative/spec_info.py), in the same
order; `register` records plugin algorithms as spec_registry.py does. The simulator reads this
module at start-up, so a patch that adds a member (sgl-project/sglang#29907 adds DDTREE) makes
`--speculative-algorithm DDTREE` and `--speculative-ddtree-budget` valid, as on a GPU image.
"""

from enum import Enum, auto


class SpeculativeAlgorithm(Enum):
    """Builtin speculative decoding algorithms."""

    DFLASH = auto()
    UNO = auto()
    DSPARK = auto()
    EAGLE = auto()
    EAGLE3 = auto()
    FROZEN_KV_MTP = auto()
    STANDALONE = auto()
    NGRAM = auto()
    NONE = auto()

    @classmethod
    def from_string(cls, name):
        if name is None:
            return cls.NONE
        upper = name.upper()
        if upper in cls.__members__:
            return cls[upper]
        if upper in _RESERVED_ALIASES:
            return cls.EAGLE
        if upper in _REGISTRY:
            return _REGISTRY[upper]
        raise ValueError(f"Unknown speculative algorithm name: {name}")

    @classmethod
    def register(cls, name, **options):
        """Decorator registering a plugin algorithm under `name` (spec_registry.py)."""

        def decorator(factory):
            upper = name.upper()
            if upper in cls.__members__ or upper in _RESERVED_ALIASES:
                raise ValueError(f"Speculative algorithm name {name!r} is reserved.")
            _REGISTRY[upper] = upper
            return factory

        return decorator

    def is_none(self):
        return self is SpeculativeAlgorithm.NONE


_RESERVED_ALIASES = frozenset({"NEXTN"})
_REGISTRY: dict = {}


def registered_names():
    """Names registered by plugins (the builtins are the enum's members)."""
    return list(_REGISTRY)
