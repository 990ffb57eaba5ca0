"""A SimPy twin of the data-centre simulator, for cross-checks only.

Why it exists: :class:`ilets.simulator.cloud.Cloud` is fast because it is clever. It fixes a task's
start analytically the moment the task is assigned (FCFS without preemption makes that
possible) and keeps only a heap of start/finish events. A slip in that reasoning (a
head-of-line case, a tie between a finish and a start, a float tolerance) would bias every
result in the study without failing anything. This module implements the same model
(the book's *Model* chapter) a second time, independently and plainly, the way SimPy is normally
used:

* one process per task: it arrives, queues, runs and leaves;
* per server, a ``simpy.Resource(capacity=1)`` *admission* lock, held by a task from its
  turn in the queue until it has acquired its CPU. Requests are granted in FIFO order, so
  this gives the FCFS queue with head-of-line blocking (a task that does not fit keeps the
  lock and blocks those behind it, even when they would fit). SimPy's Container happens to
  serve its own ``get`` queue the same way (FIFO, stopping at the first request that does
  not fit), but the lock states the FCFS rule explicitly instead of resting on that
  implementation detail;
* per server, a ``simpy.Container`` of CPU: a task ``get``s its request (waiting until
  enough is free) and ``put``s it back when it finishes. Running tasks share the server
  without slowing each other, so execution is a plain ``timeout(length / mips)``;
* a per-server power meter, told of every CPU change, integrates
  ``P_idle + P_act * used / C`` exactly between changes.

Nothing is computed in advance: starts and finishes are whatever the discrete-event run
produces. Tests replay the same assignment on both simulators and require identical
per-task responses and energy; ``benchmarks/bench_simulator.py`` times both. The twin is
never used to produce results of the study.

Same-time ordering. The model frees CPU from finishes before starts at the same instant use
it. Here a ``put`` returns CPU at the finishing task's instant and any waiting ``get`` is
re-examined at that same instant, so a task held up only by a finish at ``t`` starts at
``t`` whichever of the two SimPy happens to process first; likewise for a task arriving
exactly at a finish. Only zero-length intervals depend on the processing order, and they
carry no energy.
"""

from __future__ import annotations

import heapq
from collections import deque

import numpy as np
import simpy

from ilets.simulator.cloud import CPU_EPS, Fleet
from ilets.workloads.workload import TaskTable

__all__ = ["simulate_twin", "earliest_finish_twin"]


class _CPU(simpy.Container):
    """A CPU container that compares amounts with the simulator's tolerance.

    Requests are trace floats (0.0006247, 0.01874, ...), so the level drifts by a few ulps
    as they are taken and returned. ``Cloud`` accepts a task when the requests fit within
    ``capacity + CPU_EPS``; a strict ``level >= amount`` would refuse a task that fits
    exactly and the two simulators would part ways.
    """

    def _do_get(self, event: simpy.resources.container.ContainerGet) -> bool | None:
        if self._level + CPU_EPS >= event.amount:
            self._level -= event.amount
            event.succeed()
            return True
        return None

    def _do_put(self, event: simpy.resources.container.ContainerPut) -> bool | None:
        # Only CPU that was taken is ever returned, so a put always fits (a strict check
        # could block a finishing task forever on a ulp of drift).
        self._level += event.amount
        event.succeed()
        return True


class _Server:
    """One server: admission lock, CPU container, power meter and queue bookkeeping."""

    def __init__(self, env: simpy.Environment, index: int, capacity: float, mips: float,
                 p_idle: float, p_act: float) -> None:
        self.env = env
        self.index = index
        self.capacity = capacity
        self.mips = mips
        self.p_idle = p_idle
        self.w_per_cpu = p_act / capacity
        self.admission = simpy.Resource(env, capacity=1)
        self.cpu = _CPU(env, capacity=capacity, init=capacity)
        # Meter: the server's own power, integrated between its CPU changes.
        self.energy = 0.0
        self._power = p_idle
        self._last = env.now
        # What the Earliest-Finish estimate reads: tasks assigned but not started, in queue
        # order, as (cpu, execution); started tasks as {task: (finish, cpu)}.
        self.waiting: deque[tuple[float, float]] = deque()
        self.running: dict[int, tuple[float, float]] = {}

    def meter(self) -> None:
        """Close the current constant-power interval; the CPU level has just changed."""
        now = self.env.now
        self.energy += self._power * (now - self._last)
        self._last = now
        self._power = self.p_idle + self.w_per_cpu * (self.capacity - self.cpu.level)

    def close(self, t_end: float) -> float:
        """Energy of this server from the start to ``t_end``, J."""
        return self.energy + self._power * (t_end - self._last)

    def estimate_start(self, cpu: float) -> float:
        """When a task of ``cpu`` queued now would start, by playing the queue forward.

        Walks the waiting tasks in FCFS order over a heap of running finishes, then the
        new task; each starts at the first instant (now or a finish) at which everything
        ahead has started and its CPU fits. Finishes at an instant are released before a
        start at that instant is tested.
        """
        now = self.env.now
        if not self.waiting and self.cpu.level + CPU_EPS >= cpu:
            return now  # nobody queued and it fits: the common case, no walk needed
        limit = self.capacity + CPU_EPS
        heap = list(self.running.values())
        heapq.heapify(heap)
        used = sum(c for _, c in heap)
        t = now
        for c, execution in (*self.waiting, (cpu, None)):
            while heap and heap[0][0] <= t:
                used -= heapq.heappop(heap)[1]
            while used + c > limit:  # wait for the next finish
                f, freed = heapq.heappop(heap)
                used -= freed
                t = f
                while heap and heap[0][0] <= t:
                    used -= heapq.heappop(heap)[1]
            if execution is None:
                return t
            heapq.heappush(heap, (t + execution, c))
            used += c
        raise AssertionError("unreachable")


