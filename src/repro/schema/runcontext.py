"""`context.json`: what the stages of one `repro run` share, saved for `--resume`."""

from __future__ import annotations

from pydantic import BaseModel, Field, StrictInt, StrictStr, ValidationError


class RunContextFile(BaseModel):
    """The saved part of repro.run.context.RunContext. Strict types (a port of `true` or
    `"80"` is an edited file, not a port); keys it does not know are ignored."""

    ref: StrictStr = Field(description="what the user named: a recipe name or file")
    lock_path: StrictStr | None = Field(default=None, description="the lock the run wrote")
    image_tag: StrictStr | None = None
    url: StrictStr | None = Field(default=None, description="where the server answers")
    deployment: StrictStr | None = Field(default=None, description="the compose project")
    container_id: StrictStr | None = Field(default=None, description="the server container")
    port: StrictInt | None = Field(default=None, ge=1, le=65535, description="the host port")


def context_error(err: ValidationError) -> str:
    """One line for a bad `context.json`: the field, what it holds, what was expected."""
    first = err.errors()[0]
    field = ".".join(str(p) for p in first["loc"])
    if not field:
        return f"is not a run context ({first['msg']})"
    if first["type"] == "missing":
        return f"is not a run context: it has no `{field}`"
    return f"`{field}` is {first['input']!r}: {first['msg']}"
