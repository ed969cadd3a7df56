"""The pictures of docs/network_model.md are what the network model draws today."""

from __future__ import annotations

import importlib.util
from pathlib import Path

DOCS = Path(__file__).resolve().parents[2] / "docs"


def _script():
    spec = importlib.util.spec_from_file_location(
        "make_model_pictures", DOCS / "make_model_pictures.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_checked_in_pictures_match_the_model():
    drawn = _script().pictures()
    assert set(drawn) == {p.name for p in (DOCS / "images").glob("network_model_*.svg")}
    for name, text in drawn.items():
        assert (DOCS / "images" / name).read_text(encoding="utf-8") == text, (
            f"docs/images/{name} is stale: run python docs/make_model_pictures.py"
        )


def test_the_pictures_are_referenced_by_the_page():
    page = (DOCS / "network_model.md").read_text(encoding="utf-8")
    for name in _script().pictures():
        assert f"images/{name}" in page
