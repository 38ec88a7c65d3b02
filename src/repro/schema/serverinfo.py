"""`/server_info` as a record keeps it (`server_info.json`): what the server reported about
itself, each DP rank's scheduler state, the simulator's own keys, and what repro noted beside
it (the running image); and the labels reports derive from it."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictFloat,
    StrictInt,
    ValidationError,
    ValidatorFunctionWrapHandler,
    WrapValidator,
    field_validator,
)

from repro.schema.forced import ForcedAcceptance


def _none_when_malformed(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
    """A value of another type reads as None: a server that reports something odd is still
    recorded and measured (bench_serving reads the same keys with `.get`)."""
    try:
        return handler(value)
    except ValidationError:
        return None


_LENIENT = WrapValidator(_none_when_malformed)
LenientStr = Annotated[str | None, _LENIENT]
LenientInt = Annotated[StrictInt | None, _LENIENT]


class InternalState(BaseModel):
    """One DP rank's scheduler state in `/server_info` `internal_states` (SGLang 0.5.23
    srt/managers/scheduler_components/internal_state.py: the server args plus these).

    Lenient twice: every key is kept, and a field of another type reads as None.
    """

    model_config = ConfigDict(extra="allow")

    world_size: StrictInt | None = None
    effective_max_running_requests_per_dp: StrictInt | None = Field(
        default=None, description="the scheduler's max_running_requests"
    )
    last_gen_throughput: StrictFloat | StrictInt | None = None
    avg_spec_accept_length: StrictFloat | StrictInt | None = Field(
        default=None, description="cumulative since start or the last /flush_cache"
    )
    memory_usage: dict[str, Any] | None = None
    served_model_name: LenientStr = Field(default=None, description="one of the server args")
    simulated: bool | None = Field(default=None, description="repro's simulator says so")

    @field_validator("*", mode="wrap")
    @classmethod
    def _lenient(cls, value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        return _none_when_malformed(value, handler)


class SimClockReading(BaseModel):
    """`sim_clock` of a simulator's `/server_info`: what it measured about this host's clock."""

    model_config = ConfigDict(extra="allow")

    min_time_scale: StrictFloat | StrictInt | None = Field(
        default=None, description="the smallest --time-scale this host keeps for the profile"
    )


class SimDrafter(BaseModel):
    """`sim_drafter` of a simulator's `/server_info`: which acceptance its drafter has."""

    model_config = ConfigDict(extra="allow")

    path: str | None = Field(default=None, description="the drafter the server was given")
    profile_entry: str | None = Field(
        default=None, description="the profile's drafter entry (its accept_length, assumption)"
    )


def _server_arg(description: str) -> Any:
    return Field(default=None, description=description)


class RunningImage(BaseModel):
    """The image of a deployment repro launched, as a record keeps it beside `/server_info`
    (repro.launch.deploy.running_image): which image a measurement was taken on."""

    deployment: str = Field(description="the compose project")
    image_reference: str = Field(description="the image as launched")
    image_id: str = Field(description="the image the container runs")


