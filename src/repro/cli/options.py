"""Option types every command shares, so that each refuses the same bad values the same way
(like huggingface_hub's `cli/_cli_utils.py`).

`FiniteFloat` is click's FloatRange without NaN and infinities: `nan` passes every range check
(each comparison with it is false), so `--max-failed-pct nan` would switch a gate off.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import click
from pydantic import BaseModel, ValidationError

from repro.export import K8sOptions
from repro.export.k8s import K8sValueError
from repro.safetext import clean, clean_lines
from repro.schema.forced import LENGTH_ENV, ForcedAcceptance
from repro.settings import SGLANG_PYTHON


class FiniteFloat(click.FloatRange):
    """A float in a range, refusing NaN and infinities."""

    name = "finite float"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = click.FLOAT.convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return super().convert(number, param, ctx)


def sglang_python_option(what: str) -> Any:
    """`--python`, the engine's Python (.venv-sglang, scripts/ensure-sglang); `what` it is for."""
    return click.option(
        "--python",
        "sglang_python",
        type=click.Path(dir_okay=False, path_type=Path),
        envvar=SGLANG_PYTHON.name,
        default=Path(SGLANG_PYTHON.text()),
        show_default=True,
        help=what,
    )


def engine_option(what: str) -> Any:
    """`--engine/--no-engine`: whether to run the engine dry-start (SGLang's own start-up code
    of the image's release, on tiny twins), and `what` it is for here."""
    return click.option("--engine/--no-engine", default=True, show_default=True, help=what)


def json_option(what: str) -> Any:
    """`--json`, the same flag on every command: `what` goes to stdout as one JSON document
    (progress and messages stay on stderr), for scripts to read."""
    return click.option("--json", "as_json", is_flag=True, help=f"Print {what} as JSON on stdout.")


class ForcedAcceptanceParam(click.ParamType):
    """`LENGTH[:METHOD[:TOKEN_MODE]]`, e.g. `4` or `4:multinomial:real-draft-token`."""

    name = "LENGTH[:METHOD[:TOKEN_MODE]]"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, ForcedAcceptance):
            return value
        length, *rest = str(value).split(":")
        number = FINITE.convert(length, param, ctx)
        try:
            if len(rest) > 2:
                raise ValueError
            fields = dict(zip(("method", "token_mode"), rest, strict=False))
            return ForcedAcceptance.model_validate({"length": number, **fields})
        except (ValueError, ValidationError):
            self.fail(
                f"{value!r}: want LENGTH>=1[:match-expected|multinomial[:fixed|real-draft-token]]",
                param,
                ctx,
            )


def forced_acceptance_option() -> Any:
    """`--forced-acceptance`: what a server given by URL was launched with, for the record."""
    return click.option(
        "--forced-acceptance",
        "forced",
        type=ForcedAcceptanceParam(),
        help=f"The server runs with {LENGTH_ENV} (and its method and token mode): record "
        "its acceptance as forced [default: the recipe's speculative.forced_acceptance].",
    )


def field_range(model: type[BaseModel], name: str) -> click.IntRange:
    """The bounds of the integer field `name` of a recipe section, as an option type: a CLI
    override (`--output-len`) is refused where the recipe's own field would be, never run
    and then refused by `--resume`."""
    rules = model.model_fields[name].metadata
    low = next((rule.ge for rule in rules if getattr(rule, "ge", None) is not None), None)
    high = next((rule.le for rule in rules if getattr(rule, "le", None) is not None), None)
    return click.IntRange(min=low, max=high)


FINITE = FiniteFloat()
PORT = click.IntRange(1, 65535)


def refuse_with(ctx: click.Context, given: list[str], why: str) -> None:
    """A usage error naming the options in `given` (those that would not act), e.g.
    `--sim cannot be combined with --resume: ...`: never silently ignored."""
    if given:
        raise click.UsageError(f"{', '.join(given)} {why}", ctx)


def given_options(ctx: click.Context, *names: str) -> list[str]:
    """The options among `names` (parameter names) that the user set on the command line."""
    out = []
    for name in names:
        source = ctx.get_parameter_source(name)
        if source is click.core.ParameterSource.COMMANDLINE:
            param = next(p for p in ctx.command.params if p.name == name)
            out.append(param.opts[0] if param.opts else name)
    return out


def warn(line: str) -> None:
    """A note on stderr, printed without markup (cleaned: it may quote a server)."""
    click.echo(clean_lines(line), err=True)


