"""`context.json`: what the stages of one `repro run` share, saved for `--resume`."""

from __future__ import annotations

from pydantic import BaseModel, Field, StrictInt, StrictStr


class RunContextFile(BaseModel):
    """The saved part of repro.run.context.RunContext. Strict types (a port of `true` or
    `"80"` is an edited file, not a port); keys it does not know are ignored."""

    ref: StrictStr = Field(description="what the user named: a recipe name or file")
    lock_path: StrictStr | None = Field(default=None, description="the lock the run wrote")
    image_tag: StrictStr | None = None
    url: StrictStr | None = Field(default=None, description="where the server answers")
    external: bool = Field(
        default=False, description="--url: a server repro did not start (never launched here)"
    )
    deployment: StrictStr | None = Field(default=None, description="the compose project")
    container_id: StrictStr | None = Field(default=None, description="the server container")
    port: StrictInt | None = Field(default=None, ge=1, le=65535, description="the host port")
