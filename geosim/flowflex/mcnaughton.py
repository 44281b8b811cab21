"""McNaughton's wrap-around rule and Stage 3 shape-shifting (004 §2.3).

A malleable plan gives each job a (possibly fractional) slot rate ``ρ_i ≤ δ_i`` over a time
interval ``[t0, t1)`` of length ``L``, with ``Σ ρ_i ≤ P``. McNaughton's rule [10] turns it into
integer slot counts: lay the jobs' work ``ρ_i L`` end to end along slot 1, then slot 2, and so
on, each slot being a strip of length ``L`` (the wrap-around). At any time a job holds
``⌊ρ_i⌋`` or ``⌈ρ_i⌉ ≤ δ_i`` slots, the total is at most ``⌈Σ ρ_i⌉ ≤ P``, and every job gets
exactly its work. Counting the strips job ``i`` covers at offset ``τ`` gives the number of
integers ``p`` with ``c_i ≤ p + τ/L < c_i + ρ_i`` (``c_i`` the cumulative rate before ``i``),
``⌈c_i + ρ_i − τ/L⌉ − ⌈c_i − τ/L⌉``; it is constant between the wrap points ``c_i mod 1``.

Stage 3 of 004 shape-shifts the schedule of pseudo-job ``k`` (a histogram of ``σ(J)`` slots
over pieces ``J``) into one for its member jobs: piece ``J`` carries the work of a
``|J| σ(J) / r_k`` sub-interval of ``I_k``, i.e. job ``i`` runs at rate ``δ_i σ(J) / r_k`` in
``J``, and McNaughton's rule makes that integral. (The member jobs run throughout ``I_k`` and
are independent, so the order of the sub-intervals does not matter.)

Functions:

- :func:`wrap_around`: McNaughton's rule on one interval.
- :func:`shape_shift`: Stage 3 for one piece of a pseudo-job's schedule.
- :func:`integerize`: a whole malleable plan (rate pieces per job) to integer slots.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence

import numpy as np
from numpy.typing import ArrayLike

from geosim.flowflex.model import Piece, PseudoJob, merge_pieces

#: Relative tolerance on rates and wrap points.
TOL = 1e-9


def wrap_around(rates: ArrayLike, length: float) -> list[tuple[float, float, np.ndarray]]:
    """McNaughton's wrap-around rule on one interval.

    Args:
        rates: Each job's slot rate ``ρ_i >= 0`` over the interval.
        length: The interval's length ``L > 0``.

    Returns:
        Sub-intervals ``(offset_start, offset_end, counts)`` covering ``[0, L)``, offsets from
        the interval's start; ``counts[i]`` is job ``i``'s integer number of slots.
    """
    r = np.asarray(rates, dtype=float).ravel()
    if length <= 0:
        raise ValueError(f"length must be > 0, got {length}")
    if np.any(r < -TOL):
        raise ValueError("rates must be >= 0")
    r = np.maximum(r, 0.0)
    ints = np.rint(r)
    r = np.where(np.abs(r - ints) <= TOL * np.maximum(1.0, r), ints, r)
    start = np.concatenate([[0.0], np.cumsum(r)[:-1]])
    end = start + r
    # Wrap points (fractions of the strip), snapped to 0 within the tolerance.
    frac = np.concatenate([start, end]) % 1.0
    frac[(frac <= TOL) | (frac >= 1.0 - TOL)] = 0.0
    points = np.unique(np.concatenate([frac, [0.0, 1.0]]))
    keep = np.concatenate([[True], np.diff(points) > TOL])
    points = points[keep]
    points[-1] = 1.0
    mid = 0.5 * (points[:-1] + points[1:])
    counts = np.ceil(end[None, :] - mid[:, None]) - np.ceil(start[None, :] - mid[:, None])
    counts = counts.astype(int)
    return [(float(a * length), float(b * length), counts[k])
            for k, (a, b) in enumerate(zip(points[:-1], points[1:], strict=True))]


def shape_shift(pseudo_job: PseudoJob, t0: float, t1: float,
                slots: float) -> dict[int, list[tuple[float, float, int]]]:
    """Stage 3 for one piece of a pseudo-job's schedule.

    Args:
        pseudo_job: The pseudo-job.
        t0: Start of the piece.
        t1: End of the piece.
        slots: ``σ(J)``, the pseudo-job's integer number of slots in the piece
            (``<= r_k``).

    Returns:
        Per member job index, integer ``(t_start, t_end, slots)`` pieces.
    """
    cap = pseudo_job.cap
    sigma = float(slots)
    if sigma > cap * (1 + TOL) or sigma < 0:
        raise ValueError(f"piece uses {sigma} slots, the pseudo-job's cap is {cap}")
    jobs = [i for i, _ in pseudo_job.members]
    if abs(sigma - cap) <= TOL * cap:
        return {i: [(t0, t1, c)] for i, c in pseudo_job.members}
    rates = [c * sigma / cap for _, c in pseudo_job.members]
    out: dict[int, list[tuple[float, float, int]]] = {i: [] for i in jobs}
    for a, b, counts in _absolute(wrap_around(rates, t1 - t0), t0, t1):
        for i, c in zip(jobs, counts, strict=True):
            if c > 0:
                out[i].append((a, b, int(c)))
    return out


def _absolute(parts: list[tuple[float, float, np.ndarray]], t0: float,
              t1: float) -> list[tuple[float, float, np.ndarray]]:
    """Offsets to times, the last sub-interval ending exactly at ``t1``."""
    out = [(t0 + a, t0 + b, c) for a, b, c in parts]
    out[-1] = (out[-1][0], t1, out[-1][2])
    return out


def integerize(rate_pieces: Mapping[Hashable, Sequence[Piece]], caps: Mapping[Hashable, int],
               slots: int) -> dict[Hashable, list[tuple[float, float, int]]]:
    """Turn a malleable plan into integer slot assignments with McNaughton's rule.

    Args:
        rate_pieces: Per job, ``(t_start, t_end, rate)`` pieces (non-overlapping per job).
        caps: Per job, its cap ``δ_i``.
        slots: ``P``.

    Returns:
        Per job, integer ``(t_start, t_end, slots)`` pieces in time order; in every interval
        each job holds at most ``⌈rate⌉ <= δ_i`` slots and the total is at most ``P``.

    Raises:
        ValueError: If a rate exceeds its cap or the total rate exceeds ``P`` somewhere.
    """
    keys = list(rate_pieces)
    times = sorted({t for k in keys for p in rate_pieces[k] for t in p[:2]})
    if len(times) < 2:
        return {k: [] for k in keys}
    grid = np.asarray(times)
    rates = np.zeros((len(keys), grid.size - 1))
    for row, k in enumerate(keys):
        for t0, t1, rho in rate_pieces[k]:
            if t1 <= t0 or rho == 0:
                continue
            if rho > caps[k] * (1 + TOL) or rho < 0:
                raise ValueError(f"job {k} has rate {rho} outside [0, {caps[k]}]")
            a = np.searchsorted(grid, t0)
            b = np.searchsorted(grid, t1)
            rates[row, a:b] += rho
    totals = rates.sum(axis=0)
    if np.any(totals > slots * (1 + TOL)):
        raise ValueError(f"total rate {totals.max()} exceeds {slots} slots")
    out: dict[Hashable, list[tuple[float, float, int]]] = {k: [] for k in keys}
    for col in range(grid.size - 1):
        active = np.flatnonzero(rates[:, col] > 0)
        if active.size == 0:
            continue
        t0, t1 = float(grid[col]), float(grid[col + 1])
        for a, b, counts in _absolute(wrap_around(rates[active, col], t1 - t0), t0, t1):
            for row, c in zip(active, counts, strict=True):
                if c > 0:
                    out[keys[row]].append((a, b, int(c)))
    return {k: [(a, b, int(c)) for a, b, c in merge_pieces(v)] for k, v in out.items()}


def slot_usage(pieces: Mapping[Hashable, Sequence[Piece]]) -> list[tuple[float, float, float]]:
    """Total slots in use over time: ``(t_start, t_end, total)`` between consecutive events."""
    events: dict[float, float] = {}
    for plist in pieces.values():
        for t0, t1, s in plist:
            if t1 > t0 and s:
                events[t0] = events.get(t0, 0.0) + s
                events[t1] = events.get(t1, 0.0) - s
    out = []
    level = 0.0
    ts = sorted(events)
    for a, b in zip(ts[:-1], ts[1:], strict=True):
        level += events[a]
        out.append((a, b, level))
    return out

