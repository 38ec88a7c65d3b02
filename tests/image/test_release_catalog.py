"""Extracting a release's option catalog with the image build's own manifest writer."""

from __future__ import annotations

import sysconfig
import zipfile
from pathlib import Path

import pytest

from repro.errors import ReproError
from repro.image.release_catalog import catalog_at, extract_release_catalog, wheel_build_date
from repro.realengine.engine import engine_python
from repro.recipe.argv_check import load_catalog
from repro.schema.option_catalog import Catalog


@pytest.mark.real_sglang
def test_the_engines_sglang_reads_as_the_shipped_catalog_of_its_version() -> None:
    python = engine_python()
    site = Path(sysconfig.get_paths(vars={"base": str(python.parent.parent)})["purelib"])
    data = catalog_at(site, python)
    extracted = Catalog.from_dict(data)
    shipped = load_catalog(extracted.sglang_version)
    assert extracted.speculative_algorithms == shipped.speculative_algorithms
    assert [o.options for o in extracted.options] == [o.options for o in shipped.options]
    for new, old in zip(extracted.options, shipped.options, strict=True):
        assert (new.kind, new.type, new.default, new.new_flag) == (
            old.kind,
            old.type,
            old.default,
            old.new_flag,
        ), new.name
        assert set(new.choices or ()) == set(old.choices or ()), new.name
    # a deprecated option names what replaces it, as SGLang's own action does
    dp = extracted.find("--enable-dp-attention")
    assert dp is not None and dp.deprecated and dp.new_flag


def test_a_wheel_is_dated_by_its_newest_file(tmp_path: Path) -> None:
    wheel = tmp_path / "sglang-9.9.9-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr(zipfile.ZipInfo("sglang/a.py", (2026, 8, 1, 0, 0, 0)), "")
        archive.writestr(zipfile.ZipInfo("sglang/b.py", (2026, 8, 8, 0, 14, 0)), "")
    assert wheel_build_date(wheel) == "2026-08-08"


def test_no_python_to_read_the_parser_with_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(ReproError) as info:
        extract_release_catalog("0.5.17", tmp_path / "nope" / "python", tmp_path)
    assert (
        info.value.message == f"no Python at {tmp_path}/nope/python to import SGLang's parser with"
    )
    assert not list(tmp_path.iterdir())
