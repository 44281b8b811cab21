"""The geo-distributed world: clusters, slots, gates, WAN links, routes and their processes.

Built once per run from a scenario and a seed (:func:`build_world`). Per-cluster values
are drawn uniformly in their tier's range (003 §6.1, Table 2); per-slot and per-link
dynamics are :mod:`geosim.processes`. Units: MB, MB/s, MIPS, seconds.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import networkx as nx
import numpy as np

from geosim.monitor import Priors
from geosim.processes import (
    AlternatingRenewal,
    KeyedNormal,
    KeyedRenewal,
    PeriodicNormal,
    constant_draw,
    gamma_draw,
    geometric_trials_draw,
    length_draw,
    uniform_draw,
)
from geosim.routes import Routes
from geosim.scenario import Scenario
from geosim.topology import TIERS, assign_tiers, barabasi_albert_topology, read_topology

#: Names of the independent random streams of a run, in the order they are spawned.
STREAMS = ("topology", "clusters", "availability", "outages", "links", "power",
           "workload", "placement", "scheduler", "copies")


#: The link bandwidths of a world without links.
_NO_LINKS = np.empty(0)


def spawn_streams(seed: int) -> dict[str, np.random.Generator]:
    """Return one independent generator per stream name, all derived from ``seed``."""
    children = np.random.SeedSequence(seed).spawn(len(STREAMS))
    return {name: np.random.default_rng(s) for name, s in zip(STREAMS, children, strict=True)}


@dataclass
class World:
    """Static facts and stochastic processes of the clusters and the WAN.

    Attributes:
        graph: Topology; node ``c`` is cluster ``c``, with ``x``, ``y`` and ``tier``.
        tier: Tier index per cluster (0 large, 1 medium, 2 small).
        slots: Slots per cluster.
        slot_ptr: Slots of cluster ``c`` are ``slot_ptr[c]:slot_ptr[c+1]``.
        slot_cluster: Cluster of every slot.
        gate: Gate bandwidth per cluster (MB/s), the same for ingress and egress.
        outage_p: Outage probability per trial, per cluster.
        link_u, link_v: End clusters of every WAN link (``link_u < link_v``), sorted.
        routes: The routes between clusters, computed for the pairs in use
            (:class:`~geosim.routes.Routes`): hop counts, and the resources a transfer
            from ``s`` to ``d`` uses (the directed links of the route, then the egress
            gate of ``s``, then the ingress gate of ``d``). Resource ids: ``2e`` /
            ``2e+1`` for link ``e`` in the ``u→v`` / ``v→u`` direction, ``2L + c`` for
            cluster ``c``'s egress and ``2L + n + c`` for its ingress.
        input_clusters: Clusters that may hold raw input data.
        power: VM power per slot (MIPS), redrawn periodically.
        availability: Speed factor per slot (None when disabled).
        outages: Reachability per cluster, "on" = reachable (None when disabled).
        link_bw: Bandwidth per link (MB/s, each direction), redrawn periodically
            (None without links).
    """

    graph: nx.Graph
    tier: np.ndarray
    slots: np.ndarray
    slot_ptr: np.ndarray
    slot_cluster: np.ndarray
    gate: np.ndarray
    outage_p: np.ndarray
    link_u: np.ndarray
    link_v: np.ndarray
    routes: Routes
    input_clusters: np.ndarray
    power: PeriodicNormal
    availability: AlternatingRenewal | KeyedRenewal | None
    outages: AlternatingRenewal | None
    link_bw: PeriodicNormal | None
    #: The links' bandwidths and the capacities made from them (resource_capacity).
    _capacity: tuple[np.ndarray, np.ndarray] | None = field(default=None, init=False,
                                                          repr=False)

    @property
    def n_clusters(self) -> int:
        """Number of clusters."""
        return len(self.slots)

    @property
    def n_slots(self) -> int:
        """Number of slots in all clusters."""
        return int(self.slot_ptr[-1])

    @property
    def n_links(self) -> int:
        """Number of WAN links."""
        return len(self.link_u)

    def resource_capacity(self) -> np.ndarray:
        """Current capacity (MB/s) of every transfer resource, indexed by resource id.

        Made anew when the links' bandwidths are redrawn (a new ``link_bw.level``), else
        the same array: callers read it and must not write into it.
        """
        links = self.link_bw.level if self.link_bw is not None else _NO_LINKS
        if self._capacity is None or self._capacity[0] is not links:
            self._capacity = (links, np.concatenate([np.repeat(links, 2), self.gate,
                                                     self.gate]))
        return self._capacity[1]


def build_graph(scenario: Scenario, rng: np.random.Generator) -> nx.Graph:
    """Make or read the topology the scenario names."""
    topo = scenario["topology"]
    if topo["generator"] == "single":
        graph = nx.Graph()
        graph.add_node(0, x=0.0, y=0.0)
        return graph
    if topo["generator"] == "file":
        return read_topology(scenario.resolve(topo["file"]))
    seed = topo["seed"] if topo["seed"] >= 0 else rng
    return barabasi_albert_topology(topo["n_clusters"], topo["m"], seed=seed)


def _draw_range(value, n: int, rng: np.random.Generator, integer: bool = False) -> np.ndarray:
    lo, hi = (value, value) if not isinstance(value, list) else (value[0], value[-1])
    if integer:
        return rng.integers(int(lo), int(hi) + 1, size=n)
    return rng.uniform(float(lo), float(hi), size=n)


def build_world(scenario: Scenario, streams: dict[str, np.random.Generator],
                graph: nx.Graph | None = None) -> World:
    """Build the world of a scenario from the run's random streams.

    Args:
        scenario: A validated scenario.
        streams: The run's generators, from :func:`spawn_streams`.
        graph: Its topology, if already made by :func:`build_graph` from the same streams.

    Returns:
        The world at time 0.
    """
    rng = streams["clusters"]
    if graph is None:
        graph = build_graph(scenario, streams["topology"])
    n = graph.number_of_nodes()
    tier = assign_tiers(graph, scenario["topology"]["tier_shares"])
    per_tier = [scenario[f"tiers.{name}"] for name in TIERS]

    def draw(key: str, integer: bool = False) -> np.ndarray:
        out = np.empty(n, dtype=np.int64 if integer else float)
        for t, params in enumerate(per_tier):
            idx = np.flatnonzero(tier == t)
            out[idx] = _draw_range(params[key], len(idx), rng, integer)
        return out

    drawn = draw("slots", integer=True)
    gate_ratio = draw("gate_ratio")
    power_mean = draw("power_mean")
    power_rsd = draw("power_rsd")
    outage_p = draw("outage_probability")
    clusters, links = scenario["clusters"], scenario["links"]
    # The scarcity axes scale what was drawn, so that every other draw stays the same.
    slots = np.maximum(1, np.rint(drawn * clusters["slot_scale"])).astype(np.int64)
    gate = gate_ratio * drawn * clusters["vm_bandwidth"] * links["bandwidth_scale"]
    outage_p = np.minimum(outage_p * scenario["outages"]["probability_scale"], 1.0)
    slot_ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(slots, out=slot_ptr[1:])
    slot_cluster = np.repeat(np.arange(n), slots)

    weight = "length" if links["routing"] == "distance" else None
    routes = Routes(graph, weight)
    link_u, link_v = routes.link_u, routes.link_v
    link_bw = None
    if len(link_u):
        bw_mean = _draw_range(links["bandwidth_mean"], len(link_u), rng) * links["bandwidth_scale"]
        bw_rsd = _draw_range(links["bandwidth_rsd"], len(link_u), rng)
        link_bw = PeriodicNormal(bw_mean, bw_rsd, links["redraw_interval"], streams["links"])

    power = (KeyedNormal if clusters["slot_streams"] == "keyed" else PeriodicNormal)(
        power_mean[slot_cluster], power_rsd[slot_cluster], clusters["power_redraw_interval"],
        streams["power"])
    availability = _availability(scenario, int(slot_ptr[-1]), streams["availability"])
    outages = None
    out = scenario["outages"]
    if out["enabled"] and np.any(outage_p > 0):
        outages = AlternatingRenewal(
            n, geometric_trials_draw(outage_p, out["trial_interval"]),
            length_draw(out["duration"], out["duration_shape"], out["duration_scale"]),
            constant_draw(1.0), constant_draw(0.0), streams["outages"])

    input_clusters = _input_clusters(scenario, tier, rng)
    return World(graph, tier, slots, slot_ptr, slot_cluster, gate, outage_p, link_u, link_v,
                 routes, input_clusters, power, availability, outages, link_bw)


def availability_rates(av: dict) -> tuple[tuple[float, float], tuple[float, float], float]:
    """Rate ranges of available and unavailable periods, and the normalisation factor.

    With ``normalise`` every rate is divided by the long-run mean rate
    ``(E[AP] E[r_AP] + E[UP] E[r_UP]) / (E[AP] + E[UP])`` (002 §6), so it becomes 1.

    Args:
        av: The scenario's ``availability`` section.
    """
    def bounds(value) -> tuple[float, float]:
        return (float(value[0]), float(value[-1])) if isinstance(value, list) else \
            (float(value), float(value))

    on_rate, off_rate = bounds(av["available_rate"]), bounds(av["unavailable_rate"])
    factor = 1.0
    if av["normalise"]:
        mean_on = av["available_shape"] * av["available_scale"]
        mean_off = av["unavailable_shape"] * av["unavailable_scale"]
        mean_rate = (mean_on * np.mean(on_rate) + mean_off * np.mean(off_rate)) / (
            mean_on + mean_off)
        factor = 1.0 / mean_rate if mean_rate > 0 else 1.0
    return on_rate, off_rate, float(factor)


def _availability(scenario: Scenario, n_slots: int,
                  rng: np.random.Generator) -> AlternatingRenewal | KeyedRenewal | None:
    av = scenario["availability"]
    if not av["enabled"]:
        return None
    on_rate, off_rate, factor = availability_rates(av)
    if scenario["clusters"]["slot_streams"] == "keyed":
        return KeyedRenewal(
            n_slots, (av["available_shape"], av["available_scale"]),
            (av["unavailable_shape"], av["unavailable_scale"]), on_rate, off_rate, factor, rng)
    return AlternatingRenewal(
        n_slots, gamma_draw(av["available_shape"], av["available_scale"]),
        gamma_draw(av["unavailable_shape"], av["unavailable_scale"]),
        uniform_draw(on_rate[0], on_rate[1], factor),
        uniform_draw(off_rate[0], off_rate[1], factor), rng,
        max_level=max(*on_rate, *off_rate) * factor)


def _input_clusters(scenario: Scenario, tier: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Clusters that hold raw input.

    Every cluster of the listed tiers, except that only a share of medium clusters is
    used ("the edges as well as some medium-scale clusters", 003 §6.1).
    """
    wl = scenario["workload"]
    chosen: list[np.ndarray] = []
    for name in wl["input_tiers"]:
        idx = np.flatnonzero(tier == TIERS.index(name))
        if name == "medium" and len(idx):
            k = int(round(wl["medium_input_share"] * len(idx)))
            idx = np.sort(rng.choice(idx, size=k, replace=False))
        chosen.append(idx)
    out = np.unique(np.concatenate(chosen)) if chosen else np.empty(0, dtype=np.int64)
    return out if out.size else np.arange(len(tier))


