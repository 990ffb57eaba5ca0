"""The hindsight MILP of the grid-command expert ladder, and the weights and server classes both its models share.

The ladder's two models, this module's MILP and the MPC's LP (:mod:`ilets.gridcommand.fluid`),
are pure functions of plain arrays (no environment, no simulator state), so they
can be tested exhaustively on hand-built cases; :mod:`ilets.gridcommand.experts` builds their
inputs from a live environment and turns their solutions into actions. Both are solved with
HiGHS through :func:`scipy.optimize.milp` (no new dependency).

Units and normalisation [ours]: power in W, time in s, CPU in trace units, task length in MI,
work in CPU·MI (a task's ``cpu * length``; on a server of ``mips`` it occupies ``cpu`` for
``length / mips`` s). Every term of both objectives is dimensionless: tracking error and
energy are divided by a reference power ``p_ref`` (the fleet's maximum power), so one unit
is "the whole fleet at full power for one second"; misses are counted in tasks and waiting
in task-seconds. The weights (:class:`Weights`) price one against the other.

**Hindsight MILP** (:func:`solve_window`): a window of tasks known in hindsight, each with a
list of candidate start times (the slot edges after its release, or its possible re-arrival
times ``release + n * defer_s``; :func:`slot_starts`, :func:`deferral_starts`) and a server
class (servers grouped by energy per unit of work, :func:`make_classes`). Binary ``x[j, k, n]``:
task ``j`` starts at its ``n``-th candidate on class ``k``; binary ``u[j]``: task ``j`` is
left out of the plan (overflow, priced above anything it could save, so it is used only
when the capacities leave no room: the problem is always feasible). Given the start, the
task's contribution to every slot's average power and CPU is an exact constant (the overlap
of its run with the slot), so the model is linear::

    min  sum_{scored t} w_track * e_t * len_t / p_ref
         + sum_{j,k,n} x[j,k,n] * (w_miss * miss + w_late * lateness + w_wait * wait
                                   + w_energy * energy / p_ref)  +  sum_j u[j] * overflow_j
    s.t. sum_{k,n} x[j,k,n] + u[j] = 1                                 (each task once)
         sum_{j,n} cpu_j * occ(j,k,n,t) * x[j,k,n] <= spare_cpu[k,t]   (slot-average CPU)
         e_t >= P_t - target_t - band_t,  e_t >= target_t - band_t - P_t,  e_t >= 0
         P_t = base_power_t + sum_{j,k,n} w_k * cpu_j * occ(j,k,n,t) * x[j,k,n]

``occ(j,k,n,t)`` is the fraction of slot ``t`` during which the task runs. With ``band_t = 0``
``e_t`` is ``|P_t - target_t|``; with a band only the excess outside it is priced. Modelling
choices [ours]: a class's capacity is enforced on the slot-average CPU (a fluid bound: FCFS
head-of-line blocking and fragmentation across the class's servers are not modelled); a
task runs at its class's capacity-weighted mean speed; power only counts inside the
horizon (a run crossing its end is cut there).
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp
from scipy.sparse import coo_matrix

from ilets.simulator.cloud import CPU_EPS, DEADLINE_TOL, Fleet

#: scipy's ``milp`` status codes, named.
STATUS = {0: "optimal", 1: "limit", 2: "infeasible", 3: "unbounded", 4: "other"}


# --- weights and server classes ------------------------------------------------------------

@dataclass(frozen=True)
class Weights:
    """Prices of the objective terms (dimensionless, see the module docstring) [ours].

    The defaults make one deadline miss worth 1% of the fleet's full power for one second of
    tracking error: with ~170 tasks/s of ~20 W each, a deep cut can only be tracked by
    deferring and moving many tasks, and a miss is accepted only when it buys a lot of
    tracking. A task-second of waiting costs a tenth of a miss: more than the energy a
    frugal server saves on a typical task (~1e-5 here), so without a command the experts do
    not hold work back for efficient servers, and much less than the tracking a deferral
    buys during an event (a 20 W task held 0.5 s off a ~3 kW fleet: ~3e-3). Energy is a
    small preference for efficient servers.
    """

    track: float = 1.0  #: per fleet-full-power-second of error outside the band
    miss: float = 0.01  #: per task that misses its deadline
    late: float = 0.002  #: per second a task finishes after its deadline
    wait: float = 1e-3  #: per second a task waits before it starts
    energy: float = 1e-3  #: per fleet-full-power-second of active energy

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if not (np.isfinite(v) and v >= 0):
                raise ValueError(f"Weights.{f.name}: expected a finite number >= 0, got {v}")


@dataclass(frozen=True)
class ServerClass:
    """A group of servers the optimisers treat as one pool."""

    members: np.ndarray  #: int64 server indices
    w_per_cpu: float  #: active W per CPU unit in use, capacity-weighted mean of the members
    mips: float  #: capacity-weighted mean service rate, MI/s
    max_cpu: float  #: largest member capacity: a bigger request cannot use the class
    capacity: float  #: summed member capacity, CPU units

    def duration(self, length: float) -> float:
        """Execution time of a task of ``length`` MI at the class's speed, s."""
        return length / self.mips


