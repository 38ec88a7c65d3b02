"""Request bodies as SGLang 0.5.23 admits or refuses them, and its error shapes.

- A body that is not JSON, or whose fields have the wrong types for the route's request
  model, is FastAPI's RequestValidationError, which http_server.py turns into HTTP 400
  `{"object": "error", "message", "type": "Bad Request", "param": null, "code": 400}`
  (ErrorResponse of entrypoints/openai/protocol.py).
- /generate then checks the body against the JSON contract (entrypoints/api_contract.py with
  sglang/api/v1/api_types.py): unknown top-level keys are ignored, unknown `sampling_params`
  keys are refused; a violation is HTTP 400 `{"error": "<serde-style text>"}`.
- The OpenAI routes check their bodies as protocol.py's pydantic models do (FastAPI errors).
- Errors found while serving (no prompt, too long) are ValueErrors: `{"error": {"message"}}`
  with 400 for a plain request, an error chunk then `[DONE]` for a stream (http_server.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# mirrors sglang/api/v1/api_types.py _FIELDS_SamplingParams
SAMPLING_FIELDS = (
    "max_new_tokens", "stop", "stop_token_ids", "stop_regex", "temperature", "top_p", "top_k",
    "min_p", "frequency_penalty", "presence_penalty", "repetition_penalty", "min_new_tokens",
    "n", "json_schema", "regex", "ebnf", "structural_tag", "ignore_eos", "skip_special_tokens",
    "spaces_between_special_tokens", "no_stop_trim", "stream_interval", "logit_bias",
    "sampling_seed", "custom_params", "beam_width", "watermark", "choice",
)  # fmt: skip
_INT = ("max_new_tokens", "top_k", "min_new_tokens", "n", "stream_interval", "sampling_seed",
        "beam_width")  # fmt: skip
_FLOAT = ("temperature", "top_p", "min_p", "frequency_penalty", "presence_penalty",
          "repetition_penalty")  # fmt: skip
_BOOL = ("ignore_eos", "skip_special_tokens", "spaces_between_special_tokens", "no_stop_trim")
_STR = ("json_schema", "regex", "ebnf", "structural_tag")


class ContractError(ValueError):
    """/generate body that breaks the JSON contract: 400 {"error": message}."""


class RequestValidationError(ValueError):
    """FastAPI-level validation failure: 400 in ErrorResponse shape."""

    def __init__(self, errors: list[dict[str, Any]]) -> None:
        self.errors = errors
        plural = "s" if len(errors) > 1 else ""
        exc_str = f"{len(errors)} validation error{plural}:\n" + "".join(
            f"  {e!r}\n" for e in errors
        )
        super().__init__(f"{exc_str} {errors!r}")


def error_response(message: str, err_type: str = "Bad Request", code: int = 400) -> dict:
    return {"object": "error", "message": message, "type": err_type, "param": None, "code": code}


def json_invalid(error: str, pos: int) -> RequestValidationError:
    return RequestValidationError(
        [
            {
                "type": "json_invalid",
                "loc": ("body", pos),
                "msg": "JSON decode error",
                "input": {},
                "ctx": {"error": error},
            }
        ]
    )


def _unexpected(v: Any) -> str:
    """serde's `Unexpected` display (api_types.py _unexpected)."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return f"boolean `{'true' if v else 'false'}`"
    if isinstance(v, int):
        return f"integer `{v}`"
    if isinstance(v, float):
        return f"floating point `{v}`"
    if isinstance(v, str):
        return f'string "{v}"'
    return "sequence" if isinstance(v, list) else "map" if isinstance(v, dict) else "value"


def _invalid(v: Any, expected: str) -> ContractError:
    return ContractError(f"invalid type: {_unexpected(v)}, expected {expected}")


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def check_sampling_params(params: Any) -> dict[str, Any]:
    if not isinstance(params, dict):
        raise _invalid(params, "struct SamplingParams")
    for key, value in params.items():
        if key not in SAMPLING_FIELDS:
            listed = ", ".join(f"`{f}`" for f in SAMPLING_FIELDS)
            raise ContractError(f"unknown field `{key}`, expected one of {listed}")
        if value is None:
            continue
        if key in _INT and not _is_int(value):
            raise _invalid(value, "i64")
        if key in _FLOAT and (not isinstance(value, int | float) or isinstance(value, bool)):
            raise _invalid(value, "f64")
        if key in _BOOL and not isinstance(value, bool):
            raise _invalid(value, "a boolean")
        if key in _STR and not isinstance(value, str):
            raise _invalid(value, "a string")
        if key == "stop" and not (
            isinstance(value, str)
            or (isinstance(value, list) and all(isinstance(s, str) for s in value))
        ):
            raise _invalid(value, "a value or an array of values for StringOrList")
        if key == "stop_token_ids" and not (
            isinstance(value, list) and all(_is_int(i) for i in value)
        ):
            raise _invalid(value, "a sequence")
    return params


