"""Import stand-ins that let SGLang's own engine start where its native packages cannot load.

Installed as a meta-path finder placed *last* on ``sys.meta_path`` (by the ``sitecustomize.py``
beside this file), so a real package, when installed, always wins. Each stand-in module answers
any attribute with a callable that raises ``NotImplementedError`` naming the op, except the few
real ops listed in ``REAL_OPS``. Every import of a stand-in module and every op asked for is
appended, one JSON object a line, to the file named by ``$REPRO_STANDIN_LOG`` (when set), so a
run can show exactly which native ops SGLang reached for.

This file is copied next to ``sitecustomize.py`` into the engine's environment; it must not
import repro (repro is not installed there) and must stay importable on any Python >= 3.10.
"""

from __future__ import annotations

import ctypes
import importlib.abc
import importlib.machinery
import json
import os
import sys
import types
from collections.abc import Callable
from typing import Any

LOG_ENV = "REPRO_STANDIN_LOG"
EXTRA_ENV = "REPRO_STANDINS_EXTRA"
HEADERS_ENV = "REPRO_FLASHINFER_HEADERS"  # a folder holding flashinfer's data/ headers

# Top-level names served by a stand-in when no real package is found; more, comma-separated,
# from $REPRO_STANDINS_EXTRA (the H200 run adds ``cutlass``, ``IPython`` and ``flashinfer``).
_EXTRA = tuple(name.strip() for name in os.environ.get(EXTRA_ENV, "").split(",") if name.strip())
STANDIN_ROOTS = ("sgl_kernel", "torchvision", *_EXTRA)


def _log(event: str, name: str) -> None:
    path = os.environ.get(LOG_ENV)
    if not path:
        return
    line = json.dumps({"event": event, "name": name, "pid": os.getpid()}) + "\n"
    with open(path, "a", encoding="utf-8") as out:
        out.write(line)


def copy_all_layer_kv_cache_cpu(data_ptrs: Any, strides: Any, tgt_loc: Any, src_loc: Any) -> None:
    """Copy KV rows ``src_loc[j] -> tgt_loc[j]`` in every layer buffer (byte rows).

    Mirrors the Triton kernel ``copy_all_layer_kv_cache_tiled`` in
    sglang/kernels/ops/kvcache/cache_move.py: buffer ``i`` starts at ``data_ptrs[i]`` and its
    rows are ``strides[i]`` bytes; all sources are read before any target is written, so an
    in-place (overlapping) copy is safe, as in the kernel.
    """
    _log("call", "sgl_kernel.copy_all_layer_kv_cache_cpu")
    targets = [int(x) for x in tgt_loc.tolist()]
    sources = [int(x) for x in src_loc.tolist()]
    for base, stride in zip(data_ptrs.tolist(), strides.tolist(), strict=True):
        rows = [ctypes.string_at(base + src * stride, stride) for src in sources]
        for tgt, row in zip(targets, rows, strict=True):
            ctypes.memmove(base + tgt * stride, row, stride)


def top_p_renorm_probs(probs: Any, top_p: Any) -> Any:
    """flashinfer.sampling.top_p_renorm_probs (keep the smallest top set whose mass reaches
    top_p, renormalised), done by SGLang's own torch fallback
    (sglang/srt/layers/sampler.py ``top_p_normalize_probs_torch``), which dflash_utils.py
    ``_dflash_top_p_renorm_prob`` uses where no kernel is."""
    _log("call", "flashinfer.sampling.top_p_renorm_probs")
    import torch
    from sglang.srt.layers.sampler import top_p_normalize_probs_torch

    if not isinstance(top_p, torch.Tensor):
        top_p = torch.full((probs.shape[0],), float(top_p), device=probs.device)
    return top_p_normalize_probs_torch(probs.clone(), top_p)


def top_k_renorm_probs(probs: Any, top_k: Any) -> Any:
    """flashinfer.sampling.top_k_renorm_probs (keep each row's top_k probabilities,
    renormalised), in torch as dflash_utils.py ``_dflash_top_k_renorm_prob`` does without
    a kernel."""
    _log("call", "flashinfer.sampling.top_k_renorm_probs")
    import torch

    rows, vocab = probs.shape
    if not isinstance(top_k, torch.Tensor):
        top_k = torch.full((rows,), int(top_k), device=probs.device)
    top_k = top_k.reshape(-1).to(device=probs.device, dtype=torch.int64).clamp(1, vocab)
    kept, index = torch.topk(probs, k=int(top_k.max().item()), dim=-1)
    ranks = torch.arange(kept.shape[-1], device=probs.device)[None, :]
    kept = kept.masked_fill(ranks >= top_k[:, None], 0.0)
    kept = kept / kept.sum(dim=-1, keepdim=True)
    return torch.zeros_like(probs).scatter_(1, index, kept)