def _task(env: simpy.Environment, server: _Server, j: int, cpu: float, execution: float,
          start: np.ndarray, finish: np.ndarray):
    """One task's life: queue for admission, take the CPU, run, give the CPU back."""
    with server.admission.request() as turn:
        yield turn  # FCFS: every task ahead has started
        yield server.cpu.get(cpu)  # head of the queue: wait for room (blocks those behind)
        server.meter()
        # Leaving the `with` releases the lock, letting the next task try.
    server.waiting.popleft()
    start[j] = env.now
    server.running[j] = (env.now + execution, cpu)
    yield env.timeout(execution)
    finish[j] = env.now
    del server.running[j]
    yield server.cpu.put(cpu)
    server.meter()


def _run(fleet: Fleet, tasks: TaskTable, choose, t0: float | None
         ) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """Run the SimPy model; ``choose(servers, j, cpu, length)`` picks each task's server."""
    n = len(tasks)
    t_begin = (float(tasks.arrival[0]) if n else 0.0) if t0 is None else float(t0)
    if n and tasks.arrival[0] < t_begin:
        raise ValueError(f"first arrival {tasks.arrival[0]} is before t0 {t_begin}")
    env = simpy.Environment(initial_time=t_begin)
    servers = [_Server(env, i, float(fleet.capacity[i]), float(fleet.mips[i]), float(fleet.p_idle[i]),
                       float(fleet.p_act[i])) for i in range(len(fleet))]
    start = np.full(n, np.nan)
    finish = np.full(n, np.nan)
    assignment = np.full(n, -1, dtype=np.int64)
    arrival, cpu, length = (a.tolist() for a in (tasks.arrival, tasks.cpu, tasks.length))

    def source():
        """Releases tasks at their arrival times, in table order."""
        for j in range(n):
            delay = arrival[j] - env.now
            if delay > 0:
                yield env.timeout(delay)
            s = choose(servers, j, cpu[j], length[j])
            server = servers[s]
            if cpu[j] > server.capacity + CPU_EPS:
                raise ValueError(f"task {j}: CPU request {cpu[j]} exceeds server {s}'s capacity {server.capacity}")
            assignment[j] = s
            execution = length[j] / fleet.mips[s]  # same expression as Cloud, same float
            server.waiting.append((cpu[j], execution))
            env.process(_task(env, server, j, cpu[j], execution, start, finish))

    env.process(source())
    env.run()
    t_end = max(env.now, t_begin)
    energy = sum(server.close(t_end) for server in servers)
    return assignment, start, finish, float(energy)


def simulate_twin(fleet: Fleet, tasks: TaskTable, assignment: np.ndarray, t0: float | None = None
                  ) -> tuple[np.ndarray, np.ndarray, float]:
    """Replay a fixed assignment on the SimPy twin.

    Args:
        fleet: the servers.
        tasks: the tasks, sorted by arrival.
        assignment: server index of each task.
        t0: when energy starts to count; default the first arrival, as
            :func:`ilets.agents.policies.schedule` starts its :class:`~ilets.simulator.cloud.Cloud`.

    Returns:
        ``(start, finish, energy_j)``: per-task start and finish times and the total energy
        from ``t0`` to the last finish, J.

    Raises:
        ValueError: a task is assigned to a server that can never hold its request, or the
            assignment has the wrong length.
    """
    assignment = np.asarray(assignment)
    if len(assignment) != len(tasks):
        raise ValueError(f"assignment has {len(assignment)} entries for {len(tasks)} tasks")
    fixed = assignment.astype(np.int64).tolist()
    _, start, finish, energy = _run(fleet, tasks, lambda servers, j, cpu, length: fixed[j], t0)
    return start, finish, energy


def earliest_finish_twin(fleet: Fleet, tasks: TaskTable, t0: float | None = None
                         ) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """Earliest-Finish decided by the twin itself, from its own state, with the run.

    Each task goes to the feasible server where it would finish first (start estimated by
    :meth:`_Server.estimate_start`, plus ``length / mips``), ties to the lowest index. The
    start cannot precede the arrival, so ``now + length / mips`` bounds each server's
    finish from below; servers are tried fastest first and the search stops once that
    bound exceeds the best estimate, which keeps the twin's policy from dominating the
    benchmark without changing its choice.

    Returns:
        ``(assignment, start, finish, energy_j)``; ``t0`` as in :func:`simulate_twin`.
    """
    mips = np.asarray(fleet.mips, float)
    # Fastest first, lowest index among equals: the lower bound's order at every instant.
    order = np.lexsort((np.arange(len(mips)), -mips)).tolist()
    capacity = fleet.capacity.tolist()
    mips_l = mips.tolist()

    def choose(servers: list[_Server], j: int, cpu: float, length: float) -> int:
        now = servers[0].env.now
        best_s, best_f = -1, float("inf")
        for s in order:
            if capacity[s] + CPU_EPS < cpu:
                continue
            execution = length / mips_l[s]
            if now + execution > best_f:
                break
            f = servers[s].estimate_start(cpu) + execution
            if f < best_f or (f == best_f and s < best_s):
                best_s, best_f = s, f
        if best_s < 0:
            raise ValueError(f"task {j}: CPU request {cpu} fits no server")
        return best_s

    return _run(fleet, tasks, choose, t0)
