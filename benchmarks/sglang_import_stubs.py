"""Let `sglang.benchmark.serving` import where only the client's own dependencies are
installed: as a `sitecustomize`, a module that SGLang's own code imports but that is not
installed (torch's kernels, zmq, IPython, datasets, ... which only the server and other
benchmarks use) becomes an inert stub. Imports from any other package are left alone, so
their optional-dependency checks still see the truth. Used by
benchmarks/on_device.sh; put this file's folder on PYTHONPATH as sitecustomize.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import types
from typing import Any

_MARK = "/sglang/"
# Never stubbed: sglang itself, and torchcodec, which SGLang imports inside `try`
# (srt/utils/video_decoder.py: torchcodec, else decord) and which transformers, finding a stub
# through `importlib.util.find_spec`, reads the version of from package metadata
# (audio_utils.py): that fails as "Could not import module 'AutoProcessor'".
_SKIP = frozenset({"sglang", "torchcodec"})


class _Anything:
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __call__(self, *args: Any, **kwargs: Any) -> _Anything:
        return _Anything()

    def __getattr__(self, name: str) -> _Anything:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _Anything()

    def __mro_entries__(self, bases: tuple[Any, ...]) -> tuple[type, ...]:
        return (object,)

    def __iter__(self) -> Any:
        return iter(())

    def __bool__(self) -> bool:
        return False

    def __getitem__(self, key: Any) -> _Anything:
        return _Anything()

    def __or__(self, other: Any) -> _Anything:
        return self

    __ror__ = __or__


class _Stub(types.ModuleType):
    __version__ = "0.0.0"  # read at import (srt/utils/common.py: torch.__version__)

    def __getattr__(self, name: str) -> _Anything:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _Anything()


class _Loader(importlib.abc.Loader):
    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        return _Stub(spec.name)

    def exec_module(self, module: types.ModuleType) -> None:
        module.__path__ = []


def _importer() -> str:
    frame = sys._getframe(2)
    while frame is not None and (
        frame.f_code.co_filename.startswith("<frozen") or frame.f_code.co_filename == __file__
    ):
        frame = frame.f_back  # type: ignore[assignment]
    return frame.f_code.co_filename if frame is not None else ""


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        top = name.split(".")[0]
        if top.startswith("_") or top in sys.stdlib_module_names or top in _SKIP:
            return None
        real = sys.modules.get(top)
        if real is not None and not isinstance(real, _Stub):
            return None
        if not isinstance(real, _Stub) and _MARK not in _importer():
            return None
        print(f"sglang_import_stubs: {name} stubbed", file=sys.stderr)
        return importlib.machinery.ModuleSpec(name, _Loader(), is_package=True)


sys.meta_path.append(_Finder())

# serving.py takes one constant from sglang.srt.disaggregation.utils, whose own imports load
# the model layers (torch kernels, quantization): that module is given with the constant
# alone, its value as in SGLang 0.5.23's source.
_disagg = types.ModuleType("sglang.srt.disaggregation.utils")
_disagg.FAKE_BOOTSTRAP_HOST = "2.2.2.2"  # type: ignore[attr-defined]
sys.modules[_disagg.__name__] = _disagg