def make_classes(fleet: Fleet, n_classes: int = 3) -> tuple[ServerClass, ...]:
    """Group the fleet into ``n_classes`` classes of (nearly) equal size by energy per work.

    The key is active energy per unit of work, ``(p_act / C) / mips`` (J per CPU·MI): it is
    what a task costs on the server and it mixes power per CPU and speed, the two axes
    of the fleet's heterogeneity [ours: one key, equal-count bins, ties broken by speed then index].
    """
    m = len(fleet)
    if not 1 <= n_classes:
        raise ValueError(f"n_classes: expected >= 1, got {n_classes}")
    n_classes = min(n_classes, m)
    w = fleet.p_act / fleet.capacity
    key = w / fleet.mips
    order = np.lexsort((np.arange(m), -fleet.mips, key))
    out = []
    for members in np.array_split(order, n_classes):
        cap = fleet.capacity[members]
        out.append(ServerClass(members=np.sort(members).astype(np.int64),
                               w_per_cpu=float((w[members] * cap).sum() / cap.sum()),
                               mips=float((fleet.mips[members] * cap).sum() / cap.sum()),
                               max_cpu=float(cap.max()), capacity=float(cap.sum())))
    return tuple(out)


# --- the hindsight window MILP -------------------------------------------------------------

@dataclass(frozen=True)
class PlanTask:
    """A task of a planning window; times absolute, deadline relative to ``arrival`` (s)."""

    index: int
    arrival: float  #: first arrival: the response counts from here (also after deferrals)
    cpu: float
    length: float  #: MI
    deadline: float  #: relative, s
    starts: tuple[float, ...]  #: candidate start times, non-decreasing, each >= arrival


def slot_starts(release: float, edges: np.ndarray, latest: float = np.inf) -> tuple[float, ...]:
    """Start candidates on a slot grid: at ``release`` in its own slot, then at each later
    slot edge up to ``latest`` (a time-indexed formulation: release slot to latest start)."""
    edges = np.asarray(edges, float)
    later = edges[(edges > release) & (edges < edges[-1]) & (edges <= latest)]
    return (float(release),) + tuple(float(e) for e in later)


def deferral_starts(release: float, defer_s: float, n: int) -> tuple[float, ...]:
    """Start candidates reachable by deferring: ``release + i * defer_s`` for ``i = 0..n``.

    These are exactly the times at which a deferred task re-arrives, so a plan on this grid
    is one the environment can execute (a slot-edge plan would be rounded) [ours].
    """
    if defer_s <= 0:
        raise ValueError(f"defer_s: expected > 0, got {defer_s}")
    if n < 0:
        raise ValueError(f"max deferrals: expected >= 0, got {n}")
    return tuple(float(release + i * defer_s) for i in range(n + 1))


