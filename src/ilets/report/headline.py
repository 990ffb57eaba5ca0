"""README's headline table, written from a results folder: ``python -m ilets.report.headline``.

The table is :func:`ilets.report.findings.headline_markdown` (the paper's improvements over
DRL beside ours, per fleet size and pooled, with the results' banner). With ``--write FILE``
it replaces what sits between :data:`ilets.report.findings.HEADLINE_MARKERS` in ``FILE``; a
test keeps README's block equal to the shipped paper-scale results' table. It lives in the
report layer (not in the ``ilets`` command of the study layer, which the report layer sits
above).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ilets.report.findings import HEADLINE_MARKERS, headline_markdown
from ilets.report.report_context import ReportContext


class HeadlineError(ValueError):
    """A folder or file the command cannot use (the message names it)."""


def write_headline(results: Path, target: Path | None = None) -> str:
    """The headline table of ``results``; written between the markers of ``target`` if given."""
    results = Path(results)
    if not (results / "store" / "metrics.parquet").is_file():
        raise HeadlineError(f"--results {results}: expected a results folder with store/metrics.parquet")
    text = headline_markdown(ReportContext.load(results))
    if target is None:
        return text
    target = Path(target)
    if not target.is_file():
        raise HeadlineError(f"--write {target}: no such file")
    start, end = HEADLINE_MARKERS
    doc = target.read_text()
    if start not in doc or end not in doc:
        raise HeadlineError(f"--write {target}: expected the markers {start} and {end}")
    head, rest = doc.split(start, 1)
    target.write_text(f"{head}{start}\n{text}{end}{rest.split(end, 1)[1]}")
    return text


def main(argv: list[str] | None = None) -> int:
    """Print the headline table, or write it into a file; 2 with a one-line message on bad input."""
    parser = argparse.ArgumentParser(prog="python -m ilets.report.headline", description=__doc__.splitlines()[0])
    parser.add_argument("--results", required=True, help="a results or shipped folder (with store/)")
    parser.add_argument("--write", default=None, help="replace the table between the headline markers of this file")
    args = parser.parse_args(argv)
    try:
        text = write_headline(Path(args.results), Path(args.write) if args.write else None)
    except HeadlineError as err:
        print(f"headline: {err}", file=sys.stderr)
        return 2
    print(f"wrote the headline table into {args.write}" if args.write else text, end="\n" if args.write else "")
    return 0


if __name__ == "__main__":
    sys.exit(main())
