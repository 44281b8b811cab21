"""Keyed random draws: every value a function of its stream's key and its coordinates.

A counter-based generator, in the manner of Salmon et al.'s Random123 (SC'11): draw
``(entity, index, attempt)`` of the stream ``key`` is a hash of those four integers, so
an entity's ``index``-th value is the same whichever entities were drawn before it, in
whatever order, and whenever. A process built on it can leave an entity untouched until
something reads it (:class:`geosim.processes.KeyedRenewal`).

The hash chains SplitMix64's finaliser (Steele, Lea and Flood, OOPSLA'14,
:func:`mix64`, which the per-copy work draws of :mod:`geosim.variability` use too) over
the four integers; a uniform keeps its top 53 bits, offset by half a unit so that it lies in the
open interval (0, 1). Gamma variates follow Marsaglia and Tsang (ACM TOMS 2000) on
Box–Muller normals, with their boost ``U^(1/k)`` for shapes below 1; every uniform of a
value (the attempts of its rejection loop included) has its own ``attempt`` coordinate.
"""

from __future__ import annotations

import numpy as np

from geosim.jit import njit

#: SplitMix64's multipliers and increment (the golden ratio in 64 bits).
M1 = np.uint64(0xBF58476D1CE4E5B9)
M2 = np.uint64(0x94D049BB133111EB)
GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_S30, _S27, _S31, _S11 = np.uint64(30), np.uint64(27), np.uint64(31), np.uint64(11)


def stream_key(rng: np.random.Generator) -> int:
    """A stream's 64-bit key, drawn from the generator of the process that owns it."""
    return int(rng.integers(0, 2**64, dtype=np.uint64))


@njit(cache=True, inline="always")
def mix64(x):  # pragma: no cover - compiled
    """SplitMix64's finaliser: a bijection of 64-bit words with full avalanche."""
    x = (x ^ (x >> _S30)) * M1
    x = (x ^ (x >> _S27)) * M2
    return x ^ (x >> _S31)


@njit(cache=True, inline="always")
def unit(h):  # pragma: no cover - compiled
    """The uniform on (0, 1) of a 64-bit hash: its top 53 bits, offset by half a unit."""
    return (float(h >> _S11) + 0.5) * 2.0 ** -53


@njit(cache=True, inline="always")
def _base(key, entity, index):  # pragma: no cover - compiled
    """The hash of ``(key, entity, index)``, which each attempt's uniform then mixes in."""
    h = mix64(key ^ (np.uint64(entity) + np.uint64(1)) * GOLDEN)
    return mix64(h ^ (np.uint64(index) + np.uint64(1)) * GOLDEN)


@njit(cache=True, inline="always")
def _unit(base, attempt):  # pragma: no cover - compiled
    """The uniform on (0, 1) of one attempt of a value whose hash is ``base``."""
    return unit(mix64(base ^ (np.uint64(attempt) + np.uint64(1)) * GOLDEN))


@njit(cache=True, inline="always")
def uniform(key, entity, index, attempt):  # pragma: no cover - compiled
    """Uniform on (0, 1): draw ``(entity, index, attempt)`` of stream ``key`` (uint64)."""
    return _unit(_base(key, entity, index), attempt)


@njit(cache=True)
def gamma(key, entity, index, shape, scale):  # pragma: no cover - compiled
    """Gamma(``shape``, ``scale``) variate: draw ``(entity, index)`` of stream ``key``."""
    base = _base(key, entity, index)
    a = 0
    boost = 1.0
    k = shape
    if k < 1.0:
        boost = _unit(base, a) ** (1.0 / k)
        a += 1
        k += 1.0
    d = k - 1.0 / 3.0
    c = 1.0 / np.sqrt(9.0 * d)
    while True:
        u1 = _unit(base, a)
        u2 = _unit(base, a + 1)
        u3 = _unit(base, a + 2)
        a += 3
        z = np.sqrt(-2.0 * np.log(u1)) * np.cos(2.0 * np.pi * u2)
        v = 1.0 + c * z
        if v <= 0.0:
            continue
        v = v * v * v
        if np.log(u3) < 0.5 * z * z + d - d * v + d * np.log(v):
            return scale * d * v * boost


@njit(cache=True)
def normal_above(key, entity, index, mean, sd, floor):  # pragma: no cover - compiled
    """N(``mean``, ``sd``) truncated to values above ``floor``: draw ``(entity, index)``.

    Box–Muller normals, attempt ``a`` from uniforms ``2a`` and ``2a + 1``, until one lies
    above ``floor``.
    """
    base = _base(key, entity, index)
    a = 0
    while True:
        z = np.sqrt(-2.0 * np.log(_unit(base, a))) * np.cos(2.0 * np.pi * _unit(base, a + 1))
        a += 2
        x = mean + sd * z
        if x > floor:
            return x
