"""The lossless check of a campaign: does a drafter point say what its baseline says?

Speculative decoding must not change the model's output: at temperature 0 a drafter point's
output token ids equal its baseline point's (the same model and parallelism without the
drafter). `repro accept --check-lossless` compares two servers that run at once; a campaign's
points share one machine and run one after another, so each point of a pair, while its server
is still up after its run, answers the same probe (the shipped `chat` prompts, greedy, at
concurrency 1 and at the point's highest bench concurrency) and its output ids are kept in
`lossless/<point>.json`. The report compares the two files with `repro accept`'s own
comparison (repro.bench.accept.stats.lossless_level), so the verdict is the same rule.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, Field

from repro.bench.accept.completion import Completion, Sender, body, response_bound
from repro.bench.accept.stats import lossless_level
from repro.bench.prompts.benchsets import PROTOCOL_SAMPLING
from repro.bench.prompts.sets import load_prompt_set
from repro.bench.session import ServerSession
from repro.campaign.decision import Lossless
from repro.errors import ReproError
from repro.runfolder import read_model, write_model
from repro.schema.accept import LosslessCheck
from repro.schema.campaign import CampaignPlan, PlannedPoint
from repro.schema.client import ClientLimits

PROBE_SET = "chat"
PROBE_PROMPTS = 8
PROBE_MAX_NEW_TOKENS = 64
LOSSLESS_DIR = "lossless"


class ProbeLevel(BaseModel):
    concurrency: int
    prompts: list[int] = Field(description="index of each request's prompt in the probe set")
    output_ids: list[list[int] | None] = Field(description="per request; None: it failed")


class ProbeOutputs(BaseModel):
    """What one point's server answered to the probe."""

    point: str
    prompt_set: str
    max_new_tokens: int
    levels: list[ProbeLevel]


def pairs(plan: CampaignPlan) -> list[tuple[PlannedPoint, PlannedPoint]]:
    """(drafter point, its baseline point) for every drafter point whose baseline is in the
    plan and measured on its own server."""
    by_name = {p.name: p for p in plan.points if p.same_server_as is None}
    return [
        (p, by_name[p.baseline])
        for p in by_name.values()
        if p.drafter and p.baseline and p.baseline in by_name
    ]


def probed(plan: CampaignPlan) -> set[str]:
    """The points whose servers answer the probe: both sides of every pair."""
    return {name for pair in pairs(plan) for name in (pair[0].name, pair[1].name)}


def outputs_file(campaign: Path, point: str) -> Path:
    return campaign / LOSSLESS_DIR / f"{point}.json"


def probe_outputs(url: str, point: str, top_concurrency: int, out: Path) -> ProbeOutputs:
    """Send the probe to the server at `url` and keep its output ids in `out`."""
    prompts = load_prompt_set(PROBE_SET).prompts[:PROBE_PROMPTS]
    payloads = [body(text, PROBE_MAX_NEW_TOKENS, PROTOCOL_SAMPLING) for text in prompts]
    session = ServerSession(url)
    sender = Sender(session, response_bound(ClientLimits()))
    levels = []
    try:
        for concurrency in sorted({1, max(1, top_concurrency)}):
            total = max(len(payloads), concurrency)  # enough requests to hold it in flight
            order = [i % len(payloads) for i in range(total)]
            batch = sender.run([payloads[i] for i in order], concurrency)
            ids = [r.output_ids if r.ok else None for r in batch.results]
            levels.append(ProbeLevel(concurrency=concurrency, prompts=order, output_ids=ids))
    finally:
        session.close()
    outputs = ProbeOutputs(
        point=point, prompt_set=PROBE_SET, max_new_tokens=PROBE_MAX_NEW_TOKENS, levels=levels
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    write_model(out, outputs)
    return outputs


def compare(drafter: ProbeOutputs, baseline: ProbeOutputs) -> LosslessCheck:
    """`repro accept`'s comparison of the two points' outputs, level by level."""
    theirs = {level.concurrency: level for level in baseline.levels}
    levels = []
    for mine in drafter.levels:
        other = theirs.get(mine.concurrency)
        if other is None or other.prompts != mine.prompts:
            continue
        labels = [(drafter.prompt_set, i) for i in mine.prompts]
        levels.append(
            lossless_level(
                mine.concurrency, labels, _done(mine.output_ids), _done(other.output_ids)
            )
        )
    return LosslessCheck(
        baseline=baseline.point,
        passed=bool(levels) and all(not lv.divergent and lv.prompts for lv in levels),
        levels=levels,
    )


def _done(ids: Sequence[list[int] | None]) -> list[Completion]:
    return [Completion(ok=False) if i is None else Completion(ok=True, output_ids=i) for i in ids]


def verdict(campaign: Path, point: str, baseline: str) -> Lossless:
    """The point's verdict against its baseline from their probe files (unchecked, saying
    why, when one is missing or unreadable)."""
    found = {}
    for name in (point, baseline):
        path = outputs_file(campaign, name)
        if not path.is_file():
            return Lossless(baseline=baseline, passed=None, verdict=f"not checked: {name} "
                            "answered no probe (it did not run here, or failed first)")  # fmt: skip
        try:
            found[name] = read_model(path, ProbeOutputs, "run the campaign again")
        except ReproError as err:
            return Lossless(baseline=baseline, passed=None, verdict=f"not checked: {err.message}")
    check = compare(found[point], found[baseline])
    if not any(lv.divergent for lv in check.levels) and not all(lv.prompts for lv in check.levels):
        return Lossless(baseline=baseline, passed=None, verdict="not checked: the probe's "
                        "requests failed, no output to compare " + _levels(check))  # fmt: skip
    return Lossless(baseline=baseline, passed=check.passed, verdict=check_text(check))


def _levels(check: LosslessCheck) -> str:
    compared = ", ".join(f"{lv.prompts} at c={lv.concurrency}" for lv in check.levels)
    return f"(outputs compared: {compared})"


def check_text(check: LosslessCheck) -> str:
    """`lossless: 8/8 identical at c=1, 16/16 at c=16`, or where the outputs diverge."""
    if not check.levels:
        return "not checked: the probes were not sent alike"
    parts = [f"{lv.identical}/{lv.prompts} identical at c={lv.concurrency}" for lv in check.levels]
    if check.passed:
        return "lossless: " + ", ".join(parts)
    first = next((lv for lv in check.levels if lv.divergent), None)
    where = ""
    if first is not None:
        d = first.divergent[0]
        where = f"; first: prompt {d.prompt} at output token {d.position} (c={first.concurrency})"
    return "NOT LOSSLESS: outputs differ from the baseline's: " + ", ".join(parts) + where
