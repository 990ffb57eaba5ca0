"""The book's recorded measurements, read: what chapters 3, 4 and 8 quote instead of measuring.

:mod:`ilets.study.book_measurements` (``make artifacts``) measures the fleet-load table, the
experts' gaps and call costs, and the decision latency once and records them as JSON with the
machine, date and commit. The functions here only read those records: :func:`read` finds a
profile's record and refuses one measured with other settings than the results shown (the
``run`` sections the record depends on), and the others turn a record into the tables and
the caption the chapters show. Nothing here measures, simulates or times.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ilets.config import RunConfig, drop_added_defaults
from ilets.host import machine_label
from ilets.study.book_measurements import DEPENDS, measurements_dir, settings_of

#: What a reader runs to record the measurements again.
COMMAND = "make artifacts"


class MeasurementError(RuntimeError):
    """A recorded measurement is missing, or was measured with other settings than the results shown."""


@dataclass(frozen=True)
class Measurement:
    """One record of :mod:`ilets.study.book_measurements` as read from its file."""

    name: str
    path: Path
    data: dict

    def __getitem__(self, key: str):
        return self.data[key]

    @property
    def host(self) -> dict:
        """Where and when it was measured (:func:`ilets.host.host_record`)."""
        return self.data.get("host") or {}

    @property
    def stamp(self) -> str:
        """Where and when it was measured, for a caption (plain text: a glued string is not
        parsed as Markdown): ``"recorded on <machine> (Python <v>), <date> UTC, at commit <abc1234>"``."""
        h = self.host
        machine = machine_label(h.get("cpu_model") or "an unknown CPU", h.get("cpus", "?"), h.get("cpu_id", ""))
        commit = str(h.get("commit") or "unrecorded")[:7] + (" with uncommitted edits" if h.get("dirty") else "")
        date = str(h.get("date_utc", "an unrecorded date")).replace("T", " ").removesuffix("Z")[:16]
        stamp = f"recorded on {machine} (Python {h.get('python', '?')}), {date} UTC, at commit {commit}"
        for r in self.data.get("reused") or []:  # rows taken from a record with the same settings
            when = str(r.get("date_utc") or "an unrecorded date").replace("T", " ").removesuffix("Z")[:16]
            stamp += (f"; the rows at scale {r['scale']:g} from the {r.get('profile')} profile's record "
                      f"({when} UTC, commit {str(r.get('commit') or 'unrecorded')[:7]}), measured with the same settings")
        return stamp


def _plain(value):
    """``value`` as JSON reads it back (tuples become lists), so that settings compare alike."""
    return json.loads(json.dumps(value))


def read(name: str, profile: str, run: RunConfig, folder: Path | None = None) -> Measurement:
    """Record ``name`` (a key of :data:`ilets.study.book_measurements.DEPENDS`) of ``profile``,
    from ``folder`` (default :func:`ilets.study.book_measurements.measurements_dir`).

    Raises :class:`MeasurementError` when the file is missing or when the ``run`` sections the
    record depends on differ from ``run``'s (the settings of the results shown), naming them
    and the command that measures them again."""
    if name not in DEPENDS:
        raise MeasurementError(f"no recorded measurement is called {name!r}; expected one of {sorted(DEPENDS)}")
    path = (Path(folder) if folder is not None else measurements_dir(profile)) / f"{name}.json"
    if not path.is_file():
        raise MeasurementError(f"{path}: no recorded measurement for the {profile} profile; run `{COMMAND}` "
                               f"(python -m ilets.study.book_measurements) to measure it")
    data = json.loads(path.read_text())
    wanted = _plain(settings_of(run, name))
    recorded = data.get("run") or {}
    sections = DEPENDS[name]
    recorded = recorded if sections is None else {s: recorded.get(s) for s in sections}
    # fields added since the record was made, at their defaults, changed nothing it measured
    wanted, recorded = drop_added_defaults(wanted), drop_added_defaults(recorded)
    differ = sorted(s for s in set(wanted) | set(recorded) if wanted.get(s) != recorded.get(s))
    if differ:
        raise MeasurementError(f"{path}: measured with other {', '.join(differ)} settings than the {profile} results "
                               f"shown; run `{COMMAND}` to measure it again")
    return Measurement(name, path, data)


def of_context(ctx, name: str) -> Measurement:
    """:func:`read` for a :class:`ilets.report.report_context.ReportContext`'s profile and settings."""
    return read(name, ctx.name, ctx.run)


# --- chapter 3 --------------------------------------------------------------------------------
def load_frame(m: Measurement) -> pd.DataFrame:
    """The workload record's load table (the rows of :func:`ilets.study.book_measurements.load_table`)."""
    return pd.DataFrame(m["load"])


# --- chapter 4 --------------------------------------------------------------------------------
def gap_frame(m: Measurement) -> pd.DataFrame:
    """The experts record's small cases, one row per (case, expert) (:func:`ilets.study.expert_tables.gap_cases`)."""
    return pd.DataFrame(m["gaps"])


def gap_summary(m: Measurement) -> pd.DataFrame:
    """Per expert, from :func:`gap_frame`: cases, mean and max gap, the share solved optimally
    (:func:`ilets.study.expert_tables.gap_table`, a function of the rows alone), indexed by expert."""
    from ilets.study.expert_tables import gap_table

    return pd.DataFrame(gap_table(m["gaps"])).set_index("expert")


def timing_frame(m: Measurement) -> pd.DataFrame:
    """The experts record's cost per call (:func:`ilets.study.expert_tables.timing_table`)."""
    return pd.DataFrame(m["timing"])


# --- chapter 8 --------------------------------------------------------------------------------
def latency_summary(m: Measurement) -> pd.DataFrame:
    """The decision-time record's p50/p95 per method, fleet size and path (:func:`ilets.study.latency.summarise`)."""
    return pd.DataFrame(m["summary"])


def oail_counters(m: Measurement) -> pd.DataFrame:
    """The decision-time record's OAIL counters, one row per fleet size."""
    counters = pd.DataFrame.from_dict(m["oail_counters"], orient="index")
    counters.index = counters.index.astype(int)
    return counters
