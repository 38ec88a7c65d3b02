"""The values a Kubernetes manifest field accepts, checked before repro writes one there.

A value the API server refuses (`kubectl apply` fails on the whole file) or reads as something
else (`$(HF_TOKEN)` in a Secret's name, a newline in a claim's) is refused with the option that
gave it and what was expected, never written as given. The formats are Kubernetes' own:
k8s.io/apimachinery pkg/util/validation/validation.go (IsDNS1123Label: a namespace;
IsDNS1123Subdomain: the name of a Secret or PersistentVolumeClaim; IsConfigMapKey: a key in a
Secret) and pkg/api/resource/quantity.go (a quantity such as an emptyDir's sizeLimit).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_NUMBER = r"[+]?(?=[0-9.]*[1-9])([0-9]+(\.[0-9]*)?|\.[0-9]+)"  # above 0
_SUFFIX = r"(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?"


@dataclass(frozen=True)
class K8sFormat:
    """One kind of value: its pattern, longest length and, in words, what it must be."""

    pattern: re.Pattern[str]
    max_length: int
    expected: str

    def problem(self, value: str) -> str | None:
        """Why `value` is not of this kind, naming what was expected; None when it is."""
        if len(value) <= self.max_length and self.pattern.fullmatch(value):
            return None
        shown = repr(value) if len(value) <= 80 else repr(value[:77]) + "..."
        return f"{shown} is not {self.expected}"


DNS_1123_LABEL = K8sFormat(
    re.compile(_LABEL),
    63,
    "a DNS-1123 label (lowercase letters, digits and '-', starting and ending with a letter "
    "or digit, at most 63 characters), e.g. llm-serving",
)
DNS_1123_SUBDOMAIN = K8sFormat(
    re.compile(rf"{_LABEL}(\.{_LABEL})*"),
    253,
    "a DNS-1123 subdomain (lowercase letters, digits, '-' and '.', starting and ending with a "
    "letter or digit, at most 253 characters), e.g. hf-token",
)
SECRET_KEY = K8sFormat(
    re.compile(r"(?!\.\.)(?!\.$)[-._a-zA-Z0-9]+"),
    253,
    "a Secret key (letters, digits, '-', '_' and '.', not starting with '..', at most 253 "
    "characters), e.g. token",
)
QUANTITY = K8sFormat(
    re.compile(rf"{_NUMBER}{_SUFFIX}"),
    64,
    "a Kubernetes quantity above 0 (a number with an optional suffix Ki, Mi, Gi, Ti, k, M, "
    "G, T or an exponent), e.g. 64Gi",
)
