"""repro's CPU-test layer: import stand-ins for SGLang's native packages that cannot load here.

This folder is data, not part of repro: ``scripts/ensure-sglang`` (and the CPU image recipe)
copy ``sitecustomize.py`` and ``repro_standins.py`` into the engine's site-packages, where
Python imports ``sitecustomize`` in every process, SGLang's spawned scheduler and detokenizer
included. The finder sits last on ``sys.meta_path``: an installed real package always wins.

Stand-ins, and why each is needed:

- ``sgl_kernel`` (and any submodule): SGLang's kernel library (PyPI ``sglang-kernel``) has no
  CPU build, and its CUDA build is compiled against torch 2.14, so it cannot load on torch 2.13
  or 2.11 either. SGLang imports it at module level on CPU (``sgl_kernel.scalar_type``, the
  ``*_cpu`` cache-location ops in ``mem_cache``/``speculative``), but plain serving calls only
  one op, ``copy_all_layer_kv_cache_cpu`` (a KV row copy at warm-up and on cache moves;
  ``sglang/kernels/ops/kvcache/cache_move.py``), implemented here with ``ctypes.memmove``.
  ``sgl_kernel.utils.is_arch_support_pdl`` answers False (asked on CUDA). Every other op
  raises ``NotImplementedError`` naming itself.
- ``torchvision``: imported at module level by SGLang's multimodal helpers
  (``srt/multimodal/internvl_utils.py``) and then by transformers' image utilities; PyPI's
  build does not load beside torch 2.13.0+cpu. Text models never call it.
- ``cutlass`` (only with ``REPRO_STANDINS_EXTRA=cutlass``): imported by SGLang's dual-GEMM
  module on CUDA; unused below sm_100. The H200 run needs it; the CPU engine does not.
- ``flashinfer`` (only with ``REPRO_STANDINS_EXTRA=flashinfer``): SGLang 0.5.23's DFLASH
  verify renormalises target probabilities with ``flashinfer.sampling.top_p_renorm_probs`` /
  ``top_k_renorm_probs`` on CUDA (``sglang/kernels/ops/sampling/renorm.py``); flashinfer-python
  0.7.2's wheel is 65 MB, over what one H200 call carries beside SGLang's. Those two ops are
  real here, in torch (SGLang's own fallback where no kernel is); every other flashinfer op
  raises. Greedy requests (repro bench and accept send temperature 0) never reach them.
  With ``REPRO_FLASHINFER_HEADERS=DIR`` the stand-in package's origin is ``DIR/__init__.py``,
  so SGLang's JIT (``sglang/kernels/jit/utils/deps.py``) finds flashinfer's C++ headers in
  ``DIR/data`` (include, csrc, cutlass, spdlog: 6 MB as tar.xz, taken from the 0.7.2 wheel by
  scripts/gpu-engine) and builds DFLASH's sampling verify op
  (``tree_speculative_sampling_target_only``) with nvcc, as on a full install.

Any attribute of a stand-in is another stand-in, so import-time constants
(``InterpolationMode.BICUBIC``) resolve; calling one raises. With ``$REPRO_STANDIN_LOG`` set,
each stand-in import, attribute lookup and call is appended to that file as a JSON line
(``{"event": "import"|"lookup"|"call", "name": ..., "pid": ...}``): the record of what SGLang
asked for.
"""
