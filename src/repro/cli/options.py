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


class FiniteFloat(click.FloatRange):
    """A float in a range, refusing NaN and infinities."""

    name = "finite float"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = click.FLOAT.convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return super().convert(number, param, ctx)


def json_option(what: str) -> Any:
    """`--json`, the same flag on every command: `what` goes to stdout as one JSON document
    (progress and messages stay on stderr), for scripts to read."""
    return click.option("--json", "as_json", is_flag=True, help=f"Print {what} as JSON on stdout.")


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
    """A note on stderr, printed as it is (no markup)."""
    click.echo(line, err=True)


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
