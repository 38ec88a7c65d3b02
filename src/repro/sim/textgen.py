"""A deterministic stand-in tokenizer, prompt classifier and text generator.

- Tokens: prompt text is cut into word pieces (a run of letters up to 6 characters, a digit,
  one punctuation mark, each with its leading whitespace), roughly the token counts of a BPE
  tokenizer on English. Pieces of the built-in vocabulary get fixed ids; any other piece gets
  a hash id, and an unknown id decodes to a made-up syllable piece. Special tokens (EOS)
  decode to "" as with `skip_special_tokens`.
- Prompt categories (they select the acceptance rate of a speculative profile), checked in
  this order on the prompt text with `<|...|>` / `<...>` markup removed:
  `random` when at least 8 words and fewer than half look like words or numbers (what
  random-token benchmark prompts look like, where a drafter is useless) or an `input_ids`
  prompt that is mostly outside the vocabulary; `code` for code fences, `def`/`class`/
  `import`/`#include`, or the words code, function, python, javascript, sql, compile, bug,
  implement, regex; `math` for solve, equation, integral, derivative, prove, calculate,
  compute, theorem, probability, math, `\\frac`, or arithmetic like `12 * 7`; else `chat`.
- Output: each request draws from its own generator seeded by (seed, prompt, sampling_seed,
  choice index), so the same prompt gives the same tokens, stop point and acceptance draws
  whatever else is running, for any temperature.
"""

from __future__ import annotations

import hashlib
import random
import re


def _words(text: str) -> list[str]:
    return text.split()


_CHAT = _words(
    "the of and to a in is that it for on with as this be are was at by you we can an or "
    "from have not will more about which their if they one would there all so what when "
    "also some other into time people how make like them than its our only new could way "
    "use first then these may well because over good most just each very through think "
    "help example answer question model system important simple result different number "
    "data value case point part work problem information world long great place small "
    "right large should however always often never between both under again here"
)
_CODE = _words(
    "def return if else for in while class import from self None True False print len "
    "range x y i n result value data list dict key items append int str node left right "
    "count total index args kwargs yield try except raise with as lambda not and or"
)
_MATH = _words(
    "therefore so we have let x y n k sum equals thus since the answer is then solve "
    "gives where total value each case step by and of for"
)
_SYMBOLS = ["(", ")", ":", ",", ".", "=", "+", "-", "*", "/", "\n", "\n\n", "    "]
_DIGITS = list("0123456789")

# id 0..99 reserved; vocabulary pieces from 1000 on: " word", and symbols/digits bare
_PIECES: list[str] = []
for _word in dict.fromkeys(_CHAT + _CODE + _MATH):
    _PIECES.append(" " + _word)
_PIECES.extend(_SYMBOLS)
_PIECES.extend(_DIGITS)
_PIECES.extend(" " + d for d in _DIGITS)
_BASE = 1000
_ID_OF = {piece: _BASE + i for i, piece in enumerate(_PIECES)}
_SYLLABLES = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"]

_PIECE_RE = re.compile(r"\s*[A-Za-z]{1,6}|\s*\d|\s*[^\sA-Za-z\d]|\s+")
_MARKUP_RE = re.compile(r"<\|[^|>]*\|>|</?[A-Za-z_][^>\s]{0,40}>")
_WORDLIKE_RE = re.compile(r"[A-Za-z][a-z']*[.,!?;:]?|\(?\d+(?:[.,]\d+)*[.,)]?")
_CODE_RE = re.compile(
    r"```|\bdef \w|\bclass \w|\bimport \w|#include|\b(code|function|python|javascript|sql|"
    r"compile|bug|implement|regex)\b",
    re.IGNORECASE,
)
_MATH_RE = re.compile(
    r"\b(solve|equation|integral|derivative|prove|calculate|compute|theorem|probability|"
    r"math)|\\frac|\d+\s*[-+*/^=]\s*\d+",
    re.IGNORECASE,
)
_CATEGORY_WORDS = {
    "chat": [" " + w for w in _CHAT],
    "code": [" " + w for w in _CODE] + _SYMBOLS,
    "math": [" " + w for w in _MATH] + [" " + d for d in _DIGITS] + [" =", " +", "."],
}


class Tokenizer:
    """Deterministic word-piece tokenizer over a vocabulary of `vocab_size` ids."""

    def __init__(self, vocab_size: int = 151_936, special_ids: tuple[int, ...] = ()) -> None:
        self.vocab_size = max(vocab_size, _BASE + len(_PIECES) + 1000)
        self.special_ids = frozenset(special_ids)

    def encode(self, text: str) -> list[int]:
        span = self.vocab_size - (_BASE + len(_PIECES))
        ids = []
        for piece in _PIECE_RE.findall(text):
            known = _ID_OF.get(piece)
            if known is None:
                digest = hashlib.blake2b(piece.encode(), digest_size=4).digest()
                known = _BASE + len(_PIECES) + int.from_bytes(digest, "little") % span
            ids.append(known)
        return ids

    def decode_one(self, token_id: int) -> str:
        if token_id in self.special_ids:
            return ""
        index = token_id - _BASE
        if 0 <= index < len(_PIECES):
            return _PIECES[index]
        syllables = [_SYLLABLES[(token_id >> s) % len(_SYLLABLES)] for s in (0, 6, 12)]
        return " " + "".join(syllables[: 1 + token_id % 3])

    def decode(self, ids: list[int]) -> str:
        return "".join(self.decode_one(i) for i in ids)

    @staticmethod
    def is_known(token_id: int) -> bool:
        return 0 <= token_id - _BASE < len(_PIECES)


def classify(text: str) -> str:
    """The prompt category (see the module docstring)."""
    text = _MARKUP_RE.sub(" ", text)
    words = text.split()
    if len(words) >= 8:
        wordlike = sum(1 for w in words if _WORDLIKE_RE.fullmatch(w))
        if wordlike * 2 < len(words):
            return "random"
    if _CODE_RE.search(text):
        return "code"
    if _MATH_RE.search(text):
        return "math"
    return "chat"


def classify_ids(tokenizer: Tokenizer, ids: list[int]) -> str:
    if not ids:
        return "chat"
    known = sum(1 for i in ids if tokenizer.is_known(i))
    if len(ids) >= 8 and known * 5 < len(ids) * 3:
        return "random"
    return classify(tokenizer.decode(ids))


def request_rng(
    seed: int, prompt_ids: list[int], sampling_seed: int | None, index: int, stream: str = ""
) -> random.Random:
    """A request's generator; `stream` names an independent one of the same request (the
    acceptance draws use their own, so the text is the same with and without a drafter)."""
    digest = hashlib.blake2b(repr(prompt_ids).encode(), digest_size=16).hexdigest()
    return random.Random(f"{stream}{seed}:{digest}:{sampling_seed}:{index}")


def vocabulary(category: str) -> list[int]:
    """Token ids an output of this category is drawn from."""
    pieces = _CATEGORY_WORDS.get(category, _CATEGORY_WORDS["chat"])
    return [_ID_OF[p] for p in pieces if p in _ID_OF]
