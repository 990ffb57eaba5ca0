"""The per-server learner family in words: what its pilot chose, and how its grid compares.

README's paragraph on the per-server learners (between :data:`README_MARKERS`, written by
``python -m ilets.report.per_server --write README.md`` from the shipped folders, a test keeps
it equal) and chapter 13's coverage sentence come from here, so both say the same.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

README_MARKERS = ("<!-- per-server:start -->", "<!-- per-server:end -->")
#: the shipped folders the paragraph reads, relative to a ``shipped/`` root
PILOT, GRID, FAITHFUL = "pilot-per-server", "per-server", "paper"


def coverage_sentence(folder: Path, learners: pd.DataFrame) -> str:
    """How much of the per-server grid in ``folder`` has finished, per fleet size (Markdown)."""
    from ilets.study.grid import planned_cells

    if learners.empty:
        return f"The per-server grid has no finished cell in `{folder.parent.name}/{folder.name}` yet."
    per_size = ", ".join(f"{s} servers: {n}" for s, n in learners.groupby("servers").size().items())
    planned = planned_cells(folder)
    of = f" of {planned}" if planned else ""
    return (f"{len(learners)}{of} cells of the per-server grid have finished ({per_size}; methods "
            f"{', '.join(sorted(learners['method'].unique()))}), read from `{folder.parent.name}/{folder.name}`.")


def pilot_sentence(folder: Path) -> str:
    """The per-server pilot's choice and what the chosen fine-tuning did to the clone."""
    from ilets.study.pilot import joint_report

    rep = joint_report(folder)
    if rep.chosen is None:
        return rep.summary
    row = rep.table.set_index("variant").loc[rep.chosen]
    return (f"The per-server pilot ({int(rep.table['cells'].sum())} DRL+ cells on pilot seeds, paper scale, two "
            f"declared rounds) chose {rep.chosen} ({row['settings']}): fine-tuned online, the clone ends its pass "
            f"{100 * row['change']:+.2f} % (95 % t-interval {100 * row['change_low']:+.2f} to "
            f"{100 * row['change_high']:+.2f} %) from where it started on a held-out segment, frozen and greedy.")


def readme_block(shipped: Path, reps: int = 2000) -> str:
    """README's paragraph from the shipped folders under ``shipped``."""
    from ilets.report import heuristic_gap as G
    from ilets.study.results import load_metrics

    parts = [pilot_sentence(shipped / PILOT)]
    grid = shipped / GRID
    if (grid / "store" / "metrics.parquet").is_file():
        learners = load_metrics(grid)
        metrics = G.family_metrics(learners, load_metrics(shipped / FAITHFUL))
        parts += [coverage_sentence(grid, learners),
                  G.gap_sentence(G.gap_table(metrics, reps=reps), "the per-server policy")]
    else:
        parts.append("The per-server grid is not shipped yet.")
    parts.append("Chapter 13 of the book (*The per-server learners*) has the tables.")
    return " ".join(parts) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Print README's per-server paragraph, or write it between :data:`README_MARKERS`."""
    import argparse
    import sys

    from ilets.files import MarkerError, atomic_write, replace_marked

    ap = argparse.ArgumentParser(prog="python -m ilets.report.per_server", description=main.__doc__)
    ap.add_argument("--shipped", type=Path, default=Path("shipped"), help="the shipped folders' root")
    ap.add_argument("--write", type=Path, default=None, help="the file whose marked block to replace")
    args = ap.parse_args(argv)
    text = readme_block(args.shipped)
    if args.write is None:
        print(text, end="")
        return 0
    try:
        doc = replace_marked(args.write.read_text() if args.write.is_file() else "", README_MARKERS, text, args.write)
    except MarkerError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    atomic_write(args.write, lambda tmp: tmp.write_text(doc))
    print(f"wrote the per-server paragraph into {args.write}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
