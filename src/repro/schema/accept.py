"""accept.json: what `repro accept` measured per prompt set, the lossless check, drafter A/B."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from repro.schema.base import Interval
from repro.schema.client import ClientLimits
from repro.schema.dataset import PromptSource
from repro.schema.forced import ForcedAcceptance
from repro.schema.serverinfo import SimDrafter


class BucketAcceptance(BaseModel):
    """Acceptance within one bucket of a prompt set: of the prompts whose context (the
    server's prompt_tokens) falls in it, or of the verify steps whose output position does."""

    bucket: str = Field(description="its label, e.g. 8k-32k (k: 1024 tokens)")
    low: int = Field(description="tokens, inclusive")
    high: int | None = Field(description="tokens, exclusive; None: no upper bound")
    prompts: int = Field(description="requests with a verify step in the bucket")
    completion_tokens: int = Field(description="tokens the bucket's verify steps committed")
    spec_verify_ct: int = Field(description="verify steps in the bucket")
    accept_length: float | None = Field(description="completion_tokens / spec_verify_ct")
    accept_length_ci95: Interval | None = Field(
        default=None, description="95% bootstrap interval over requests"
    )
    per_prompt: list[float | None] = Field(
        default_factory=list,
        description="each request's acceptance within the bucket (None: none there), in the "
        "order of accept_length_per_prompt: what the drafter A/B pairs",
    )


class AcceptSet(BaseModel):
    """One prompt set's acceptance length in `accept.json`."""

    model_config = ConfigDict(extra="allow")

    prompt_set: str = Field(description="the set's name (math, a file stem, hf:...)")
    prompts: int = Field(description="requests that succeeded")
    failed: int = 0
    completion_tokens: int = Field(description="over the requests that report spec_verify_ct")
    spec_verify_ct: int
    accept_length: float | None = Field(description="completion_tokens / spec_verify_ct")
    accept_length_per_prompt: list[float | None] = Field(
        default_factory=list, description="per request, None where it failed"
    )
    source: PromptSource | None = Field(default=None, description="exactly which prompts ran")
    max_new_tokens: int | None = Field(default=None, description="tokens asked per prompt")
    accept_length_ci95: Interval | None = Field(
        default=None, description="95% bootstrap interval of the pooled accept_length"
    )
    accept_length_mean_per_request: float | None = Field(
        default=None, description="mean of per-request completion_tokens / spec_verify_ct (z-lab)"
    )
    accept_length_mean_per_request_ci95: Interval | None = None
    accept_histogram: list[int] | None = Field(
        default=None,
        description="verify steps by accepted drafts (index k: k drafts, accept length k+1), "
        "summed over requests; None when the server sends no spec_correct_drafts_histogram",
    )
    mean_output_tokens: float | None = Field(default=None, description="completion tokens/request")
    output_throughput: float | None = Field(
        default=None, description="completion tokens/s over the set at the run's concurrency"
    )
    baseline_output_throughput: float | None = Field(
        default=None, description="the same prompts on the baseline (no drafter), tokens/s"
    )
    speedup: float | None = Field(
        default=None, description="output_throughput / baseline_output_throughput"
    )
    valid: bool = Field(default=True, description="False when `reasons` says why not")
    reasons: list[str] = Field(
        default_factory=list, description="why the set's numbers cannot be trusted"
    )
    prompt_tokens_per_prompt: list[int | None] | None = Field(
        default=None, description="the server's prompt_tokens per request (None: failed)"
    )
    by_length: list[BucketAcceptance] | None = Field(
        default=None, description="acceptance by context-length bucket (--length-buckets)"
    )
    by_position: list[BucketAcceptance] | None = Field(
        default=None,
        description="acceptance by output position of the verify step (--position-buckets; "
        "from the streamed chunks)",
    )

    def bucketed(self) -> list[tuple[str, AcceptSet]]:
        """The set within each of its buckets (`context 8k-32k`, `position 0-256`), named
        `<set> <bucket>`: per request its acceptance in the bucket, pooled as the bucket's
        (what reports list and the drafter A/B pairs, bucket by bucket)."""
        out = []
        for kind, buckets in (("context", self.by_length), ("position", self.by_position)):
            for b in buckets or []:
                label = f"{kind} {b.bucket}"
                values = [v for v in b.per_prompt if v is not None]
                within = self.model_copy(
                    update={
                        "prompt_set": f"{self.prompt_set} {label}",
                        "prompts": b.prompts,
                        "completion_tokens": b.completion_tokens,
                        "spec_verify_ct": b.spec_verify_ct,
                        "accept_length": b.accept_length,
                        "accept_length_ci95": b.accept_length_ci95,
                        "accept_length_per_prompt": b.per_prompt,
                        "accept_length_mean_per_request": (
                            sum(values) / len(values) if values else None
                        ),
                        "accept_length_mean_per_request_ci95": None,
                        "by_length": None,
                        "by_position": None,
                    }
                )
                out.append((label, within))
        return out


class Divergence(BaseModel):
    """Where one prompt's output with the drafter first differs from the one without."""

    prompt_set: str
    prompt: int = Field(description="index of the prompt in the set's measured prompts")
    position: int = Field(description="first differing output token (0-based)")


class LosslessLevel(BaseModel):
    concurrency: int
    prompts: int = Field(description="prompts compared (both outputs present)")
    identical: int
    identical_share: float
    divergent: list[Divergence] = Field(default_factory=list)


class LosslessCheck(BaseModel):
    """Output token ids with and without the drafter, at temperature 0, compared per prompt."""

    baseline: str = Field(description="the baseline server (recipe name or URL)")
    passed: bool
    levels: list[LosslessLevel] = Field(default_factory=list)


class AcceptDiff(BaseModel):
    """One prompt set's acceptance of drafter B minus drafter A, paired by prompt."""

    prompt_set: str
    a: str
    b: str
    convention: str = Field(default="accept_length_mean_per_request")
    a_value: float | None
    b_value: float | None
    difference: float | None = Field(description="b - a, over the prompts both measured")
    ci95: Interval | None = Field(default=None, description="paired bootstrap over prompts")
    pairs: int
    verdict: str = Field(description='"a better", "b better", or "within noise"')
    bucket: str | None = Field(
        default=None, description="a context-length or output-position bucket (context 8k-32k)"
    )


class TemplateUse(BaseModel):
    """How prompts were rendered (repro.bench.prompts.chattemplate ChatTemplate.describe)."""

    model_config = ConfigDict(extra="allow")

    source: str | None = Field(default=None, description="the template file, at its commit")
    thinking_switch: str | None = Field(default=None, description="the template's switch(es)")
    thinking: bool | None = None
    chat_template_kwargs: dict[str, Any] | None = None
    fallback: str | None = Field(default=None, description="why the built-in ChatML was used")


class AcceptProtocol(BaseModel):
    """How `repro accept` sent its requests (accept.json and run.json `protocol`); a resumed
    run must send them the same way. Lenient: older records lack newer fields."""

    model_config = ConfigDict(extra="allow")

    name: str | None = Field(default=None, description="the protocol followed (z-lab's)")
    thinking: bool | None = None
    concurrency: int | None = None
    warmup_requests: int | None = None
    sampling: dict[str, Any] = Field(default_factory=dict, description="temperature, top_p, top_k")
    endpoint: str | None = None
    chat_template: TemplateUse | str | None = Field(
        default=None, description="older runs: where the template came from, as text"
    )
    baseline: str | None = Field(default=None, description="the --baseline, if any")
    prompts_per_set: int | None = None
    max_new_tokens: dict[str, int | None] = Field(
        default_factory=dict, description="per prompt set"
    )
    client_limits: ClientLimits | None = None
    length_buckets: list[str] | None = Field(
        default=None, description="context-length buckets: the prompts chosen per bucket"
    )
    position_buckets: list[str] | None = Field(
        default=None, description="output-position buckets (requests streamed)"
    )
    accuracy: bool = Field(default=False, description="answers scored too (accuracy.json)")


class SimulatedProfile(BaseModel):
    """The simulator profile behind simulated numbers (the server's `sim_profile`)."""

    model_config = ConfigDict(extra="allow")

    name: str
    drafter: SimDrafter | None = Field(default=None, description="the simulated drafter")


class AcceptResults(BaseModel):
    """`accept.json`."""

    model_config = ConfigDict(extra="allow")

    simulated: bool = False
    sets: list[AcceptSet] = Field(default_factory=list)
    recipe_name: str | None = None
    protocol: AcceptProtocol | None = Field(
        default=None,
        description="how requests were sent: thinking, concurrency, sampling, warmup, endpoint",
    )
    simulated_profile: SimulatedProfile | None = Field(
        default=None, description="the simulator profile (and drafter entry) behind the numbers"
    )
    lossless: LosslessCheck | None = None
    forced_acceptance: ForcedAcceptance | None = Field(
        default=None,
        description="the server ran with SGLANG_SIMULATE_ACC_LEN: these lengths are forced",
    )
    comparison: list[AcceptDiff] | None = Field(
        default=None, description="drafter A/B: the other recipe's sets against these"
    )
