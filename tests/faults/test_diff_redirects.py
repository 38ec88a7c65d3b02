"""A remote diff pinned into a lock comes from where its URL says: an https diff URL that
redirects to plain http (here a hostile server on 127.0.0.1 serving another patch), or from
a public host onto this machine or a private network, is refused, never pinned; an https to
https redirect is still followed."""

from __future__ import annotations

from pathlib import Path

import pytest

from hubserver.tls import HttpsFiles
from repro.lock.patches import RefusedRedirect, check_redirect, download_diff
from tests.faults.hostile_server import json_server

DIFF = b"--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n"


def test_an_https_diff_redirecting_to_plain_http_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with HttpsFiles(tmp_path) as https, json_server({"/evil.diff": "rm -rf"}) as plain:
        monkeypatch.setenv("SSL_CERT_FILE", str(https.cert_file))
        https.redirects["pr.diff"] = f"{plain}/evil.diff"
        with pytest.raises(RefusedRedirect, match="redirects to plain http: refused"):
            download_diff(https.url("pr.diff"))


def test_an_https_redirect_to_https_is_followed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with HttpsFiles(tmp_path) as https:
        monkeypatch.setenv("SSL_CERT_FILE", str(https.cert_file))
        https.files["final.diff"] = DIFF
        https.redirects["pr.diff"] = https.url("final.diff")
        assert download_diff(https.url("pr.diff")) == DIFF


@pytest.mark.parametrize(
    "target",
    ["https://127.0.0.1:8080/x.diff", "https://localhost/x.diff", "https://10.1.2.3/x.diff",
     "https://[::1]/x.diff", "https://169.254.169.254/latest/meta-data"],
)  # fmt: skip
def test_a_public_diff_url_cannot_redirect_onto_this_machine(target: str) -> None:
    with pytest.raises(RefusedRedirect, match="redirects to this machine or a private network"):
        check_redirect("https://93.184.215.14/pr.diff", target)  # a public address


def test_a_public_redirect_is_allowed() -> None:
    check_redirect("https://93.184.215.14/pr.diff", "https://93.184.215.15/pr.diff")