@dataclass(frozen=True)
class TrackingProblem:
    """Inputs of :func:`solve_window` (``S`` slots, ``K`` classes, ``N`` tasks)."""

    tasks: tuple[PlanTask, ...]
    edges: np.ndarray  #: (S+1,) slot edges, s, increasing
    classes: tuple[ServerClass, ...]
    spare_cpu: np.ndarray  #: (K, S) CPU free per class, slot average, net of committed work
    base_power: np.ndarray  #: (S,) W: idle power plus already-committed work, slot average
    target: np.ndarray  #: (S,) W, slot-average target
    scored: np.ndarray  #: (S,) bool: slots where tracking is scored (the command's event)
    band: np.ndarray  #: (S,) W half-width of the tolerance band (0: price |P - target|)
    p_ref: float  #: W, normaliser (the fleet's maximum power)
    weights: Weights = field(default_factory=Weights)

    def __post_init__(self) -> None:
        edges = np.asarray(self.edges, float)
        if edges.ndim != 1 or len(edges) < 2 or not np.all(np.isfinite(edges)) or np.any(np.diff(edges) <= 0):
            raise ValueError("TrackingProblem.edges: expected >= 2 finite, strictly increasing slot edges")
        s, k = len(edges) - 1, len(self.classes)
        if k < 1:
            raise ValueError("TrackingProblem.classes: expected at least one server class")
        object.__setattr__(self, "edges", edges)
        for name, shape in (("spare_cpu", (k, s)), ("base_power", (s,)), ("target", (s,)), ("band", (s,))):
            a = np.broadcast_to(np.asarray(getattr(self, name), float), shape) if name == "band" else \
                np.asarray(getattr(self, name), float)
            if a.shape != shape:
                raise ValueError(f"TrackingProblem.{name}: expected shape {shape}, got {a.shape}")
            if not np.all(np.isfinite(a)):
                raise ValueError(f"TrackingProblem.{name}: expected finite values")
            object.__setattr__(self, name, a.copy())
        if np.any(self.spare_cpu < -CPU_EPS):
            raise ValueError("TrackingProblem.spare_cpu: negative free capacity (committed work exceeds a class)")
        if np.any(self.band < 0):
            raise ValueError("TrackingProblem.band: expected >= 0")
        scored = np.asarray(self.scored, bool)
        if scored.shape != (s,):
            raise ValueError(f"TrackingProblem.scored: expected shape {(s,)}, got {scored.shape}")
        object.__setattr__(self, "scored", scored)
        if not (np.isfinite(self.p_ref) and self.p_ref > 0):
            raise ValueError(f"TrackingProblem.p_ref: expected a finite power > 0, got {self.p_ref}")
        biggest = max(c.max_cpu for c in self.classes)
        for j, t in enumerate(self.tasks):
            where = f"TrackingProblem.tasks[{j}]"
            if not (t.cpu > 0 and t.length > 0 and t.deadline > 0):
                raise ValueError(f"{where}: cpu, length and deadline must be > 0, "
                                 f"got {t.cpu}, {t.length}, {t.deadline}")
            if t.cpu > biggest + CPU_EPS:
                raise ValueError(f"{where}.cpu: request {t.cpu} exceeds every class's largest server ({biggest})")
            if not t.starts:
                raise ValueError(f"{where}.starts: expected at least one candidate start")
            st = np.asarray(t.starts, float)
            if np.any(np.diff(st) < 0) or st[0] < t.arrival - 1e-12:
                raise ValueError(f"{where}.starts: expected non-decreasing times >= arrival {t.arrival}")
            if st[0] < edges[0] - 1e-12 or st[0] >= edges[-1]:
                raise ValueError(f"{where}.starts: first start {st[0]} is outside the horizon "
                                 f"[{edges[0]}, {edges[-1]})")


@dataclass(frozen=True)
class _Options:
    """The MILP's columns for the task options, and their constants."""

    task: np.ndarray  #: (X,) task of each option
    cls: np.ndarray  #: (X,) class
    start_no: np.ndarray  #: (X,) index into the task's starts
    start: np.ndarray  #: (X,) start time
    cost: np.ndarray  #: (X,) miss + lateness + wait + energy terms
    miss: np.ndarray  #: (X,) bool
    occ: np.ndarray  #: (X, S) fraction of each slot the task runs
    power: np.ndarray  #: (X,) W while running
    overflow: np.ndarray  #: (N,) price of leaving each task out


def overlap_fraction(start: float, duration: float, edges: np.ndarray) -> np.ndarray:
    """Fraction of each slot ``[edges[t], edges[t+1]]`` covered by ``[start, start+duration]``."""
    lo = np.maximum(edges[:-1], start)
    hi = np.minimum(edges[1:], start + duration)
    return np.clip(hi - lo, 0.0, None) / np.diff(edges)


