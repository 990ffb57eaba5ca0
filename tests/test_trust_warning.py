"""A result folder's ``model.zip`` can run code when loaded: both places that point users at
``MaskablePPO.load`` say it must come from a trusted folder (issue 8, case 10h)."""

from __future__ import annotations

import re
from pathlib import Path

import ilets.study.run

README = Path(__file__).resolve().parents[1] / "README.md"


def flat(text: str) -> str:
    """Text with Markdown/reST backticks dropped and every run of whitespace one space."""
    return re.sub(r"\s+", " ", text.replace("`", "")).lower()


def paragraphs_about_model_zip(text: str) -> list[str]:
    return [flat(p) for p in re.split(r"\n\s*\n", text) if "model.zip" in p]


def test_run_module_says_a_model_zip_must_be_trusted():
    doc = ilets.study.run.__doc__
    (row,) = [p for p in paragraphs_about_model_zip(doc) if "maskableppo.load" in p]
    assert "cloudpickle" in row, "say why: SB3 stores parts of model.zip with cloudpickle"
    assert "can run arbitrary code" in row
    assert "load only folders you trust" in row


def test_readme_says_a_model_zip_must_be_trusted():
    found = [p for p in paragraphs_about_model_zip(README.read_text()) if "maskableppo.load" in p]
    assert found, "README.md should say how to load a model.zip, with the warning"
    for p in found:  # every place that tells users to load one carries the warning
        assert re.search(r"from (result )?folders you trust", p), p
        assert re.search(r"(unpickles|cloudpickle).{0,40}can run (arbitrary )?code", p), p