@dataclass
class GenerateInput:
    texts: list[str] | None
    input_ids: list[list[int]] | None
    params: list[dict[str, Any]]
    stream: bool
    rids: list[str | None]
    is_batch: bool
    return_prompt_token_ids: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


def field_error(loc: str, value: Any, kind: str, msg: str) -> RequestValidationError:
    """One body field refused by pydantic: `kind` is its error type (missing, int_type, ...)."""
    return RequestValidationError(
        [{"type": kind, "loc": ("body", loc), "msg": msg, "input": value}]
    )


def parse_generate(body: Any) -> GenerateInput:
    """Decode a /generate body (GenerateReqInput, io_struct.py) or raise one of the errors."""
    if not isinstance(body, dict):
        raise RequestValidationError(
            [
                {
                    "type": "dataclass_type",
                    "loc": ("body",),
                    "msg": "Input should be a dictionary or an instance of GenerateReqInput",
                    "input": body,
                }
            ]
        )
    text = body.get("text")
    if text is not None and not (
        isinstance(text, str) or (isinstance(text, list) and all(isinstance(t, str) for t in text))
    ):
        raise field_error("text", text, "string_type", "Input should be a valid string")
    ids = body.get("input_ids")
    batch_ids: list[list[int]] | None = None
    if ids is not None:
        if not isinstance(ids, list):
            raise field_error("input_ids", ids, "list_type", "Input should be a valid list")
        batch_ids = ids if ids and all(isinstance(row, list) for row in ids) else [ids]
        for row in batch_ids:
            if not all(_is_int(i) for i in row):
                raise field_error("input_ids", ids, "int_type", "Input should be a valid integer")
    stream = body.get("stream", False)
    if stream is None:
        stream = False
    if not isinstance(stream, bool):
        raise ContractError(f"invalid type: {_unexpected(stream)}, expected a boolean")
    sampling = body.get("sampling_params")
    if isinstance(sampling, list):
        params = [check_sampling_params(p) for p in sampling]
    elif sampling is None:
        params = [{}]
    else:
        params = [check_sampling_params(sampling)]
    if ids is not None:
        is_batch = bool(ids) and all(isinstance(row, list) for row in ids)
    else:
        is_batch = isinstance(text, list)
    rid = body.get("rid")
    count = len(batch_ids) if batch_ids is not None else len(text) if isinstance(text, list) else 1
    rids: list[str | None] = list(rid) if isinstance(rid, list) else [rid] * count
    return GenerateInput(
        texts=[text] if isinstance(text, str) else text,
        input_ids=batch_ids,
        params=params,
        stream=stream,
        rids=rids,
        is_batch=is_batch,
        return_prompt_token_ids=bool(body.get("return_prompt_token_ids")),
    )


def message_text(content: Any) -> str:
    """The text of a chat message's content: a string, or the text parts of a list."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(p.get("text", ""))
            for p in content
            if isinstance(p, dict) and p.get("type") == "text"
        )
    raise field_error("messages", content, "string_type", "Input should be a valid string")


def openai_sampling_params(body: dict[str, Any], max_tokens: Any) -> dict[str, Any]:
    """The sampling params of an OpenAI request (its `max_tokens` and `n` checked as
    protocol.py does)."""
    if max_tokens is not None:
        if not isinstance(max_tokens, int) or isinstance(max_tokens, bool):
            raise field_error(
                "max_tokens", max_tokens, "int_type", "Input should be a valid integer"
            )
        if max_tokens <= 0:
            raise field_error(
                "max_tokens",
                max_tokens,
                "value_error",
                "Value error, max_tokens must be positive",
            )
    n = body.get("n", 1)
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise field_error("n", n, "int_type", "Input should be a valid integer")
    return {
        "max_new_tokens": max_tokens,
        "stop": body.get("stop"),
        "stop_token_ids": body.get("stop_token_ids"),
        "ignore_eos": bool(body.get("ignore_eos", False)),
        "min_new_tokens": int(body.get("min_tokens") or 0),
        "sampling_seed": body.get("seed"),
        "n": n,
    }