def _options(p: TrackingProblem) -> _Options:
    w = p.weights
    rows: dict[str, list] = {k: [] for k in ("task", "cls", "start_no", "start", "cost", "miss", "occ", "power")}
    overflow = np.zeros(len(p.tasks))
    span = p.edges[-1] - p.edges[0]
    for j, t in enumerate(p.tasks):
        worst = 0.0
        for k, c in enumerate(p.classes):
            if t.cpu > c.max_cpu + CPU_EPS:
                continue
            dur = c.duration(t.length)
            power = c.w_per_cpu * t.cpu
            energy = power * dur / p.p_ref
            worst = max(worst, power * dur / p.p_ref)
            for n, s0 in enumerate(t.starts):
                response = s0 + dur - t.arrival
                miss = not bool(response <= t.deadline + DEADLINE_TOL)
                late = max(0.0, response - t.deadline)
                rows["task"].append(j)
                rows["cls"].append(k)
                rows["start_no"].append(n)
                rows["start"].append(s0)
                rows["cost"].append(w.miss * miss + w.late * late + w.wait * (s0 - t.arrival) + w.energy * energy)
                rows["miss"].append(miss)
                rows["occ"].append(overlap_fraction(s0, dur, p.edges))
                rows["power"].append(power)
        # Leaving a task out saves at most its whole energy of tracking error; price it above
        # that and above any miss so the plan drops a task only when nothing fits [ours].
        latest = max(t.starts) + max(c.duration(t.length) for c in p.classes) - t.arrival
        overflow[j] = 2.0 * (w.miss + w.late * max(latest, span) + (w.track + w.energy) * worst + w.wait * span) + 1.0
    s = len(p.edges) - 1
    return _Options(task=np.asarray(rows["task"], np.int64), cls=np.asarray(rows["cls"], np.int64),
                    start_no=np.asarray(rows["start_no"], np.int64), start=np.asarray(rows["start"], float),
                    cost=np.asarray(rows["cost"], float), miss=np.asarray(rows["miss"], bool),
                    occ=np.asarray(rows["occ"], float).reshape(-1, s), power=np.asarray(rows["power"], float),
                    overflow=overflow)


@dataclass
class WindowPlan:
    """A solved window: per task its class (-1: left out) and chosen start."""

    status: str  #: "optimal", "limit" (a time or node limit was hit: best found), or scipy's failure name
    optimal: bool
    objective: float  #: exact objective of the plan (re-evaluated, not HiGHS's rounded value)
    solver_objective: float  #: HiGHS's objective value
    mip_gap: float  #: HiGHS's relative gap (0 when optimal)
    solve_s: float  #: wall time of build + solve, s
    cls: np.ndarray  #: int64 (N,), -1 where the task was left out
    start_no: np.ndarray  #: int64 (N,), index into the task's starts (-1 where left out)
    start: np.ndarray  #: float (N,) planned start time (nan where left out)
    power: np.ndarray  #: (S,) planned slot-average power, W
    misses: int  #: planned deadline misses (left-out tasks not counted)
    variables: int = 0
    constraints: int = 0
    solve_cpu_s: float = 0.0  #: CPU time of build + solve, s (other processes do not inflate it)
    nodes: int = 0  #: HiGHS branch-and-bound nodes explored (``mip_node_count``)


def evaluate_window(p: TrackingProblem, cls: Sequence[int] | np.ndarray,
                    start_no: Sequence[int] | np.ndarray) -> tuple[float, np.ndarray]:
    """Exact objective and slot power of a plan (``cls[j] = -1``: left out); ``inf`` objective
    if a class's slot-average CPU exceeds its spare capacity."""
    opt = _options(p)
    key = {(int(j), int(k), int(n)): i for i, (j, k, n) in enumerate(zip(opt.task, opt.cls, opt.start_no))}
    power = p.base_power.copy()
    cpu = np.zeros_like(p.spare_cpu)
    total = 0.0
    for j, (k, n) in enumerate(zip(cls, start_no)):
        if k < 0:
            total += opt.overflow[j]
            continue
        try:
            i = key[(j, int(k), int(n))]
        except KeyError:
            raise ValueError(f"plan: task {j} has no option (class {k}, start {n})") from None
        total += opt.cost[i]
        power += opt.power[i] * opt.occ[i]
        cpu[k] += p.tasks[j].cpu * opt.occ[i]
    if np.any(cpu > p.spare_cpu + 1e-9):
        return float("inf"), power
    excess = np.maximum(np.abs(power - p.target) - p.band, 0.0)
    total += p.weights.track * float((excess * np.diff(p.edges) * p.scored).sum()) / p.p_ref
    return float(total), power


