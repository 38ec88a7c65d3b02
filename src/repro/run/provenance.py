"""The provenance a bench or accept record notes on this machine (see `repro.bench.provenance`),
collected here, above bench, from the doctor and launch stages, once per command."""

from __future__ import annotations

from collections.abc import Iterable

from repro.bench.provenance import Provenance
from repro.bench.target import BenchTarget
from repro.doctor import collect_fingerprint
from repro.runfolder import RunFolder


def local_provenance(urls: Iterable[str], *, machine: bool = True) -> Provenance:
    """This machine's fingerprint (unless `machine` is False: a `repro run` folder has its
    own from the doctor stage) and the image each of `urls` runs when repro launched it."""
    from repro.launch.deploy import running_image  # deferred: imports python_on_whales

    images = {url.rstrip("/"): running_image(url) for url in urls}
    return Provenance(
        machine=collect_fingerprint().recorded() if machine else None,
        images={url: image for url, image in images.items() if image is not None},
    )


def target_url(target: BenchTarget) -> str:
    """Where `target`'s server answers: its URL, else the host port of the deployment repro
    launched for the recipe (`repro launch --port`), else the recipe's server.port."""
    if target.url is not None or target.recipe is None:
        return target.server_url()
    from repro.launch.deploy import load_spec  # deferred: imports python_on_whales

    spec = load_spec(target.recipe.name)
    return target.server_url(spec.host_port if spec is not None else None)


def keep_server_log(folder: RunFolder, deployment: str) -> None:
    """The last log lines of the deployment repro launched as `deployment` (the recipe's
    name), as the folder's server.log; nothing when it has none."""
    from repro.launch.deploy import RECORDED_LOG_TAIL, log_tail  # deferred: python_on_whales

    try:
        folder.write_server_log(log_tail(deployment, RECORDED_LOG_TAIL))
    except Exception:  # the log is a courtesy: never mask the run's error, nor stop a stop
        return
