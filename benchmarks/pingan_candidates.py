"""What an exact pruned candidate search for PingAn would have to keep, and could skip.

PingAn's candidates for a task are the ``m`` clusters of highest upper bound on its rate,
``min(E[speed] / work, min_g E[bandwidth from g's source] / size_g)``, found over every
reachable cluster (``geosim/schedulers/pingan/candidates.py``: the bounds, then NumPy's
``argpartition``). On 10 000 clusters that search is the largest part of a PingAn run.
This script runs a scenario with PingAn and measures, without changing the run:

- **ties**: the searched rows whose ``m``-th highest bound equals the next one, so that
  which of the tied clusters become candidates is ``argpartition``'s choice, and the
  rows whose candidate set differs from the one a defined rule (ties to the lowest
  cluster index) picks. A search that visits fewer clusters cannot make
  ``argpartition``'s choice among ties, so it keeps today's decisions only where no row
  ties. In the tied rows, the share of the candidates among the 1% lowest-numbered
  clusters, as chosen and under the lowest-index rule.
- **scan depth**: for a sample of searched tasks (5% of the searches, 5 tasks each), the
  share of the reachable clusters a search in decreasing order of one term of the bound
  would have to visit before it can stop (those whose term is at least the ``m``-th
  highest bound): the speed term, the best input group's transfer term, and the better
  of the two for each task; and the same for the sampled tasks whose ``m``-th bound is
  tied and for the others.

With ``--ties lowest`` or ``--ties random`` the run's candidates among tied bounds are
chosen by that rule instead (ties to the lowest index, or to the lowest of a random rank
per cluster drawn from ``--seed``), to isolate what the choice among ties does to the
run's flowtimes; ``--seeds`` runs several seeds of the scenario.

    python benchmarks/pingan_candidates.py [SCENARIO] [--jobs N] [--set KEY=VALUE ...]
        [--ties argpartition|lowest|random] [--seeds S ...]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from geosim import GeoModel, load_scenario
from geosim.scenario import parse_override
from geosim.schedulers.pingan import candidates

ROOT = Path(__file__).resolve().parents[1]


class Probe:
    """Counts of ties and sampled scan depths, gathered while a run goes on."""

    def __init__(self, seed: int = 0, ties: str = "argpartition"):
        self.ties = ties
        self.rank: np.ndarray | None = None
        self.rows = self.tied = self.differ = 0
        # In tied rows: candidates among the 1% lowest-numbered clusters, as chosen and
        # under ties to the lowest index, and all candidates.
        self.low_tied = self.low_lowest = self.tied_picks = 0
        self.depth: list[tuple[float, float, bool]] = []  # speed order, transfer order, tie
        self._rng = np.random.default_rng(seed)
        self._seed = seed

    def top(self, score: np.ndarray, m: int) -> np.ndarray:
        """``candidates._top`` (or the ``ties`` rule's choice), counting ties and changes."""
        if self.ties == "argpartition":
            out = _TOP(score, m)
        else:                       # by score, then by index or by a random rank
            if self.rank is None:
                n = score.shape[1]
                self.rank = (np.arange(n) if self.ties == "lowest"
                             else np.random.default_rng(self._seed).permutation(n))
            rank = np.broadcast_to(self.rank, score.shape)
            out = np.ascontiguousarray(np.lexsort((rank, score), axis=-1)[:, :m])
        self.rows += score.shape[0]
        if score.shape[1] > m:
            part = np.partition(score, (m - 1, m), axis=1)
            tied = part[:, m - 1] == part[:, m]
            self.tied += int(tied.sum())
            lowest = np.argsort(score, axis=1, kind="stable")[:, :m]
            differ = np.any(np.sort(lowest, axis=1) != np.sort(out, axis=1), axis=1)
            self.differ += int(differ.sum())
            low = score.shape[1] // 100                  # the 1% lowest-numbered clusters
            self.low_tied += int((out[tied] < low).sum())
            self.low_lowest += int((lowest[tied] < low).sum())
            self.tied_picks += int(tied.sum()) * m
        return out

    def sample(self, cache, tasks, g_ptr, g_src, g_size, task_type, task_work, speed_b,
               bw_b, reach) -> None:
        """Scan depths of a few of the searched ``tasks`` (arguments of ``lookup``)."""
        if tasks.size == 0 or self._rng.random() >= 0.05 or not reach.any():
            return
        m, n = cache.cand.shape[1], speed_b.shape[0]
        bound, rows = np.empty(n), np.empty(n, dtype=np.int64)
        for i in self._rng.choice(tasks.size, min(5, tasks.size), replace=False):
            t = tasks[i]
            candidates._bounds(speed_b, bw_b, task_type[t], task_work[t], g_ptr[i],
                               g_ptr[i + 1], g_src, g_size, bound, np.empty(0, dtype=np.int64),
                               np.empty((0, 0)))
            live = np.sort(bound[reach])
            kth = live[-min(m, live.size)]
            speed = np.mean(speed_b[reach, task_type[t]] / task_work[t] >= kth)
            transfer = 1.0
            for g in range(g_ptr[i], g_ptr[i + 1]):
                candidates.source_rows(bw_b, g_src[g], rows)
                term = bw_b.values[rows] / g_size[g]
                term[g_src[g]] = np.inf
                transfer = min(transfer, float(np.mean(term[reach] >= kth)))
            tie = bool(np.sum(live >= kth) > m)          # more clusters than m at kth or above
            self.depth.append((float(speed), transfer, tie))

    def report(self) -> str:
        d = np.array(self.depth, dtype=float).reshape(-1, 3)
        best = d[:, :2].min(axis=1)
        tie = d[:, 2] > 0

        def spread(x: np.ndarray) -> str:
            if x.size == 0:
                return "none sampled"
            return (f"mean {100 * x.mean():.1f}%, median {100 * np.median(x):.2f}%, "
                    f"p90 {100 * np.quantile(x, 0.9):.1f}%")
        return (f"{self.rows} rows searched; {100 * self.tied / max(self.rows, 1):.1f}% tie "
                f"at the m-th bound; {100 * self.differ / max(self.rows, 1):.1f}% have other "
                f"candidates under ties to the lowest index; in the tied rows "
                f"{100 * self.low_tied / max(self.tied_picks, 1):.1f}% of the candidates are "
                f"among the 1% lowest-numbered clusters, "
                f"{100 * self.low_lowest / max(self.tied_picks, 1):.1f}% under that rule\n"
                f"scan depth over {len(d)} sampled tasks: speed order {spread(d[:, 0])}; "
                f"transfer order {spread(d[:, 1])}; the better of the two {spread(best)}\n"
                f"the better of the two, {tie.sum()} sampled tasks tied at the m-th bound: "
                f"{spread(best[tie])}; {(~tie).sum()} not tied: {spread(best[~tie])}")


_TOP = candidates._top


def measure(scenario: Path, overrides: dict, scheduler: str = "pingan",
            seed: int = 0, ties: str = "argpartition") -> tuple[Probe, float]:
    """Run ``scenario`` with ``scheduler`` under the probe: it and the mean flowtime."""
    probe = Probe(seed, ties)
    lookup = candidates._RowCache.lookup

    def probed(cache, version, reach_epoch, tasks, g_ptr, g_src, g_size, task_type,
               task_work, speed_b, bw_b, reach, free, find, key=None):
        if find:
            probe.sample(cache, tasks, g_ptr, g_src, g_size, task_type, task_work, speed_b,
                         bw_b, reach)
        return lookup(cache, version, reach_epoch, tasks, g_ptr, g_src, g_size, task_type,
                      task_work, speed_b, bw_b, reach, free, find, key)

    candidates._top, candidates._RowCache.lookup = probe.top, probed
    try:
        result = GeoModel(load_scenario(scenario, overrides), scheduler=scheduler).run()
    finally:
        candidates._top, candidates._RowCache.lookup = _TOP, lookup
    return probe, float(result.summary["mean_flowtime"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenario", nargs="?", default=str(ROOT / "scenarios" / "edge-10k.toml"))
    parser.add_argument("--jobs", type=int, default=150)
    parser.add_argument("--scheduler", default="pingan")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--ties", choices=("argpartition", "lowest", "random"),
                        default="argpartition")
    parser.add_argument("--seed", type=int, default=0, help="of the sample and the ranks")
    parser.add_argument("--seeds", type=int, nargs="+", default=[None],
                        help="run seeds (default: the scenario's)")
    args = parser.parse_args()
    for run_seed in args.seeds:
        overrides = dict(parse_override(item) for item in args.set)
        overrides["workload.n_jobs"] = args.jobs
        if run_seed is not None:
            overrides["run.seed"] = run_seed
        probe, mean = measure(Path(args.scenario), overrides, args.scheduler, args.seed,
                              args.ties)
        print(f"{Path(args.scenario).name}, {args.jobs} jobs, {args.scheduler}, seed "
              f"{run_seed if run_seed is not None else 'as given'}, ties {args.ties} "
              f"(mean flowtime {mean:.2f} s):\n{probe.report()}", flush=True)


if __name__ == "__main__":
    main()
