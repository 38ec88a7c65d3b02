"""The wire format of SGLang's streaming endpoints: request bodies, an incremental SSE parser
and narrow msgspec structs that decode only the fields the benchmark needs.

Sources (SGLang 0.5.x):
- request body of `/generate`: GenerateReqInput (srt/managers/io_struct.py), as
  python/sglang/bench_serving.py `async_request_sglang_generate` sends it:
  `{"text" | "input_ids", "sampling_params": {"max_new_tokens", "temperature", "ignore_eos"},
  "stream": true}`.
- stream: srt/entrypoints/http_server.py `generate_request` writes `data: {json}\\n\\n` per
  output and `data: [DONE]\\n\\n` at the end; an error mid-stream is `data: {"error": {...}}`.
- `meta_info`: srt/managers/tokenizer_manager.py (`prompt_tokens`, `completion_tokens`,
  `cached_tokens`, `finish_reason`; `e2e_latency` and the `spec_*` fields such as
  `spec_verify_ct` only on the finished output). `text`/`output_ids` are cumulative unless the
  server runs with `--incremental-streaming-output`; the structs below never decode them, and
  `decode_generate` does not even scan them (it decodes the trailing meta_info alone).
- `/v1/chat/completions`: srt/entrypoints/openai/protocol.py ChatCompletionStreamResponse
  (`choices[].delta.content`, `choices[].finish_reason`, `usage` on the last chunk when
  `stream_options.include_usage` is set, and on every content chunk with
  `continuous_usage_stats`). Speculative stats are not in `usage`: with
  `return_spec_tokens_details: true` a chunk with `choices: []` carries
  `sglext.spec_tokens_details` (SpecTokensDetails; a list when n > 1), serving_chat.py.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

from repro.schema.record import ClientLimits

# ---- narrow decoders ----------------------------------------------------------------------
# Counts are non-negative and below 2**40 (no server holds a trillion tokens), seconds finite
# and non-negative: the decoder itself refuses anything else (a msgspec.ValidationError, which
# fails the request as implausible). Bounds that depend on the request (completion_tokens at
# most max_new_tokens, ...) are checked by repro.bench.client.readers.

MAX_COUNT = 2**40
Count = Annotated[int, msgspec.Meta(ge=0, lt=MAX_COUNT)]
Seconds = Annotated[float, msgspec.Meta(ge=0.0, lt=1e9)]
Ratio = Annotated[float, msgspec.Meta(ge=0.0, lt=1e9)]


class GenMeta(msgspec.Struct):
    prompt_tokens: Count = 0
    completion_tokens: Count = 0
    cached_tokens: Count = 0
    finish_reason: dict[str, Any] | str | None = None
    spec_verify_ct: Count | None = None
    e2e_latency: Seconds | None = None


class GenChunk(msgspec.Struct):
    meta_info: GenMeta | None = None
    error: dict[str, Any] | str | None = None


class ChatDelta(msgspec.Struct):
    content: str | None = None
    reasoning_content: str | None = None


class ChatChoice(msgspec.Struct):
    delta: ChatDelta | None = None
    finish_reason: str | None = None


class PromptDetails(msgspec.Struct):
    cached_tokens: Count | None = 0


class ChatUsage(msgspec.Struct):
    prompt_tokens: Count = 0
    completion_tokens: Count = 0
    prompt_tokens_details: PromptDetails | None = None


class SpecTokensDetails(msgspec.Struct):
    """protocol.py SpecTokensDetails, the fields the benchmark reads."""

    spec_verify_ct: Count = 0
    spec_accept_length: Ratio = 0.0


class SglExt(msgspec.Struct):
    spec_tokens_details: SpecTokensDetails | list[SpecTokensDetails] | None = None


class ChatChunk(msgspec.Struct):
    choices: list[ChatChoice] = []
    usage: ChatUsage | None = None
    sglext: SglExt | None = None
    error: dict[str, Any] | str | None = None
    object: str | None = None
    message: str | None = None


class GenText(msgspec.Struct):
    text: str = ""


GEN_DECODER = msgspec.json.Decoder(GenChunk)
TEXT_DECODER = msgspec.json.Decoder(GenText)
_META_DECODER = msgspec.json.Decoder(GenMeta)
_META_KEY = b'"meta_info":'
_META_LEN = len(_META_KEY)
CHAT_DECODER = msgspec.json.Decoder(ChatChunk)
_ENCODER = msgspec.json.Encoder()

DONE = b"[DONE]"


def decode_generate(payload: bytes) -> GenChunk:
    """One `/generate` stream chunk, as `GEN_DECODER.decode(payload)` would return it.

    SGLang's chunks end with `"meta_info":{...}}` (tokenizer_manager.py builds `{"text",
    "output_ids", "meta_info"}`, orjson keeps the order), and without
    `--incremental-streaming-output` the text and ids before it grow with every token: a
    full decode must scan them all (~20 us per event at 1k tokens on a slow core). So the
    meta_info object is found from the end and decoded alone. JSON strings escape their
    quotes, so the key cannot be matched inside the text. Anything else (keys after
    meta_info such as `index` or `output_ids` with --return-token-ids, other spacing) fails
    that decode or the search and takes the full decode, as does an error chunk
    (http_server.py writes `{"error": {...}}`).
    """
    at = payload.rfind(_META_KEY)
    if at > 0 and payload[-1] == 125 and not payload.startswith(b'{"error"'):  # 125: b"}"
        try:
            return GenChunk(meta_info=_META_DECODER.decode(payload[at + _META_LEN : -1]))
        except msgspec.DecodeError:
            pass
    return GEN_DECODER.decode(payload)


def spec_verify_ct(sglext: SglExt) -> int | None:
    """Verify steps from `sglext.spec_tokens_details` (summed over choices); None without."""
    details = sglext.spec_tokens_details
    if details is None:
        return None
    if isinstance(details, list):
        return sum(d.spec_verify_ct for d in details) if details else None
    return details.spec_verify_ct


def finish_type(reason: dict[str, Any] | str | None) -> str | None:
    """SGLang's finish_reason is `{"type": "length"|"stop"|"abort", ...}`; OpenAI's a string."""
    if reason is None:
        return None
    if isinstance(reason, str):
        return reason[:64]
    kind = reason.get("type")
    return str(kind)[:64] if kind is not None else None


# ---- request bodies -----------------------------------------------------------------------


def generate_body(
    prompt: str | list[int], max_new_tokens: int, *, temperature: float, ignore_eos: bool
) -> bytes:
    key = "text" if isinstance(prompt, str) else "input_ids"
    return _ENCODER.encode(
        {
            key: prompt,
            "sampling_params": {
                "max_new_tokens": max_new_tokens,
                "temperature": temperature,
                "ignore_eos": ignore_eos,
            },
            "stream": True,
        }
    )


def chat_body(
    model: str,
    messages: list[dict[str, str]],
    max_tokens: int,
    *,
    temperature: float,
    ignore_eos: bool,
    chat_template_kwargs: dict[str, Any] | None = None,
) -> bytes:
    # ignore_eos, return_spec_tokens_details and chat_template_kwargs (the thinking switch,
    # handed to apply_chat_template) are SGLang extensions of ChatCompletionRequest
    # (srt/entrypoints/openai/protocol.py)
    doc: dict[str, Any] = {
        "model": model,
        "messages": messages,
        "max_tokens": max_tokens,
        "temperature": temperature,
        "ignore_eos": ignore_eos,
        "stream": True,
        "stream_options": {"include_usage": True, "continuous_usage_stats": True},
        "return_spec_tokens_details": True,
    }
    if chat_template_kwargs:
        doc["chat_template_kwargs"] = chat_template_kwargs
    return _ENCODER.encode(doc)


# ---- SSE ----------------------------------------------------------------------------------


MAX_EVENT_BYTES: int = ClientLimits.model_fields["max_event_bytes"].default
"""Default bytes of one SSE event before the stream counts as malformed. SGLang's largest are
`/generate`'s cumulative chunks: text and output ids of every token so far, ~10 bytes a token
(~1.3 MB at 128k tokens)."""


class EventTooLarge(ValueError):
    """An SSE event grew past the parser's limit without ending."""


BOM = b"\xef\xbb\xbf"


class SSEParser:
    """Incremental Server-Sent-Events parser: feed raw bytes, get the complete `data:` payloads.

    Events are separated by a blank line (`\\n\\n`, or `\\r\\n\\r\\n`); only `data:` fields are
    kept (SGLang sends nothing else). Several events in one read come back together, so the
    caller can stamp them all with the read's arrival time. The common read, whole events
    and nothing pending, costs one `find` per event and one slice per payload. An incomplete
    event waits in a buffer that each read extends and searches from where the last search
    stopped, so a long event costs time linear in its size. An event over `max_event_bytes`
    (ended or not, however the reads split it) raises `EventTooLarge`. One UTF-8 byte order
    mark before the stream's first byte is dropped, as the SSE standard says (html.spec.whatwg
    .org, "event stream interpretation"), however the reads split it.
    """

    __slots__ = ("_buf", "_head", "_scanned", "max_event_bytes")

    def __init__(self, max_event_bytes: int = MAX_EVENT_BYTES) -> None:
        self._buf = bytearray()
        self._scanned = 0  # bytes of _buf known to hold no event end
        self._head: bytes | None = b""  # the stream's first bytes until past a BOM; then None
        self.max_event_bytes = max_event_bytes

    def _after_bom(self, data: bytes) -> bytes:
        head = (self._head or b"") + data
        if len(head) < len(BOM) and BOM.startswith(head):
            self._head = head  # maybe a BOM split across reads: wait for more
            return b""
        self._head = None
        return head[len(BOM) :] if head.startswith(BOM) else head

    def feed(self, data: bytes) -> list[bytes]:
        if self._head is not None:
            data = self._after_bom(data)
            if not data:
                return []
        buf = self._buf
        if buf:
            buf += data
            start = max(self._scanned - 2, 0)  # an event end can straddle the reads
            if buf.find(b"\n\n", start) < 0 and buf.find(b"\n\r\n", start) < 0:
                self._scanned = len(buf)
                self._check_size()
                return []
            data = bytes(buf)
            buf.clear()
            self._scanned = 0
        size = len(data)
        # the common read, one whole `data: <payload>\n\n` event: one memchr, one slice
        if (
            data.find(b"\n") == size - 2
            and data[-1] == 10
            and data.startswith(b"data: ")
            and data[6] != 32
            and data[-3] != 13
            and size - 2 <= self.max_event_bytes
        ):
            return [data[6:-2]]
        # fast path: single-line `data:` events ending in `\n\n`, one memchr per event
        out: list[bytes] = []
        pos = 0
        find = data.find
        limit = self.max_event_bytes
        while pos < size:
            nl = find(b"\n", pos)
            if nl < 0 or nl + 1 == size:
                self._keep(data[pos:] if pos else data)
                return out
            if data[nl + 1] != 10 or data[nl - 1] == 13 or not data.startswith(b"data:", pos):
                return out + self._general(data[pos:])
            if nl - pos > limit:
                self._too_large(nl - pos)
            start = pos + 5
            while data[start] == 32:  # b" "; stops at the `\n` at the latest
                start += 1
            out.append(data[start:nl])
            pos = nl + 2
        return out

    def _keep(self, tail: bytes) -> None:
        """The start of an event still incomplete (no blank line in it)."""
        self._buf += tail
        self._scanned = len(tail)
        self._check_size()

    def _check_size(self) -> None:
        if len(self._buf) > self.max_event_bytes:
            self._too_large(len(self._buf))

    def _too_large(self, size: int) -> None:
        self._buf.clear()
        self._scanned = 0
        raise EventTooLarge(f"an SSE event of over {size} bytes (limit {self.max_event_bytes})")

    def _general(self, data: bytes) -> list[bytes]:
        """Any framing: CRLF line ends, comments, other fields, multi-line data."""
        data = data.replace(b"\r\n", b"\n")
        out: list[bytes] = []
        pos = 0
        while (end := data.find(b"\n\n", pos)) >= 0:
            if end - pos > self.max_event_bytes:
                self._too_large(end - pos)
            lines = [
                line[5:].lstrip(b" ")
                for line in data[pos:end].split(b"\n")
                if line.startswith(b"data:")
            ]
            if lines:
                out.append(b"\n".join(lines))
            pos = end + 2
        if pos < len(data):
            self._keep(data[pos:])
        return out

    @property
    def pending(self) -> bytes:
        return bytes(self._buf)
