"""Stochastic processes of the world, vectorised over entities.

Every process draws from its own random stream, and the values an entity sees depend
only on the seed and the entity, never on how the simulation groups its steps. That is
what makes runs of different schedulers see the same world (common random numbers) and
lets idle stretches be skipped in one jump without changing any realisation.

- :class:`AlternatingRenewal`: entities alternate between an "on" and an "off" phase with
  random lengths and a random level per phase (slot availability, 002 §6; cluster outages).
- :class:`PeriodicNormal`: a level redrawn every period from a positive-truncated normal
  (link bandwidth and VM power, 003 §6.1).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

#: Draws for one block: (rng, n_entities, block_len) -> array of shape (n_entities, block_len).
BlockDraw = Callable[[np.random.Generator, int, int], np.ndarray]


class _BlockSequence:
    """Per-entity i.i.d. sequences, read by per-entity counters, drawn in blocks.

    Block ``b`` holds items ``b*K .. b*K+K-1`` of every entity and is always the ``b``-th
    draw from the stream, so an entity's ``k``-th item is fixed by the seed alone.
    Several sequences read with the same counters (a phase's length and its level) share
    one instance: their blocks are drawn one sequence after the other, and one lookup
    serves them all.
    """

    def __init__(self, rng: np.random.Generator, n: int, draws: tuple[BlockDraw, ...],
                 block_len: int = 64):
        self._rng, self._n, self._draws, self._k = rng, n, draws, block_len
        self._blocks: list[dict[int, np.ndarray]] = [{} for _ in draws]
        self._next_block = 0

    def take(self, entities: np.ndarray, counters: np.ndarray) -> list[np.ndarray]:
        """Return item ``counters[i]`` of entity ``entities[i]`` of every sequence."""
        if counters.size == 0:
            return [np.empty(0) for _ in self._draws]
        block = counters // self._k
        first, last = int(block.min()), int(block.max())
        if self._next_block <= last:
            for draw, blocks in zip(self._draws, self._blocks, strict=True):
                for b in range(self._next_block, last + 1):
                    blocks[b] = draw(self._rng, self._n, self._k)
            self._next_block = last + 1
        if first == last:
            col = counters - first * self._k
            return [blocks[first][entities, col] for blocks in self._blocks]
        out = [np.empty(len(entities)) for _ in self._draws]
        for b in range(first, last + 1):
            sel = block == b
            for o, blocks in zip(out, self._blocks, strict=True):
                o[sel] = blocks[b][entities[sel], counters[sel] - b * self._k]
        return out

    def forget_before(self, min_counter: int) -> None:
        """Free blocks that no entity will read again."""
        for blocks in self._blocks:
            for b in [b for b in blocks if (b + 1) * self._k <= min_counter]:
                del blocks[b]


class AlternatingRenewal:
    """Entities alternating between an "on" phase and an "off" phase.

    Each phase has a random length and a random level (e.g. a speed factor) drawn when
    it starts. Lengths and levels are i.i.d. per phase kind.

    Args:
        n: Number of entities.
        on_length: Block draw of "on" phase lengths.
        off_length: Block draw of "off" phase lengths.
        on_level: Block draw of "on" levels.
        off_level: Block draw of "off" levels.
        rng: The process's own random stream.

    Every entity starts a fresh "on" phase at time 0.
    """

    def __init__(self, n: int, on_length: BlockDraw, off_length: BlockDraw,
                 on_level: BlockDraw, off_level: BlockDraw, rng: np.random.Generator):
        self.n = n
        # Per kind, lengths and levels; a length block is drawn just before its level block.
        self._seq = (_BlockSequence(rng, n, (on_length, on_level)),
                     _BlockSequence(rng, n, (off_length, off_level)))
        self.count = np.zeros((2, n), dtype=np.int64)   # phases started, per kind
        self.on = np.ones(n, dtype=bool)
        self._calls = 0
        self.level = np.empty(n)
        self.next_change = np.zeros(n)
        self._start_phase(np.arange(n), np.zeros(n))

    def _start_phase(self, idx: np.ndarray, at: np.ndarray) -> None:
        for kind in (0, 1):
            mask = self.on[idx] == (kind == 0)
            if not mask.any():
                continue
            sel = idx[mask]
            c = self.count[kind, sel]
            length, level = self._seq[kind].take(sel, c)
            self.next_change[sel] = at[mask] + length
            self.level[sel] = level
            self.count[kind, sel] = c + 1

    def advance(self, t_end: float, t_start: float | None = None) -> np.ndarray | None:
        """Move every entity to time ``t_end``.

        Args:
            t_end: The new time.
            t_start: If given, also return each entity's time-average level over
                ``[t_start, t_end]`` (exact integral of the piecewise-constant level).

        Returns:
            The time-average levels, or None when ``t_start`` is None.
        """
        acc = None
        seg = None
        if t_start is not None:
            acc = np.zeros(self.n)
            seg = np.full(self.n, t_start)
        idx = np.flatnonzero(self.next_change <= t_end)
        while idx.size:
            at = self.next_change[idx]
            if acc is not None:
                acc[idx] += self.level[idx] * (at - seg[idx])
                seg[idx] = at
            self.on[idx] = ~self.on[idx]
            self._start_phase(idx, at)
            # Only an entity that just changed phase can change again before t_end.
            idx = idx[self.next_change[idx] <= t_end]
        self._calls += 1
        if self._calls % 64 == 0:
            for kind in (0, 1):
                lo = int(self.count[kind].min(initial=0))
                self._seq[kind].forget_before(lo)
        if acc is None:
            return None
        acc += self.level * (t_end - seg)
        return acc / max(t_end - t_start, 1e-300)


def gamma_draw(shape: float, scale: float) -> BlockDraw:
    """Block draw of Gamma(shape, scale) lengths."""
    return lambda rng, n, k: rng.gamma(shape, scale, size=(n, k))


def uniform_draw(lo: float, hi: float, factor: float = 1.0) -> BlockDraw:
    """Block draw of U[lo, hi] levels multiplied by ``factor``."""
    return lambda rng, n, k: rng.uniform(lo, hi, size=(n, k)) * factor


def geometric_trials_draw(p: np.ndarray, interval: float) -> BlockDraw:
    """Block draw of waiting times until the first success of Bernoulli(p) trials.

    Entity i makes one trial every ``interval`` seconds with success probability
    ``p[i]``; the waiting time is ``interval`` × Geometric(p) (infinite when p is 0).
    """
    p = np.asarray(p, dtype=float)

    def draw(rng: np.random.Generator, n: int, k: int) -> np.ndarray:
        u = rng.random(size=(n, k))
        with np.errstate(divide="ignore", invalid="ignore"):
            trials = np.ceil(np.log1p(-u) / np.log1p(-p)[:, None])
        trials = np.where(p[:, None] <= 0, np.inf, np.maximum(trials, 1))
        trials = np.where(p[:, None] >= 1, 1, trials)
        return trials * interval

    return draw


def length_draw(kind: str, shape: float, scale: float) -> BlockDraw:
    """Block draw of phase lengths.

    ``gamma`` (shape, scale), ``exponential`` (mean ``scale``) or ``deterministic``
    (always ``scale``).
    """
    if kind == "gamma":
        return gamma_draw(shape, scale)
    if kind == "exponential":
        return lambda rng, n, k: rng.exponential(scale, size=(n, k))
    if kind == "deterministic":
        return constant_draw(scale)
    raise ValueError(f"unknown length distribution {kind!r}")


def constant_draw(value: float) -> BlockDraw:
    """Block draw of a constant level."""
    return lambda rng, n, k: np.full((n, k), value)


def truncated_normal(rng: np.random.Generator, mean: np.ndarray, sd: np.ndarray,
                     floor_fraction: float = 1e-3) -> np.ndarray:
    """Draw N(mean, sd) per entity, truncated to values above ``floor_fraction`` × mean.

    Draws outside the support are redrawn (a fixed, seed-determined sequence), so the
    result follows the truncated normal exactly.
    """
    out = rng.normal(mean, sd)
    bad = out <= floor_fraction * mean
    while bad.any():
        out[bad] = rng.normal(mean[bad], sd[bad])
        bad = out <= floor_fraction * mean
    return out


class PeriodicNormal:
    """A level per entity, redrawn every ``period`` from a positive-truncated normal.

    Args:
        mean: Mean level per entity.
        rsd: Relative standard deviation per entity (sd = rsd × mean).
        period: Redraw period (s); 0 means drawn once and kept.
        rng: The process's own random stream.
    """

    def __init__(self, mean: np.ndarray, rsd: np.ndarray, period: float,
                 rng: np.random.Generator):
        self.mean = np.asarray(mean, dtype=float)
        self.sd = self.mean * np.asarray(rsd, dtype=float)
        self.period = period
        self._rng = rng
        self.epoch = 0
        self.level = truncated_normal(rng, self.mean, self.sd)

    def advance(self, t: float) -> bool:
        """Bring the level to time ``t``; return whether it changed.

        Every skipped period is still drawn, so the level at any time is fixed by the seed.
        """
        if self.period <= 0:
            return False
        epoch = int(t // self.period)
        if epoch <= self.epoch:
            return False
        while self.epoch < epoch:
            self.level = truncated_normal(self._rng, self.mean, self.sd)
            self.epoch += 1
        return True
