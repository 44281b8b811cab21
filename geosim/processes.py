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

import math
from collections.abc import Callable

import numba
import numpy as np

from geosim.jit import njit, prange
from geosim.keyed import gamma, normal_above, stream_key, uniform
from geosim.threads import part_bounds, wide

#: Draws for one block: (rng, n_entities, block_len) -> array of shape (n_entities, block_len).
BlockDraw = Callable[[np.random.Generator, int, int], np.ndarray]
BLOCK_LEN = 64      #: Items per block of an :class:`AlternatingRenewal`'s draws.


class _BlockSequence:
    """Per-entity i.i.d. sequences, read by per-entity counters, drawn in blocks.

    Block ``b`` holds items ``b*K .. b*K+K-1`` of every entity and is always the ``b``-th
    draw from the stream, so an entity's ``k``-th item is fixed by the seed alone.
    Several sequences read with the same counters (a phase's length and its level) share
    one instance: their blocks are drawn one sequence after the other, and one lookup
    serves them all. Blocks live in a ring, ``ring[b % width, entity, item, sequence]``
    (the sequences' items side by side, so one lookup touches one place), which widens
    when entities' counters drift further apart than it holds. The block length and the
    ring's width are powers of two, so that the compiled reader finds an item by shifts
    and masks: a division per phase change was most of its cost.
    """

    def __init__(self, rng: np.random.Generator, n: int, draws: tuple[BlockDraw, ...],
                 block_len: int = BLOCK_LEN):
        if block_len & (block_len - 1):
            raise ValueError(f"block_len must be a power of two, not {block_len}")
        self._rng, self._n, self._draws, self.k = rng, n, draws, block_len
        self.width = 2
        self.ring = np.empty((self.width, n, block_len, len(draws)))
        self.next_block = 0

    def ensure(self, last: int, low: int) -> None:
        """Draw every block up to ``last``; blocks below ``low`` are no longer needed."""
        if last < self.next_block:
            return
        if last - low + 1 > self.width:
            self._widen(last - low + 1, low)
        for i, draw in enumerate(self._draws):
            for b in range(self.next_block, last + 1):
                self.ring[b % self.width, :, :, i] = draw(self._rng, self._n, self.k)
        self.next_block = last + 1

    def _widen(self, need: int, low: int) -> None:
        """Widen the ring to hold ``need`` blocks, keeping the blocks from ``low`` on.

        The ring grows where it lies (``ndarray.resize``: the allocator extends it, so its
        pages are kept, not copied to new ones; nothing holds a view of it). A kept block
        moves only if its slot changes: block ``b`` sits at ``b % old``, and when
        ``b % width < old`` that is the same slot, so a move only ever goes to the new
        part and never overwrites a block still to move.
        """
        old, width = self.width, 2 * self.width
        while width < need:
            width *= 2
        self.ring.resize((width,) + self.ring.shape[1:], refcheck=False)
        for b in range(max(low, self.next_block - old), self.next_block):
            if b % width != b % old:
                self.ring[b % width] = self.ring[b % old]
        self.width = width

    def take(self, entities: np.ndarray, counters: np.ndarray, low: int) -> np.ndarray:
        """Return item ``counters[i]`` of entity ``entities[i]`` of every sequence.

        Args:
            entities: Entity ids.
            counters: The item each reads.
            low: The lowest counter any entity will read from now on.

        Returns:
            Shape ``(sequences, len(entities))``, each row contiguous.
        """
        if counters.size == 0:
            return np.empty((len(self._draws), 0))
        block = counters // self.k
        self.ensure(int(block.max()), low // self.k)
        return np.ascontiguousarray(
            self.ring[block % self.width, entities, counters - block * self.k].T)


#: Entities per block of the scan for phase changes due (:func:`_due`).
SCAN_BLOCK = 64


def _block_minima(next_change: np.ndarray) -> np.ndarray:
    """``soon`` of :func:`_due`: the earliest next change, then each block's earliest."""
    if next_change.size == 0:
        return np.array([np.inf])
    blocks = np.minimum.reduceat(next_change, np.arange(0, next_change.size, SCAN_BLOCK))
    return np.concatenate([[blocks.min()], blocks])


@njit(cache=True)
def _due(t_end, next_change, idx, soon):  # pragma: no cover - compiled
    """Put the entities whose next change is by ``t_end`` in ``idx`` (ascending); count them.

    ``soon[0]`` becomes the earliest next change of the others. ``soon[1 + b]`` is the
    earliest next change in block ``b`` (entities ``SCAN_BLOCK * b`` onward), or ``-inf``
    once the block had entities due (they change phase, so its earliest is not known
    until the block is scanned again): a block whose earliest is after ``t_end`` is
    skipped whole. The entities found and ``soon[0]`` are those of a scan of every
    entity (every block at ``-inf``).
    """
    n = 0
    first = np.inf
    for b in range(soon.size - 1):
        if soon[1 + b] > t_end:
            first = min(first, soon[1 + b])
            continue
        low = np.inf
        due = False
        for e in range(b * SCAN_BLOCK, min((b + 1) * SCAN_BLOCK, next_change.size)):
            if next_change[e] <= t_end:
                idx[n] = e
                n += 1
                due = True
            else:
                first = min(first, next_change[e])
                low = min(low, next_change[e])
        soon[1 + b] = -np.inf if due else low
    soon[0] = first
    return n


@njit(cache=True)
def _renewal_kernel(t_end, on, level, next_change, count, ring0, ring1, next_block, k,
                    idx, state, acc, seg, stamp, epoch, with_acc, t_start, want, out, soon,
                    log_e, log_t, log_level, log_n):  # pragma: no cover - compiled
    """Advance the entities in ``idx[:state[0]]`` to ``t_end``, phase change by phase change.

    Iterations are the same as a level-synchronous loop in NumPy: every entity due
    changes phase, the new phases read their items (length and level) and the due set is
    filtered. Before any item is read, if a block of kind 0, then of kind 1, is missing,
    the kernel stops and returns ``(kind, last block needed)``; the caller draws it and
    calls again, and the kernel resumes at the same point (``state = [n_due, stage]``), so
    blocks are drawn in the order of a loop that reads kind 0's items before kind 1's.
    Returns ``(-1, -1)`` when every entity has reached ``t_end``. Called first with
    ``state[0] = -1``.

    With ``with_acc``, ``out[j]`` then holds the time-average level of entity ``want[j]``
    over ``[t_start, t_end]``. Only entities that change phase keep a running integral
    (``acc``, from the instant ``seg``), marked by ``stamp[e] == epoch``; the others'
    average is their level, computed as the same expression ``(0 + level * span) / span``.
    ``soon[0]`` is set to the earliest next change of any entity.

    With a log (``log_e.size > 0``) every phase change is appended to ``log_e``,
    ``log_t``, ``log_level`` (entity, instant, new level) at ``log_n[0]``; when the log
    cannot hold an iteration's changes the kernel returns ``(2, rows needed)`` before
    making them, and resumes once the caller has grown it.
    """
    # ``k`` and the rings' widths are powers of two (:class:`_BlockSequence`).
    shift, mask = 0, k - 1
    while (1 << shift) < k:
        shift += 1
    n, stage = state[0], state[1]
    if n < 0:
        n = _due(t_end, next_change, idx, soon)
        stage = 0
    logging = log_e.size > 0
    while n:
        # The last block each kind's starts read: they are drawn kind 0 first.
        last0 = last1 = -1
        if stage == 0:
            if logging and log_n[0] + n > log_e.size:
                state[0], state[1] = n, 0
                return 2, log_n[0] + n
            for j in range(n):
                e = idx[j]
                if logging:
                    log_e[log_n[0] + j] = e
                    log_t[log_n[0] + j] = next_change[e]
                if with_acc:
                    if stamp[e] != epoch:
                        stamp[e] = epoch
                        acc[e] = 0.0
                        seg[e] = t_start
                    at = next_change[e]
                    acc[e] += level[e] * (at - seg[e])
                    seg[e] = at
                on[e] = not on[e]
                if on[e]:
                    last0 = max(last0, count[0, e] >> shift)
                else:
                    last1 = max(last1, count[1, e] >> shift)
            stage = 1
        else:                   # resumed once a block was drawn
            for j in range(n):
                e = idx[j]
                if on[e]:
                    last0 = max(last0, count[0, e] >> shift)
                else:
                    last1 = max(last1, count[1, e] >> shift)
        if stage == 1:
            if last0 >= next_block[0]:
                state[0], state[1] = n, 1
                return 0, last0
            stage = 2
        if last1 >= next_block[1]:
            state[0], state[1] = n, 2
            return 1, last1
        # Every due entity starts its next phase; those still due go round again.
        m = 0
        m0, m1 = ring0.shape[0] - 1, ring1.shape[0] - 1
        for j in range(n):
            e = idx[j]
            if on[e]:
                c = count[0, e]
                w = (c >> shift) & m0
                i = c & mask
                next_change[e] = next_change[e] + ring0[w, e, i, 0]
                level[e] = ring0[w, e, i, 1]
                count[0, e] = c + 1
            else:
                c = count[1, e]
                w = (c >> shift) & m1
                i = c & mask
                next_change[e] = next_change[e] + ring1[w, e, i, 0]
                level[e] = ring1[w, e, i, 1]
                count[1, e] = c + 1
            if logging:
                log_level[log_n[0] + j] = level[e]
            if next_change[e] <= t_end:
                idx[m] = e
                m += 1
            elif next_change[e] < soon[0]:
                soon[0] = next_change[e]
        if logging:
            log_n[0] += n
        n, stage = m, 0
    state[0], state[1] = 0, 0
    if with_acc:
        span = max(t_end - t_start, 1e-300)
        for j in range(want.size):
            e = want[j]
            if stamp[e] == epoch:
                out[j] = (acc[e] + level[e] * (t_end - seg[e])) / span
            else:
                out[j] = (0.0 + level[e] * (t_end - t_start)) / span
    return -1, -1


@njit(cache=True)
def renewal_mean(state, epoch, t_end, t_start, want, out, resume):  # pragma: no cover - compiled
    """``advance_mean`` of either renewal process, for a compiled caller.

    ``state`` is the process's :attr:`~AlternatingRenewal.kernel_arg`; ``epoch`` the
    process's epoch, already incremented for this call. Returns what
    :func:`_renewal_kernel` returns: ``(kind, last block)`` when a block must be drawn
    first (call again with ``resume`` once :meth:`AlternatingRenewal.draw` has drawn it),
    ``(-1, -1)`` when done, with ``out`` filled. A :class:`KeyedRenewal` never asks for a
    block and moves only the entities in ``want``.
    """
    on, level, next_change, count, ring0, ring1, next_block, k, idx, st, acc, seg, stamp, \
        soon, key, params = state
    if params.size:
        _keyed_mean(on, level, next_change, count, key[0], params, stamp, acc, epoch, t_end,
                    t_start, want, out, False)
        return -1, -1
    if not resume:
        st[0], st[1] = -1, 0
    return _renewal_kernel(t_end, on, level, next_change, count, ring0, ring1, next_block, k,
                           idx, st, acc, seg, stamp, epoch, True, t_start, want, out, soon,
                           np.empty(0, dtype=np.int64), np.empty(0), np.empty(0),
                           np.zeros(1, dtype=np.int64))


@njit(cache=True)
def renewal_sync(state, entities, t):  # pragma: no cover - compiled
    """Bring ``entities`` of a :class:`KeyedRenewal` to time ``t`` (its ``kernel_arg``).

    Nothing to do for an :class:`AlternatingRenewal`, whose entities are always at the
    time it was last advanced to.
    """
    on, level, next_change, count, _, _, _, _, _, _, _, _, _, _, key, params = state
    if params.size:
        _keyed_sync(on, level, next_change, count, key[0], params, entities, t)


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
        max_level: No level exceeds it (``inf``: not known). Event timing uses it to tell
            which phase changes cannot matter before the next event.

    Every entity starts a fresh "on" phase at time 0.
    """

    def __init__(self, n: int, on_length: BlockDraw, off_length: BlockDraw,
                 on_level: BlockDraw, off_level: BlockDraw, rng: np.random.Generator,
                 max_level: float = math.inf):
        self.n = n
        self.max_level = max_level
        # Per kind, lengths and levels; a length block is drawn just before its level block.
        self._seq = (_BlockSequence(rng, n, (on_length, on_level)),
                     _BlockSequence(rng, n, (off_length, off_level)))
        self.count = np.zeros((2, n), dtype=np.int64)   # phases started, per kind
        self.on = np.ones(n, dtype=bool)
        self.next_change = np.zeros(n)
        length, self.level = self._seq[0].take(np.arange(n), self.count[0], 0)
        self.next_change += length
        self.count[0] += 1
        self._acc = np.zeros(n)
        self._seg = np.zeros(n)
        self._stamp = np.zeros(n, dtype=np.int64)      # 0: no running integral yet
        self.epoch = 0          # calls that averaged levels (marks running integrals)
        self._all = np.arange(n, dtype=np.int64)
        self._idx = np.empty(n, dtype=np.int64)
        self._state = np.zeros(2, dtype=np.int64)
        self._next_block = np.zeros(2, dtype=np.int64)
        # The earliest next change (until then, advancing changes nothing), then each
        # block's, so that a scan for the changes due skips the blocks with none.
        self._soon = _block_minima(self.next_change)

    @property
    def next_change_time(self) -> float:
        """The earliest next phase change of any entity: advancing to before it changes nothing."""
        return float(self._soon[0])

    def advance(self, t_end: float, t_start: float | None = None) -> np.ndarray | None:
        """Move every entity to time ``t_end``.

        Args:
            t_end: The new time.
            t_start: If given, also return each entity's time-average level over
                ``[t_start, t_end]`` (exact integral of the piecewise-constant level).

        Returns:
            The time-average levels, or None when ``t_start`` is None.
        """
        if t_start is None:
            if t_end >= self._soon[0]:
                self._run(t_end, None, _NO_INT, _NO_FLOAT, _NO_LOG)
            return None
        return self.advance_mean(t_end, t_start, self._all)

    def advance_mean(self, t_end: float, t_start: float, entities: np.ndarray,
                     distinct: bool = False) -> np.ndarray:
        """Move every entity to ``t_end``; return the time-average levels of ``entities``.

        Every entity is advanced (the realisation does not depend on which are asked);
        the averages are those :meth:`advance` returns, bit for bit, for the entities
        asked only.

        Args:
            t_end: The new time.
            t_start: Start of the span averaged over.
            entities: Entity ids whose averages are wanted (taken as int64, so that one
                compiled kernel serves every caller: the copies table's 32-bit slot ids
                would load a second one).
            distinct: Ignored: every entity moves (:meth:`KeyedRenewal.advance_mean`).

        Returns:
            The time-average level over ``[t_start, t_end]`` of each of ``entities``.
        """
        entities = np.asarray(entities, dtype=np.int64)
        out = np.empty(entities.size)
        self.epoch += 1
        self._run(t_end, t_start, entities, out, _NO_LOG)
        return out

    def current(self, entities: np.ndarray, t: float) -> tuple[np.ndarray, np.ndarray]:
        """The level and next phase change of ``entities`` (every entity is at ``t``)."""
        return self.level[entities], self.next_change[entities]

    @property
    def kernel_arg(self) -> tuple:
        """The state a compiled caller advances (:func:`renewal_mean`); valid until a draw."""
        seq = self._seq
        self._next_block[0], self._next_block[1] = seq[0].next_block, seq[1].next_block
        return (self.on, self.level, self.next_change, self.count, seq[0].ring, seq[1].ring,
                self._next_block, seq[0].k, self._idx, self._state, self._acc, self._seg,
                self._stamp, self._soon, _NO_KEY, _NO_FLOAT)

    def draw(self, kind: int, last: int) -> None:
        """Draw the blocks of phase ``kind`` up to ``last`` that a compiled caller asked for."""
        self._seq[kind].ensure(last, int(self.count[kind].min()) // self._seq[kind].k)

    def changes(self, t_end: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Move every entity to time ``t_end`` and return the phase changes on the way.

        The realisation is the same as with :meth:`advance` (the same draws in the same
        order), so a caller may consume the process as a list of events.

        Returns:
            Entity, instant and new level of every change in ``(now, t_end]``, by instant
            (ties in the order the process made them).
        """
        log = (np.empty(max(64, self.n), dtype=np.int64), np.empty(max(64, self.n)),
               np.empty(max(64, self.n)), np.zeros(1, dtype=np.int64))
        log = self._run(t_end, None, _NO_INT, _NO_FLOAT, log)
        n = int(log[3][0])
        order = np.argsort(log[1][:n], kind="stable")
        return log[0][:n][order], log[1][:n][order], log[2][:n][order]

    def _run(self, t_end: float, t_start: float | None, want: np.ndarray, out: np.ndarray,
             log: tuple) -> tuple:
        with_acc = t_start is not None
        state, seq = self._state, self._seq
        state[:] = -1, 0            # the kernel finds the due entities itself
        while True:
            self._next_block[0], self._next_block[1] = seq[0].next_block, seq[1].next_block
            kind, last = _renewal_kernel(
                t_end, self.on, self.level, self.next_change, self.count, seq[0].ring,
                seq[1].ring, self._next_block, seq[0].k, self._idx, state, self._acc,
                self._seg, self._stamp, self.epoch, with_acc,
                -1.0 if t_start is None else t_start, want, out, self._soon, *log)
            if kind < 0:
                return log
            if kind == 2:       # the log is full: double it
                size = max(2 * log[0].size, int(last))
                log = tuple(np.concatenate([a, np.empty(size - a.size, dtype=a.dtype)])
                            for a in log[:3]) + (log[3],)
                continue
            seq[kind].ensure(last, int(self.count[kind].min()) // seq[kind].k)


#: The :attr:`AlternatingRenewal.kernel_arg` of no process.
NO_RENEWAL = (np.empty(0, dtype=np.bool_), np.empty(0), np.empty(0),
              np.empty((2, 0), dtype=np.int64), np.empty((0, 0, 0, 2)), np.empty((0, 0, 0, 2)),
              np.zeros(2, dtype=np.int64), 1, np.empty(0, dtype=np.int64),
              np.zeros(2, dtype=np.int64), np.empty(0), np.empty(0), np.empty(0, dtype=np.int64),
              np.array([np.inf]), np.empty(0, dtype=np.uint64), np.empty(0))

#: No phase-change log (:meth:`AlternatingRenewal.advance`).
_NO_LOG = (np.empty(0, dtype=np.int64), np.empty(0), np.empty(0), np.zeros(1, dtype=np.int64))
_NO_INT = np.empty(0, dtype=np.int64)
_NO_FLOAT = np.empty(0)
_NO_KEY = np.empty(0, dtype=np.uint64)


class KeyedRenewal:
    """An alternating renewal process whose entities move only when they are read.

    The same process as :class:`AlternatingRenewal` (every entity starts a fresh "on"
    phase at time 0; phase lengths are Gamma, levels uniform times a factor, i.i.d. per
    kind), drawn from keyed streams (:mod:`geosim.keyed`): the length and level of an
    entity's ``c``-th phase of a kind are draws ``(entity, 4c + 2 kind)`` and
    ``(entity, 4c + 2 kind + 1)`` of the process's key. An entity's realisation is
    therefore fixed by the seed and the entity alone, so an entity is brought to the
    present only when something reads it (a copy runs on it, its state is sampled), and
    the memory is a few words per entity with no blocks of draws. Its values differ from
    an :class:`AlternatingRenewal` of the same seed (another stream), not its law.

    Readers: :meth:`advance_mean` and :meth:`current` for some entities; :attr:`on`,
    :attr:`level` and :attr:`next_change` bring every entity to the time the process
    was last advanced to (:attr:`now`) first.

    Args:
        n: Number of entities.
        on_gamma: ``(shape, scale)`` of "on" phase lengths.
        off_gamma: ``(shape, scale)`` of "off" phase lengths.
        on_level: ``(lo, hi)`` of "on" levels, uniform.
        off_level: ``(lo, hi)`` of "off" levels, uniform.
        factor: Every level is multiplied by it.
        rng: The process's own random stream (its key is drawn from it).
    """

    def __init__(self, n: int, on_gamma: tuple[float, float], off_gamma: tuple[float, float],
                 on_level: tuple[float, float], off_level: tuple[float, float],
                 factor: float, rng: np.random.Generator):
        self.n = n
        self.max_level = max(*on_level, *off_level) * factor     # no level exceeds it
        self._key = np.array([stream_key(rng)], dtype=np.uint64)
        self._params = np.array([*on_gamma, *off_gamma, *on_level, *off_level, factor],
                                dtype=float)
        # Before time 0 every entity is in an "off" phase that ends at 0.
        self._on = np.zeros(n, dtype=bool)
        self._level = np.zeros(n)
        self._next_change = np.zeros(n)
        self.count = np.zeros((2, n), dtype=np.int64)   # phases started, per kind
        self._acc = np.zeros(n)         # an entity's average in this epoch (repeats)
        self._stamp = np.zeros(n, dtype=np.int64)
        self.epoch = 0
        self.now = 0.0
        self._all = np.arange(n, dtype=np.int64)

    def _state(self) -> tuple:
        return (self._on, self._level, self._next_change, self.count, self._key[0], self._params)

    def _sync_all(self) -> None:
        _keyed_sync(*self._state(), self._all, self.now)

    @property
    def on(self) -> np.ndarray:
        """Whether each entity is in its "on" phase at :attr:`now` (read only)."""
        self._sync_all()
        return self._on

    @property
    def level(self) -> np.ndarray:
        """Each entity's level at :attr:`now` (read only)."""
        self._sync_all()
        return self._level

    @property
    def next_change(self) -> np.ndarray:
        """Each entity's next phase change after :attr:`now` (read only)."""
        self._sync_all()
        return self._next_change

    def advance(self, t_end: float, t_start: float | None = None) -> np.ndarray | None:
        """Move the process to time ``t_end`` (its entities move when read).

        Args:
            t_end: The new time.
            t_start: If given, also return each entity's time-average level over
                ``[t_start, t_end]``.

        Returns:
            The time-average levels, or None when ``t_start`` is None.
        """
        if t_start is not None:
            return self.advance_mean(t_end, t_start, self._all)
        self.now = max(self.now, t_end)
        return None

    def advance_mean(self, t_end: float, t_start: float, entities: np.ndarray,
                     distinct: bool = False) -> np.ndarray:
        """Move ``entities`` to ``t_end``; return their time-average levels over the span.

        Each of ``entities`` is first brought to ``t_start``; the averages are exact
        integrals of the piecewise-constant level, computed as
        :meth:`AlternatingRenewal.advance_mean` computes them. With ``distinct`` (no entity
        asked twice, as the caller knows) no repeat is looked for: the same averages.
        """
        entities = np.asarray(entities, dtype=np.int64)
        out = np.empty(entities.size)
        self.epoch += 1
        state = (*self._state(), self._stamp, self._acc, self.epoch, t_end, t_start,
                 entities, out, distinct)
        if wide(entities.size):
            _keyed_mean_wide(*state, numba.get_num_threads())
        else:
            _keyed_mean(*state)
        self.now = max(self.now, t_end)
        return out

    def current(self, entities: np.ndarray, t: float) -> tuple[np.ndarray, np.ndarray]:
        """The level and next phase change of ``entities``, brought to time ``t``."""
        entities = np.asarray(entities, dtype=np.int64)
        _keyed_sync(*self._state(), entities, t)
        return self._level[entities], self._next_change[entities]

    @property
    def kernel_arg(self) -> tuple:
        """The state a compiled caller reads (:func:`renewal_mean`, :func:`renewal_sync`)."""
        return (self._on, self._level, self._next_change, self.count, _NO_RING, _NO_RING,
                _NO_BLOCKS, 1, _NO_INT, _NO_BLOCKS, self._acc, _NO_FLOAT, self._stamp,
                _NO_SOON, self._key, self._params)

    def changes(self, t_end: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Move every entity to ``t_end`` and return the phase changes on the way.

        Returns:
            Entity, instant and new level of every change in ``(now, t_end]`` (the start
            of the first phase at time 0 is not a change), by instant, ties by entity.
        """
        self._sync_all()
        e, t, level = _keyed_changes(*self._state(), t_end)
        self.now = max(self.now, t_end)
        order = np.argsort(t, kind="stable")
        return e[order], t[order], level[order]


@njit(cache=True, inline="always")
def _keyed_phase(key, e, kind, c, params):  # pragma: no cover - compiled
    """Length and level of entity ``e``'s ``c``-th phase of ``kind`` (0 "on", 1 "off").

    Draws ``(e, 4c + 2 kind)`` and ``(e, 4c + 2 kind + 1)`` of the key; ``params`` holds
    the two kinds' gamma shapes and scales, their level bounds, and the factor.
    """
    i = 4 * c + 2 * kind
    lo = params[4 + 2 * kind]
    return (gamma(key, e, i, params[2 * kind], params[2 * kind + 1]),
            (lo + (params[5 + 2 * kind] - lo) * uniform(key, e, i + 1, 0)) * params[8])


@njit(cache=True)
def _keyed_sync(on, level, next_change, count, key, params, entities,
                t):  # pragma: no cover - compiled
    """Bring ``entities`` of a :class:`KeyedRenewal` to time ``t``, phase by phase.

    (Each loop of this module's keyed kernels writes its phase change out: a helper
    writing these arrays would cost reference counting per change; one that only reads,
    :func:`_keyed_phase`, costs nothing.)
    """
    for j in range(entities.size):
        e = entities[j]
        while next_change[e] <= t:
            kind = 1 if on[e] else 0
            on[e] = kind == 0
            length, level[e] = _keyed_phase(key, e, kind, count[kind, e], params)
            next_change[e] += length
            count[kind, e] += 1


@njit(cache=True)
def _keyed_mean(on, level, next_change, count, key, params, stamp, acc, epoch, t_end, t_start,
                want, out, distinct):  # pragma: no cover - compiled
    """Time-average level of each of ``want`` over ``[t_start, t_end]``, moving it to ``t_end``.

    An entity asked twice in one ``epoch`` gets the average of its first time; with
    ``distinct`` none is asked twice (not checked).
    """
    _keyed_mean_part(0, want.size, on, level, next_change, count, key, params, stamp, acc,
                     epoch, t_end, t_start, want, np.empty(0, dtype=np.bool_), distinct, out)


@njit(cache=True)
def _keyed_mean_part(lo, hi, on, level, next_change, count, key, params, stamp, acc, epoch,
                     t_end, t_start, want, first, distinct, out):  # pragma: no cover - compiled
    """:func:`_keyed_mean` of the entities ``want[lo:hi]``.

    With ``distinct`` every entity is moved and no average kept for a repeat. Otherwise,
    with ``first`` empty an entity asked before in the epoch is found by its ``stamp``;
    with ``first``, only those marked are moved (:func:`_keyed_mean_wide`). Each
    entity is caught up to ``t_start`` and taken through the span in one loop over its
    phase changes (changes up to ``t_start`` add nothing to the integral): one visit of
    its state, where a pass bringing every entity to ``t_start`` first read it twice. The
    loop is written out: as an inlined helper writing these arrays it took 1.7 times as
    long (reference counting per entity).
    """
    span = max(t_end - t_start, 1e-300)
    for j in range(lo, hi):
        e = want[j]
        if not distinct and first.size == 0:
            if stamp[e] == epoch:
                out[j] = acc[e]
                continue
            stamp[e] = epoch
        elif not distinct and not first[j]:
            continue
        total = 0.0
        seg = t_start
        while next_change[e] <= t_end:
            at = next_change[e]
            if at > t_start:
                total += level[e] * (at - seg)
                seg = at
            kind = 1 if on[e] else 0
            on[e] = kind == 0
            length, level[e] = _keyed_phase(key, e, kind, count[kind, e], params)
            next_change[e] += length
            count[kind, e] += 1
        out[j] = (total + level[e] * (t_end - seg)) / span
        if not distinct:
            acc[e] = out[j]


@njit(cache=True, parallel=True)
def _keyed_mean_wide(on, level, next_change, count, key, params, stamp, acc, epoch, t_end,
                     t_start, want, out, distinct, parts):  # pragma: no cover - compiled
    """:func:`_keyed_mean` with ``want`` split into ``parts`` among the threads.

    Unless ``distinct``, the entities asked first in the epoch are found beforehand (one
    serial pass), so that an entity asked twice is moved by one thread only; an entity's
    draws depend on it alone (keyed), so the parts give the same numbers in any order.
    """
    first = np.empty(0 if distinct else want.size, dtype=np.bool_)
    for j in range(first.size):
        e = want[j]
        first[j] = stamp[e] != epoch
        stamp[e] = epoch
    bounds = part_bounds(want.size, parts)
    for k in prange(parts):
        _keyed_mean_part(bounds[k], bounds[k + 1], on, level, next_change, count, key, params,
                         stamp, acc, epoch, t_end, t_start, want, first, distinct, out)
    for j in range(first.size):
        if not first[j]:
            out[j] = acc[want[j]]


@njit(cache=True)
def _keyed_changes(on, level, next_change, count, key, params,
                   t_end):  # pragma: no cover - compiled
    """Move every entity to ``t_end``; entity, instant and new level of each change."""
    size = max(64, on.size)
    log_e = np.empty(size, dtype=np.int64)
    log_t = np.empty(size)
    log_level = np.empty(size)
    n = 0
    for e in range(on.size):
        while next_change[e] <= t_end:
            at = next_change[e]
            kind = 1 if on[e] else 0
            on[e] = kind == 0
            length, level[e] = _keyed_phase(key, e, kind, count[kind, e], params)
            next_change[e] += length
            count[kind, e] += 1
            if n == size:
                size *= 2
                log_e = np.concatenate((log_e, np.empty(size - n, dtype=np.int64)))
                log_t = np.concatenate((log_t, np.empty(size - n)))
                log_level = np.concatenate((log_level, np.empty(size - n)))
            log_e[n], log_t[n], log_level[n] = e, at, level[e]
            n += 1
    return log_e[:n], log_t[:n], log_level[:n]


_NO_RING = np.empty((0, 0, 0, 2))
_NO_BLOCKS = np.zeros(2, dtype=np.int64)
_NO_SOON = np.array([np.inf])


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
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
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
        self._move_to(epoch)
        return True

    def _move_to(self, epoch: int) -> None:
        """Draw every period up to ``epoch``."""
        while self.epoch < epoch:
            self.level = truncated_normal(self._rng, self.mean, self.sd)
            self.epoch += 1

    def sync(self, entities: np.ndarray) -> None:
        """Nothing to do: every entity's level is drawn at every redraw."""

    def periods(self, entities: np.ndarray) -> np.ndarray:
        """The period whose level each of ``entities`` holds: always the current one."""
        return np.full(np.size(entities), self.epoch, dtype=np.int64)


class KeyedNormal(PeriodicNormal):
    """A :class:`PeriodicNormal` whose entities are redrawn only when read.

    The level of entity ``e`` in period ``k`` (``[k · period, (k + 1) · period)``) is draw
    ``(e, k)`` of the process's key (:func:`geosim.keyed.normal_above`), a function of the
    seed, the entity and the period alone. Every entity is drawn for period 0; at a
    redraw only :meth:`sync` draws, for the entities it is given, so :attr:`level` holds
    the current period's level of the entities synced since the last redraw (the engine
    syncs the slots of its live copies at every redraw and of each new copy at launch)
    and an older one elsewhere. Its values differ from a :class:`PeriodicNormal` of the
    same seed (another stream), not its law.

    Args:
        mean: Mean level per entity.
        rsd: Relative standard deviation per entity (sd = rsd × mean).
        period: Redraw period (s); 0 means drawn once and kept.
        rng: The process's own random stream (its key is drawn from it).
        floor_fraction: Levels lie above this fraction of the mean.
    """

    def __init__(self, mean: np.ndarray, rsd: np.ndarray, period: float,
                 rng: np.random.Generator, floor_fraction: float = 1e-3):
        self.mean = np.asarray(mean, dtype=float)
        self.sd = self.mean * np.asarray(rsd, dtype=float)
        self.period = period
        self.epoch = 0
        self._key = np.uint64(stream_key(rng))
        self._floor = float(floor_fraction)
        self._drawn = np.full(self.mean.size, -1, dtype=np.int64)   # period of each level
        self.level = np.empty(self.mean.size)
        self.sync(np.arange(self.mean.size, dtype=np.int64))

    def _move_to(self, epoch: int) -> None:
        """Enter period ``epoch``: nothing is drawn until :meth:`sync`."""
        self.epoch = epoch

    def sync(self, entities: np.ndarray) -> None:
        """Draw the current period's level of ``entities`` that do not have it yet."""
        _keyed_normal_sync(self._key, self.mean, self.sd, self._floor, self.level,
                           self._drawn, np.asarray(entities, dtype=np.int64), self.epoch)

    def periods(self, entities: np.ndarray) -> np.ndarray:
        """The period whose level each of ``entities`` holds."""
        return self._drawn[entities]


@njit(cache=True)
def _keyed_normal_sync(key, mean, sd, floor, level, drawn, entities,
                       epoch):  # pragma: no cover - compiled
    """:meth:`KeyedNormal.sync`: the levels of ``entities`` drawn for period ``epoch``."""
    for j in range(entities.size):
        e = entities[j]
        if drawn[e] != epoch:
            level[e] = normal_above(key, e, epoch, mean[e], sd[e], floor * mean[e])
            drawn[e] = epoch
