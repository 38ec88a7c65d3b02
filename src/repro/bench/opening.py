"""Opening a measurement, the same for bench and accept: the run's `ServerSession` to the
server at the URL, its `/server_info` read once, checked to be the target's deployment (a
recipe's, with its lock and the image repro launched there) or, for a bare URL, recorded as
found, and the session pinned to it for the rest of the run; whether it is the simulator; the
chat template its prompts are rendered with; and what `server_info.json` records.
"""

from __future__ import annotations

from dataclasses import dataclass

from repro.bench.identity import check_identity, found_identity
from repro.bench.plausible import max_accept_length
from repro.bench.prompts.chattemplate import ChatTemplate, recipe_template
from repro.bench.provenance import Provenance
from repro.bench.server import is_simulated, server_info_record
from repro.bench.session import ServerSession
from repro.bench.target import BenchTarget
from repro.schema.record import ServerIdentity
from repro.schema.serverinfo import RunningImage, ServerInfo


@dataclass(frozen=True)
class Opening:
    target: BenchTarget
    session: ServerSession
    info: ServerInfo
    identity: ServerIdentity
    simulated: bool
    image: RunningImage | None = None

    @property
    def max_accept(self) -> int:
        """The most tokens one verify step can commit on this server."""
        return max_accept_length(self.info.speculative_num_draft_tokens)

    def recorded_info(self) -> ServerInfo:
        """`server_info.json`: the report plus the running image and `simulated`."""
        launched = self.image.model_dump() if self.image is not None else {}
        return server_info_record(self.info, **launched, simulated=self.simulated)

    def template(self, fallback: bool) -> ChatTemplate:
        """The recipe model's template at its locked commit; for a bare URL, the served
        model's (repro.bench.prompts.chattemplate.recipe_template)."""
        recipe = self.target.recipe
        return recipe_template(
            recipe.model if recipe else None, self.target.lock, self.info,
            simulated=self.simulated, fallback=fallback,
        )  # fmt: skip


def open_server(target: BenchTarget, url: str, provenance: Provenance) -> Opening:
    """The checked server at `url`; ReproError (one line, before any folder is made) when
    nothing SGLang answers there or it is not the target's deployment."""
    session = ServerSession(url)
    info = session.call(session.server_info())
    image = provenance.image(session.url)  # of a deployment repro launched there
    if target.recipe is None:  # a bare URL: record what answers
        identity = ServerIdentity(found=found_identity(info, image))
    else:
        identity = check_identity(session.url, info, target.recipe, target.lock, image)
    session.pin(info)
    simulated = target.declares_simulator or is_simulated(info)
    return Opening(target, session, info, identity, simulated, image)