def sim_options(command: Any) -> Any:
    """`--sim [PROFILE]` and `--time-scale X`: the recipe's own server on the CPU simulator
    (`repro run`, `repro launch`)."""
    command = click.option(
        "--time-scale",
        type=FiniteFloat(min=0),
        default=1.0,
        show_default=True,
        help="With --sim: multiply every simulated duration (0.5: twice as fast). Below what "
        "this host keeps, the simulator falls behind its clock and bench marks those levels "
        "invalid; compare at 1.",
    )(command)
    return click.option(
        "--sim",
        is_flag=False,
        flag_value="",
        default=None,
        metavar="[PROFILE]",
        help="Run the recipe's own server command on the CPU simulator image, with PROFILE "
        "(default: the profile matching the recipe, e.g. kimi26-ep4-rtx6000 for "
        "kimi26-ep4-dflash). Doctor then skips weight and GPU checks. Every number is "
        "SIMULATED.",
    )(command)


_MEASURE_OPTIONS = (
    click.option("--output", type=click.Path(path_type=Path),
                 help="Run folder (default: runs/<UTC>-<name>...; accept: or a bench run's)."),
    click.option("--resume", type=click.Path(path_type=Path),
                 help="Continue this run folder: what it finished is kept, the rest measured."),
    click.option("--read-timeout", type=FiniteFloat(min=0),
                 help="Seconds without data before a request fails; 0: no limit [default: "
                 "bench 300, accept 3600 (a whole response comes at once), or the resumed "
                 "run's own]."),
    click.option("--request-timeout", type=FiniteFloat(min=0),
                 help="Seconds a request may take in all, however steadily data comes; 0: no "
                 "limit [default: 3600, or the resumed run's own]."),
    click.option("--max-event-bytes", type=click.IntRange(min=1024),
                 help="Bytes of one streamed event (accept: of one response) before the "
                 "request fails as malformed [default: 64 MiB, or the resumed run's own]."),
    click.option("--chat-template-fallback", is_flag=True,
                 help="Render with the built-in ChatML when the model's chat template is not "
                 "in the local Hub cache at the pinned commit (the record marks it)."),
)  # fmt: skip


def measure_options(command: Any) -> Any:
    """The options `repro bench` and `repro accept` share, one name and one meaning each
    (repro.bench.options.MeasureOptions' fields, which the command receives as keywords)."""
    for option in reversed(_MEASURE_OPTIONS):
        command = option(command)
    return command


_K8S_POD_OPTIONS = (
    click.option("--namespace", "-n",
                 help="metadata.namespace of every object (a DNS-1123 label, e.g. llm)."),
    click.option("--hub-cache-pvc", metavar="CLAIM",
                 help="PersistentVolumeClaim with the Hub cache."),
    click.option("--hub-cache-host-path", metavar="DIR",
                 help="Hub cache directory on every node (default /var/cache/huggingface)."),
    click.option("--hf-token-secret", default="hf-token", show_default=True,
                 metavar="SECRET[:KEY]",
                 help="Secret (and key, default 'token') that HF_TOKEN is read from."),
    click.option("--shm-size", metavar="QUANTITY",
                 help="Size limit of /dev/shm, a Kubernetes quantity, e.g. 64Gi."),
)  # fmt: skip


def k8s_pod_options(command: Any) -> Any:
    """Where a Kubernetes server pod finds its namespace, Hub cache, token and shared memory
    (`export k8s`, `campaign export k8s`); the command receives them as keywords for
    `k8s_options`."""
    for option in reversed(_K8S_POD_OPTIONS):
        command = option(command)
    return command


def k8s_options(
    namespace: str | None,
    hub_cache_pvc: str | None,
    hub_cache_host_path: str | None,
    hf_token_secret: str,
    shm_size: str | None,
    **fields: Any,
) -> K8sOptions:
    """The server pod's options from `k8s_pod_options`' keywords and the command's own; a
    value its manifest field does not accept is a usage error naming the option."""
    secret, _, key = hf_token_secret.partition(":")
    options = K8sOptions(
        namespace=namespace,
        hub_cache_pvc=hub_cache_pvc,
        hub_cache_host_path=hub_cache_host_path,
        hf_token_secret=secret,
        hf_token_key=key or "token",
        shm_size=shm_size,
        **fields,
    )
    try:
        options.check()
    except K8sValueError as err:
        raise click.BadParameter(clean(err.problem), param_hint=err.option) from None
    return options