def nominal_priors(scenario: Scenario, world: World) -> Priors:
    """The nominal parameters of the scenario's world, as an operator would know them.

    Each cluster gets the middle of its tier's ranges (its own drawn values stay
    hidden); the speed prior includes the long-run mean availability factor, and the
    outage prior converts the tier's per-trial probability to onsets per second.
    """
    def mid(value) -> float:
        return float(np.mean(value)) if isinstance(value, list) else float(value)

    per_tier = [scenario[f"tiers.{name}"] for name in TIERS]
    power = np.array([mid(t["power_mean"]) for t in per_tier])[world.tier]
    rsd = np.array([mid(t["power_rsd"]) for t in per_tier])[world.tier]
    av = scenario["availability"]
    factor = 1.0
    if av["enabled"]:
        on_rate, off_rate, scale = availability_rates(av)
        mean_on = av["available_shape"] * av["available_scale"]
        mean_off = av["unavailable_shape"] * av["unavailable_scale"]
        factor = scale * (mean_on * np.mean(on_rate) + mean_off * np.mean(off_rate)) / (
            mean_on + mean_off)
    out = scenario["outages"]
    rate = np.zeros(world.n_clusters)
    if out["enabled"]:
        p = np.array([mid(t["outage_probability"]) for t in per_tier])[world.tier]
        rate = -np.log1p(-np.minimum(p, 1.0 - 1e-12)) / out["trial_interval"]
    links = scenario["links"]
    return Priors(speed_mean=power * factor, speed_rsd=rsd,
                  bandwidth_mean=mid(links["bandwidth_mean"]),
                  bandwidth_rsd=mid(links["bandwidth_rsd"]), outage_rate=rate)