def solve_window(p: TrackingProblem, time_limit: float | None = 10.0, mip_rel_gap: float = 0.0,
                 node_limit: int | None = None) -> WindowPlan:
    """Solve the hindsight tracking MILP of a window exactly (HiGHS), see the module docstring.

    ``time_limit`` (s, None: none) bounds the solve; if it is hit, the best plan found is
    returned with ``status = "limit"`` and ``optimal = False``. ``node_limit`` bounds
    the branch-and-bound nodes instead (same status): unlike a time limit it gives the same
    plan on any machine, for reproducible runs. ``mip_rel_gap`` 0 asks HiGHS to prove
    optimality (its default, 1e-4, would stop early).
    """
    t0, c0 = time.perf_counter(), time.process_time()
    opt = _options(p)
    n, x = len(p.tasks), len(opt.task)
    s = len(p.edges) - 1
    scored = np.flatnonzero(p.scored)
    n_e = len(scored)
    lens = np.diff(p.edges)
    # columns: options [0, x), overflow [x, x+n), tracking errors [x+n, x+n+n_e)
    c = np.concatenate([opt.cost, opt.overflow, p.weights.track * lens[scored] / p.p_ref])
    rows: list[np.ndarray] = []
    cols: list[np.ndarray] = []
    vals: list[np.ndarray] = []
    lb: list[np.ndarray | list[float]] = []  # bounds per block of rows (an array, or one row's)
    ub: list[np.ndarray | list[float]] = []
    r = 0
    # each task exactly once (an option or overflow)
    rows += [opt.task, np.arange(n)]
    cols += [np.arange(x), x + np.arange(n)]
    vals += [np.ones(x), np.ones(n)]
    lb.append(np.ones(n))
    ub.append(np.ones(n))
    r += n
    # class capacity per slot (only pairs some option touches)
    oi, ot = np.nonzero(opt.occ)
    cpu_of = np.asarray([t.cpu for t in p.tasks])[opt.task]
    pair = opt.cls[oi] * s + ot
    uniq, inv = np.unique(pair, return_inverse=True)
    rows.append(r + inv)
    cols.append(oi)
    vals.append(cpu_of[oi] * opt.occ[oi, ot])
    lb.append(np.full(len(uniq), -np.inf))
    ub.append(p.spare_cpu.ravel()[uniq] + 1e-9)
    r += len(uniq)
    # tracking: +/-(sum coef x) - e_t <= ... for each scored slot
    for sign in (1.0, -1.0):
        for q, t in enumerate(scored):
            on = np.flatnonzero(opt.occ[:, t] > 0)
            rows.append(np.full(len(on) + 1, r))
            cols.append(np.concatenate([on, [x + n + q]]))
            vals.append(np.concatenate([sign * opt.power[on] * opt.occ[on, t], [-1.0]]))
            lb.append([-np.inf])
            ub.append([sign * (p.target[t] - p.base_power[t]) + p.band[t]])
            r += 1
    a = coo_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                   shape=(r, x + n + n_e)).tocsr()
    integrality = np.concatenate([np.ones(x + n), np.zeros(n_e)])
    bounds = Bounds(np.zeros(x + n + n_e), np.concatenate([np.ones(x + n), np.full(n_e, np.inf)]))
    options = {"disp": False, "mip_rel_gap": mip_rel_gap}
    if time_limit is not None:
        if not time_limit > 0:
            raise ValueError(f"time_limit: expected > 0 s or None, got {time_limit}")
        options["time_limit"] = float(time_limit)
    if node_limit is not None:
        if not node_limit >= 1:
            raise ValueError(f"node_limit: expected >= 1 node or None, got {node_limit}")
        options["node_limit"] = int(node_limit)
    res = milp(c, integrality=integrality, bounds=bounds,
               constraints=LinearConstraint(a, np.concatenate(lb), np.concatenate(ub)), options=options)
    status = STATUS.get(res.status, "other")
    if res.x is None:
        raise RuntimeError(f"solve_window: HiGHS returned no plan ({status}: {res.message}); "
                           "raise node_limit or time_limit, or shrink the window")
    chosen = res.x[:x] > 0.5
    cls = np.full(n, -1, np.int64)
    start_no = np.full(n, -1, np.int64)
    start = np.full(n, np.nan)
    cls[opt.task[chosen]] = opt.cls[chosen]
    start_no[opt.task[chosen]] = opt.start_no[chosen]
    start[opt.task[chosen]] = opt.start[chosen]
    objective, power = evaluate_window(p, cls, start_no)
    return WindowPlan(status=status, optimal=res.status == 0, objective=objective, solver_objective=float(res.fun),
                      mip_gap=float(getattr(res, "mip_gap", 0.0) or 0.0), solve_s=time.perf_counter() - t0,
                      cls=cls, start_no=start_no, start=start, power=power,
                      misses=int(opt.miss[chosen].sum()), variables=x + n + n_e, constraints=r,
                      solve_cpu_s=time.process_time() - c0, nodes=int(getattr(res, "mip_node_count", 0) or 0))