def _is_arch_support_pdl(*_args: Any, **_kwargs: Any) -> bool:
    """Programmatic dependent launch needs the real kernels; without them, never supported."""
    return False


# Ops that do real work (or answer a capability question) instead of raising.
REAL_OPS: dict[str, Callable[..., Any]] = {
    "sgl_kernel.copy_all_layer_kv_cache_cpu": copy_all_layer_kv_cache_cpu,
    "sgl_kernel.utils.is_arch_support_pdl": _is_arch_support_pdl,
    "flashinfer.sampling.top_p_renorm_probs": top_p_renorm_probs,
    "flashinfer.sampling.top_k_renorm_probs": top_k_renorm_probs,
}


def _not_here(qualname: str, what: str) -> NotImplementedError:
    """What a stand-in raises when it is used: it names itself, after logging the call."""
    _log("call", qualname)
    return NotImplementedError(
        f"{qualname} is a repro CPU-test stand-in: the native {what} is not available here"
    )


def _standin_class(qualname: str) -> type:
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        raise _not_here(qualname, "class")

    module, _, name = qualname.rpartition(".")
    return type(name, (), {"__init__": __init__, "__module__": module, "__qualname__": name})


class StandinOp:
    """A native op, class or constant that is not here: calling it raises, naming it (except
    as a bare decorator); any attribute of it is another stand-in (``InterpolationMode.BICUBIC``
    at import time)."""

    def __init__(self, qualname: str) -> None:
        self.__qualname__ = qualname
        self.__name__ = qualname.rsplit(".", 1)[-1]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if len(args) == 1 and not kwargs and callable(args[0]):
            # used as a decorator at import time (cutlass' ``@cute.jit`` on a kernel class
            # SGLang defines but never runs here): leave the decorated object as it is
            _log("decorate", self.__qualname__)
            return args[0]
        raise _not_here(self.__qualname__, "op")

    def __mro_entries__(self, bases: tuple[Any, ...]) -> tuple[type, ...]:
        """As a base class (SGLang subclasses ``flashinfer.comm.mnnvl.TorchDistBackend`` at
        import time): a class that raises when anything makes an instance of it."""
        _log("subclass", self.__qualname__)
        return (_standin_class(self.__qualname__),)

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        child = StandinOp(f"{self.__qualname__}.{attr}")
        setattr(self, attr, child)
        return child

    def __repr__(self) -> str:
        return f"<repro stand-in {self.__qualname__}>"


class StandinModule(types.ModuleType):
    """A package whose every public attribute is a stand-in op (or one of ``REAL_OPS``)."""

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        qualname = f"{self.__name__}.{attr}"
        _log("lookup", qualname)
        value = REAL_OPS.get(qualname) or StandinOp(qualname)
        setattr(self, attr, value)
        return value


class StandinFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves ``STANDIN_ROOTS`` and their submodules when nothing else on the path does."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        root = fullname.split(".", 1)[0]
        if root not in STANDIN_ROOTS:
            return None
        # SGLang's JIT finds flashinfer's C++ headers beside the package's origin
        # (sglang/kernels/jit/utils/deps.py: <root>/data/include, csrc, cutlass, spdlog):
        # with $REPRO_FLASHINFER_HEADERS the stand-in package lives there, headers and all.
        headers = os.environ.get(HEADERS_ENV) if fullname == "flashinfer" else None
        origin = os.path.join(headers, "__init__.py") if headers else None
        return importlib.machinery.ModuleSpec(fullname, self, origin=origin, is_package=True)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        module = StandinModule(spec.name)
        module.__path__ = []
        module.__version__ = "0.0.0+repro.standin"  # type: ignore[attr-defined]
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        _log("import", module.__name__)


def install() -> None:
    """Append the finder once (idempotent: sitecustomize may run in every spawned process)."""
    if not any(isinstance(f, StandinFinder) for f in sys.meta_path):
        sys.meta_path.append(StandinFinder())
