"""The MPC's model of the grid-command expert ladder: the receding-horizon fluid LP.

**MPC LP** (:func:`solve_fluid`): the receding-horizon controller's model over the next ``H``
slots of equal length ``dt``. Work is fluid: ``demand[h, d]`` CPU·MI arrives in slot ``h`` and
can start up to ``d`` slots later and still meet its deadline (its *cohort*). Continuous
``y[h, d, r, k]``: work of cohort ``(h, d)`` started ``r`` slots after its arrival on class ``k``
(``r > d`` is late, priced as misses); ``z[h, d]``: work pushed past the horizon. Work started
in a slot spreads over the following slots by a kernel (a start uniform in the slot and
the class's mean duration, :func:`spread_kernel`). Only the first slot's admissions are
applied; the controller re-solves every slot.

Units, weights and server classes are the hindsight MILP's (:mod:`ilets.gridcommand.milp`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp
from scipy.sparse import coo_matrix

from ilets.gridcommand.milp import STATUS, ServerClass, Weights, overlap_fraction


def spread_kernel(duration: float, dt: float, n: int) -> np.ndarray:
    """Fraction of a run's CPU-seconds falling in slots ``0..n-1`` after its start slot.

    The start is uniform in slot 0 and the run lasts ``duration`` (the class's mean) [ours];
    averaged over 64 start points, normalised so that the fractions of a run inside the
    ``n`` slots sum to at most 1 (the rest falls past them).
    """
    if not (duration > 0 and dt > 0):
        raise ValueError(f"spread_kernel: duration and dt must be > 0, got {duration}, {dt}")
    edges = np.arange(n + 1) * dt
    starts = (np.arange(64) + 0.5) / 64 * dt
    return np.mean([overlap_fraction(s0, duration, edges) * dt / duration for s0 in starts], axis=0)


@dataclass(frozen=True)
class FluidProblem:
    """Inputs of :func:`solve_fluid` (``H`` slots of ``dt`` s, ``K`` classes, cohorts ``d = 0..D``)."""

    dt: float
    demand: np.ndarray  #: (H, D+1) work (CPU·MI) arriving in slot h that may start up to d slots later
    classes: tuple[ServerClass, ...]
    mean_length: float  #: MI, for each class's mean duration (the spread kernel)
    work_per_task: float  #: CPU·MI of an average task, to count misses and waits in tasks
    spare_cpu: np.ndarray  #: (K, H)
    base_power: np.ndarray  #: (H,) W
    target: np.ndarray  #: (H,) W
    scored: np.ndarray  #: (H,) bool
    band: np.ndarray  #: (H,) W
    p_ref: float
    weights: Weights = field(default_factory=Weights)
    late_slots: int = 2  #: starts allowed after a cohort's last on-time slot (priced as misses)

    def __post_init__(self) -> None:
        demand = np.asarray(self.demand, float)
        if demand.ndim != 2 or demand.shape[0] < 1 or not np.all(np.isfinite(demand)) or np.any(demand < 0):
            raise ValueError("FluidProblem.demand: expected a finite (H, D+1) array >= 0")
        object.__setattr__(self, "demand", demand)
        h, k = demand.shape[0], len(self.classes)
        if k < 1:
            raise ValueError("FluidProblem.classes: expected at least one server class")
        for name in ("dt", "mean_length", "work_per_task", "p_ref"):
            v = getattr(self, name)
            if not (np.isfinite(v) and v > 0):
                raise ValueError(f"FluidProblem.{name}: expected a finite number > 0, got {v}")
        for name, shape in (("spare_cpu", (k, h)), ("base_power", (h,)), ("target", (h,)), ("band", (h,))):
            a = np.broadcast_to(np.asarray(getattr(self, name), float), shape) if name == "band" else \
                np.asarray(getattr(self, name), float)
            if a.shape != shape or not np.all(np.isfinite(a)):
                raise ValueError(f"FluidProblem.{name}: expected finite values of shape {shape}, got {a.shape}")
            object.__setattr__(self, name, a.copy())
        object.__setattr__(self, "spare_cpu", np.maximum(self.spare_cpu, 0.0))
        scored = np.asarray(self.scored, bool)
        if scored.shape != (h,):
            raise ValueError(f"FluidProblem.scored: expected shape {(h,)}, got {scored.shape}")
        object.__setattr__(self, "scored", scored)
        if self.late_slots < 0:
            raise ValueError(f"FluidProblem.late_slots: expected >= 0, got {self.late_slots}")


@dataclass
class FluidPlan:
    """The first slot's decisions of an MPC solve (what the controller applies)."""

    status: str
    admit: np.ndarray  #: (K,) work (CPU·MI) to start in slot 0 on each class
    demand_now: float  #: work of slot 0 (arrivals and backlog)
    power: np.ndarray  #: (H,) planned slot-average power, W
    objective: float
    solve_s: float  #: wall time of build + solve, s
    solve_cpu_s: float = 0.0  #: CPU time of build + solve, s

    @property
    def admit_share(self) -> float:
        """Fraction of slot 0's work admitted now (1 when nothing is pending)."""
        return float(self.admit.sum() / self.demand_now) if self.demand_now > 0 else 1.0


def solve_fluid(p: FluidProblem, time_limit: float | None = 5.0) -> FluidPlan:
    """Solve the MPC's fluid LP (see the module docstring) and return its first-slot decisions."""
    t0, c0 = time.perf_counter(), time.process_time()
    h_n, d_n = p.demand.shape
    k_n = len(p.classes)
    w = p.weights
    r_max = d_n - 1 + p.late_slots
    kern = np.stack([spread_kernel(c.duration(p.mean_length), p.dt, h_n) for c in p.classes])  # (K, H)
    # enumerate y columns (h, d, r, k) with h + r < H and demand > 0
    cols = [(h, d, r, k) for h in range(h_n) for d in range(d_n) if p.demand[h, d] > 0
            for r in range(r_max + 1) if h + r < h_n for k in range(k_n)]
    zs = [(h, d) for h in range(h_n) for d in range(d_n) if p.demand[h, d] > 0]
    ny, nz = len(cols), len(zs)
    scored = np.flatnonzero(p.scored)
    ne = len(scored)
    y = np.asarray(cols, np.int64).reshape(-1, 4)
    per_task = 1.0 / p.work_per_task
    cost = np.zeros(ny + nz + ne)
    if ny:
        hh, dd, rr, kk = y.T
        w_k = np.array([c.w_per_cpu for c in p.classes])
        mips = np.array([c.mips for c in p.classes])
        energy = w_k[kk] / mips[kk] / p.p_ref  # fleet-seconds per CPU·MI
        cost[:ny] = per_task * (w.miss * (rr > dd) + w.wait * rr * p.dt) + w.energy * energy
    for i, (h, d) in enumerate(zs):
        # pushed past the horizon: it waits at least until then, and misses if that is late
        wait = (h_n - h) * p.dt
        cost[ny + i] = per_task * (w.miss * (h_n - h > d) + w.wait * wait) + 1e-9
    cost[ny + nz:] = w.track * p.dt / p.p_ref
    rows: list[int] = []
    cc: list[int] = []
    vals: list[float] = []
    lb: list[np.ndarray | list[float]] = []  # bounds per block of rows (an array, or one row's)
    ub: list[np.ndarray | list[float]] = []
    r = 0
    # conservation: each cohort's work is started once (in the horizon or past it)
    zi = {hd: i for i, hd in enumerate(zs)}
    for i, (h, d, _, _) in enumerate(cols):
        rows.append(zi[(h, d)])
        cc.append(i)
        vals.append(1.0)
    for i in range(nz):
        rows.append(i)
        cc.append(ny + i)
        vals.append(1.0)
    dem = np.array([p.demand[h, d] for h, d in zs])
    lb.append(dem)
    ub.append(dem)
    r += nz
    # CPU-s per class per slot, and power per slot, as linear maps of y
    cpu_rows: dict[tuple[int, int], list[tuple[int, float]]] = {}
    pow_rows: dict[int, list[tuple[int, float]]] = {}
    for i, (h, d, rr_, k) in enumerate(cols):
        c = p.classes[k]
        s0 = h + rr_
        for q in range(h_n - s0):
            f = kern[k, q]
            if f <= 0:
                continue
            t = s0 + q
            cpu_s = f / c.mips / p.dt  # slot-average CPU per CPU·MI started
            cpu_rows.setdefault((k, t), []).append((i, cpu_s))
            pow_rows.setdefault(t, []).append((i, cpu_s * c.w_per_cpu))
    for (k, t), entries in cpu_rows.items():
        for i, v in entries:
            rows.append(r)
            cc.append(i)
            vals.append(v)
        lb.append([-np.inf])
        ub.append([p.spare_cpu[k, t]])
        r += 1
    for sign in (1.0, -1.0):
        for q, slot in enumerate(scored):
            for i, v in pow_rows.get(int(slot), []):
                rows.append(r)
                cc.append(i)
                vals.append(sign * v)
            rows.append(r)
            cc.append(ny + nz + q)
            vals.append(-1.0)
            lb.append([-np.inf])
            ub.append([sign * (p.target[slot] - p.base_power[slot]) + p.band[slot]])
            r += 1
    n_var = ny + nz + ne
    options: dict[str, bool | float] = {"disp": False}
    if time_limit is not None:
        options["time_limit"] = float(time_limit)
    if r == 0 or n_var == 0:
        return FluidPlan("optimal", np.zeros(k_n), 0.0, p.base_power.copy(), 0.0, time.perf_counter() - t0,
                         time.process_time() - c0)
    a = coo_matrix((np.asarray(vals, float), (np.asarray(rows), np.asarray(cc))), shape=(r, n_var)).tocsr()
    res = milp(cost, integrality=np.zeros(n_var), bounds=Bounds(np.zeros(n_var), np.full(n_var, np.inf)),
               constraints=LinearConstraint(a, np.concatenate([np.ravel(v) for v in lb]),
                                            np.concatenate([np.ravel(v) for v in ub])), options=options)
    status = STATUS.get(res.status, "other")
    if res.x is None:
        raise RuntimeError(f"solve_fluid: HiGHS returned no solution ({status}: {res.message})")
    sol = res.x
    admit = np.zeros(k_n)
    power = p.base_power.copy()
    for i, (h, d, rr_, k) in enumerate(cols):
        if sol[i] <= 0:
            continue
        if h == 0 and rr_ == 0:
            admit[k] += sol[i]
    for t, entries in pow_rows.items():
        power[t] += sum(sol[i] * v for i, v in entries)
    return FluidPlan(status=status, admit=admit, demand_now=float(p.demand[0].sum()), power=power,
                     objective=float(res.fun), solve_s=time.perf_counter() - t0, solve_cpu_s=time.process_time() - c0)