class ServerInfo(BaseModel):
    """`/server_info` as fetched, and `server_info.json`: what the server reported about itself
    plus what repro recorded beside it (`simulated`, the running image).

    The fields are SGLang 0.5.23's names: `build_server_info` (srt/utils/common.py, called by
    srt/entrypoints/http_server.py `server_info`) returns `server_args.resolved_dict()`
    (the fields of srt/arg_groups/fields/*.py), the scheduler's ready info
    (`max_total_num_tokens`, managers/scheduler.py) and `internal_states`, `version`; the
    `sim_*` keys are repro's simulator's. Every other key is kept (SGLang adds some every
    nightly), so the file records the report whole; it is written with `exclude_unset`, so only
    what the server sent (and what repro added) is recorded. A server argument of another type
    than SGLang's reads as None (bench_serving reads them with `.get`); the report's own
    version and the simulator's keys must have their types.
    """

    model_config = ConfigDict(extra="allow")

    version: str | None = Field(default=None, description="the SGLang version")
    model_path: LenientStr = _server_arg("the served model: a Hub id or a local path")
    revision: LenientStr = _server_arg("the model's revision; None: the Hub's default branch")
    served_model_name: LenientStr = _server_arg("the name requests use")
    tp_size: LenientInt = _server_arg("tensor parallel ranks")
    pp_size: LenientInt = _server_arg("pipeline stages")
    ep_size: LenientInt = _server_arg("expert parallel ranks")
    dp_size: LenientInt = _server_arg("data parallel ranks")
    attn_dp_size: LenientInt = _server_arg("attention DP ranks (0.5.23+; dp_size is then 1)")
    max_running_requests: LenientInt = _server_arg("None: the scheduler chose")
    max_total_num_tokens: LenientInt = _server_arg("KV cache capacity (scheduler info)")
    speculative_algorithm: LenientStr = _server_arg("EAGLE, DFLASH, ...; None or NONE: none")
    speculative_draft_model_path: LenientStr = _server_arg("the drafter")
    speculative_draft_model_revision: LenientStr = _server_arg("the drafter's revision")
    speculative_num_draft_tokens: LenientInt = _server_arg("tokens verified per step")
    speculative_num_steps: LenientInt = _server_arg("draft steps")
    speculative_eagle_topk: LenientInt = _server_arg("draft branches per step")
    speculative_ddtree_budget: LenientInt = _server_arg("DDTREE (repro's patch set)")
    decode_log_interval: LenientInt = _server_arg("decode steps between log lines")
    internal_states: list[InternalState] = Field(
        default_factory=list, description="one per DP rank; entries that are no object dropped"
    )
    simulated: bool = False
    sim_profile: str | None = Field(default=None, description="the simulator's timing profile")
    sim_time_scale: float | None = Field(
        default=None, description="the simulator's --time-scale (durations multiplied by it)"
    )
    sim_provenance: str | None = Field(
        default=None, description="`calibrated: ...` or `extrapolated: ...` (the profile's)"
    )
    sim_clock: Annotated[SimClockReading | None, _LENIENT] = None
    sim_drafter: Annotated[SimDrafter | None, _LENIENT] = None
    sim_forced_acceptance: Annotated[ForcedAcceptance | None, _LENIENT] = Field(
        default=None, description="the simulator's SGLANG_SIMULATE_ACC_LEN, as it honours it"
    )
    deployment: LenientStr = Field(default=None, description="repro's: the compose project")
    image_reference: LenientStr = Field(default=None, description="repro's: the image launched")
    image_id: LenientStr = Field(default=None, description="repro's: the image the container runs")

    @field_validator("internal_states", mode="before")
    @classmethod
    def _objects_only(cls, value: Any) -> Any:
        return [s for s in value if isinstance(s, dict)] if isinstance(value, list) else []

    def reported(self, key: str) -> bool:
        """Whether the server sent `key` (older servers lack newer arguments)."""
        return key in self.model_fields_set or key in (self.model_extra or {})

    @property
    def first_state(self) -> InternalState | None:
        """`internal_states[0]`: DP rank 0, the one bench_serving reads."""
        return self.internal_states[0] if self.internal_states else None


def simulator_label(server: ServerInfo | None) -> str | None:
    """`sim <profile>, time-scale <x>` when a simulator served the run and named its profile,
    with `(calibrated)` or `(extrapolated)` after the profile when it stated which."""
    if server is None or not server.sim_profile:
        return None
    scale = "?" if server.sim_time_scale is None else f"{server.sim_time_scale:g}"
    kind = (server.sim_provenance or "").split(":", 1)[0]
    shown = f" ({kind})" if kind in ("calibrated", "extrapolated") else ""
    return f"sim {server.sim_profile}{shown}, time-scale {scale}"


def engine_label(server: ServerInfo | None) -> str:
    """What served a run that no simulator served: `SGLang 0.5.23` (its reported version),
    `SGLang (version not reported)`, or `engine unknown` without a server record."""
    if server is None:
        return "engine unknown"
    if server.simulated:
        return "repro simulator"
    return f"SGLang {server.version}" if server.version else "SGLang (version not reported)"
