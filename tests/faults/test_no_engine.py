"""`repro bench --url` on a machine whose Docker engine does not answer (a lent GPU box runs
SGLang bare), where an earlier `repro launch` left a deployment at the same port: the server
is still measured, and the record names no image rather than failing on the engine."""

from __future__ import annotations

import json
from pathlib import Path

from repro.launch.deploy import SPEC_NAME
from repro.launch.spec import LaunchSpec
from repro.runfolder import RunFolder
from tests.support.cli import isolated_env, repro
from tests.support.simulator import Simulators


def test_bench_url_measures_the_server_when_a_stale_deployment_holds_its_port_and_no_engine_answers(
    simulator: Simulators,
    tmp_path: Path,
) -> None:
    server = simulator.tiny()
    try:
        env = isolated_env(tmp_path)
        stale = LaunchSpec(
            name="demo", image="repro/demo:gone", argv=[], port=30000,
            host_port=server.port, gpu_ids=None, hf_cache=tmp_path / "hub",
        )  # fmt: skip
        folder = Path(env["REPRO_STATE_DIR"]) / "deployments" / "demo"
        folder.mkdir(parents=True)
        (folder / SPEC_NAME).write_text(stale.model_dump_json())
        env["DOCKER_HOST"] = f"unix://{tmp_path}/no-engine.sock"
        out = tmp_path / "run"
        result = repro(
            "bench", "--url", server.url, "--concurrency", "1", "--prompts", "2",
            "--output-len", "8", "--output", str(out), cwd=tmp_path, env=env,
        )  # fmt: skip
    finally:
        server.stop()
    assert result.returncode == 0, result.stderr
    assert "Docker engine" not in result.stderr
    info = json.loads(RunFolder(out).server_info_file.read_text())
    assert "image_id" not in info and "deployment" not in info, info
    assert RunFolder(out).summary_file.exists()
