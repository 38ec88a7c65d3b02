"""`python3 -m sglang.launch_server <argv>` for the simulator: start-up, logs, shutdown.

The sequence imitates SGLang's: parse the server args (argparse errors exit 2), print
`server_args=ServerArgs(...)`, "load weights" for REPRO_SIM_LOAD_SECONDS (the port already
answers, with 503 on /health and /health_generate), allocate the KV cache, run a warmup
generation (unless --skip-server-warmup), then log "The server is fired up and ready to
roll!". Start-up refusals SGLang raises as ValueError exit 1. SIGTERM/SIGINT stop the server
with exit code 0. Logs go to stdout as `[YYYY-MM-DD HH:MM:SS] message`.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys

from aiohttp import web

from repro.sim.app import build_app
from repro.sim.config import SimConfig, StartupError, resolve
from repro.sim.http import Frontend
from repro.sim.profile import ProfileError
from repro.sim.tokenizer_manager import TokenizerManager

try:  # the shim's version (a patched image may carry another); the catalog's without it
    from sglang.version import __version__ as SGLANG_VERSION
except ImportError:
    SGLANG_VERSION = "0.5.23"

logger = logging.getLogger("sglang.launch_server")


def _configure_logging(level: str = "info") -> None:
    logging.basicConfig(
        level=getattr(logging, level.upper(), logging.INFO),
        format="[%(asctime)s] %(message)s",
        datefmt="%Y-%m-%d %H:%M:%S",
        stream=sys.stdout,
        force=True,
    )
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)


def _server_args_line(cfg: SimConfig) -> str:
    values = cfg.server_args()
    return "server_args=ServerArgs(" + ", ".join(f"{k}={v!r}" for k, v in values.items()) + ")"


def _crash(cfg: SimConfig, message: str) -> None:
    logger.error(f"Scheduler hit an exception: RuntimeError: {message}")
    logger.error("Received sigquit from a child process. It usually means the child failed.")
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(cfg.exit_code)


async def _warmup(manager: TokenizerManager) -> None:
    # mirrors http_server.py _execute_server_warmup: 8 greedy tokens of a fixed prompt
    event = asyncio.Event()
    req = manager.new_request(
        manager.prompt_from_text("The capital city of France is"),
        {"max_new_tokens": 8, "temperature": 0},
        stream=False,
        event=event,
    )
    manager.submit(req)
    await event.wait()
    manager.forget(req)


async def serve(cfg: SimConfig) -> int:
    manager = TokenizerManager(cfg)
    frontend = Frontend(cfg, manager, str(SGLANG_VERSION))
    runner = web.AppRunner(build_app(frontend), access_log=None, handle_signals=False)
    await runner.setup()
    host, port = cfg.args.host, int(cfg.args.port)
    try:
        await web.TCPSite(runner, host, port).start()
    except OSError as e:
        logger.error(f"Failed to bind {host}:{port}: {e}")
        await runner.cleanup()
        return 1
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    if cfg.exit_after is not None:
        loop.call_later(
            cfg.exit_after,
            _crash,
            cfg,
            f"simulated crash (REPRO_SIM_EXIT_AFTER_SECONDS={cfg.exit_after:g})",
        )
    watcher = asyncio.ensure_future(frontend.watch_disconnects())
    logger.info(f"Uvicorn running on http://{host}:{port} (simulator: 503 until loaded)")
    logger.info(f"Load weight begin. model={cfg.args.model_path}")
    await asyncio.sleep(cfg.load_seconds)
    if cfg.fail_at_start:
        reason = cfg.fail_at_start
        if reason.lower() in ("1", "true", "yes"):
            reason = "simulated start-up failure (REPRO_SIM_FAIL_AT_START)"
        _crash(cfg, reason)
    logger.info(
        f"Load weight end. simulated in {cfg.load_seconds:.2f} s (profile {cfg.profile.name})"
    )
    logger.info(
        f"KV Cache is allocated. #tokens: {cfg.kv_tokens}, "
        f"max_running_requests={cfg.max_running_requests * cfg.dp_size}, "
        f"context_len={cfg.context_length}"
    )
    floor = manager.min_time_scale
    if 0 < cfg.time_scale < floor:
        logger.warning(
            f"time-scale {cfg.time_scale:g} is below {floor:.2g}, the smallest this host keeps "
            f"for profile {cfg.profile.name} (it emits a token in "
            f"{manager.host_cost_s * 1e6:.0f} us): the simulator will fall behind its clock "
            "at high load, and repro bench marks such levels invalid"
        )
    manager.start()
    frontend.loaded.set()
    if not cfg.args.skip_server_warmup:
        await _warmup(manager)
    manager.ready = True
    logger.info("The server is fired up and ready to roll!")
    await stop.wait()
    logger.info("Shutting down")
    for sig in (signal.SIGTERM, signal.SIGINT):
        # A second signal during shutdown now ends the process at once, instead of racing
        # the event loop's closing wakeup fd ("Exception ignored ... Bad file descriptor").
        loop.remove_signal_handler(sig)
    watcher.cancel()
    manager.close()
    await runner.cleanup()
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    _configure_logging()
    try:
        cfg = resolve(argv)
    except (StartupError, ProfileError) as e:
        logger.error(f"{type(e).__name__ if isinstance(e, ProfileError) else 'ValueError'}: {e}")
        return 1
    _configure_logging(str(cfg.args.log_level or "info"))
    profile = cfg.profile
    logger.info(
        f"repro SGLang simulator (not SGLang): profile {profile.name!r}; every latency, "
        "throughput and acceptance number it reports is simulated."
    )
    logger.info(
        f"speculative algorithms from {cfg.registry.source}: {', '.join(cfg.registry.names)}"
    )
    for warning in cfg.warnings:
        logger.warning(warning)
    logger.info(_server_args_line(cfg))
    try:
        return asyncio.run(serve(cfg))
    except KeyboardInterrupt:
        return 0
