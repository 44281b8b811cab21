"""The reference runs: one digest of each run's result tables, to show a change exact.

A change meant to make geosim faster, not different, must leave every table as it was, bit
for bit. This script runs a fixed set of short reference runs that between them take every
path of the engine a published table takes (slotted and event timing, max-min and equal
sharing, fetched and streamed inputs, shared and keyed slot streams, 100 and 1 000
clusters, the compiled pool loop of 002's world, and the schedulers of the five papers)
and prints, for each, a SHA-256 digest of its jobs, tasks, copies, clusters and links
tables (pandas' hash of each row, index included, in order). With ``--against DIR`` it
runs the same cases in checkout ``DIR`` (a ``git worktree`` of the commit before the
change, say) in a second process, prints both digests side by side and exits with
status 1 if any differs.

The summary (wall time, the scheduler's seconds) is left out: it is the only part of a
result that is not a function of the scenario and the seed. Usage:

    python benchmarks/reference_hashes.py [--against DIR] [CASE ...]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: Name: (scenario, scheduler, overrides). Sizes are chosen so that all of them run in a
#: few minutes on two cores.
PM = "pingan-medium.toml"
EVENT = {"run.timing": "event"}
EDGE = {"topology.generator": "barabasi_albert", "topology.n_clusters": 1000,
        "clusters.slot_streams": "keyed", "run.record_interval": 0.0, "workload.n_jobs": 150}
CASES: dict[str, tuple[str, str, dict]] = {
    "quickstart-fair": ("quickstart.toml", "fair", {}),
    "medium-fair": (PM, "fair", {"workload.n_jobs": 100}),
    "medium-pingan": (PM, "pingan[epsilon=0.6]", {"workload.n_jobs": 60}),
    "medium-flutter+mantri": (PM, "flutter+mantri", {"workload.n_jobs": 60}),
    "medium-iridium": (PM, "iridium", {"workload.n_jobs": 60}),
    "medium-late": (PM, "late", {"workload.n_jobs": 60}),
    "medium-spark+speculation": (PM, "spark+speculation", {"workload.n_jobs": 60}),
    "medium-flutter+dolly": (PM, "flutter+dolly", {"workload.n_jobs": 60}),
    "medium-fair-stream": (PM, "fair", {"workload.n_jobs": 60, "links.transfer": "stream"}),
    "medium-fair-equal": (PM, "fair", {"workload.n_jobs": 60, "links.sharing": "equal"}),
    "medium-pingan-event": (PM, "pingan[epsilon=0.6]", {"workload.n_jobs": 40, **EVENT}),
    "medium-fair-stream-event": (PM, "fair", {"workload.n_jobs": 40,
                                              "links.transfer": "stream", **EVENT}),
    "prototype-pingan-event": ("prototype-003.toml", "pingan", {"workload.n_jobs": 40,
                                                                **EVENT}),
    "edge1000-fair": (PM, "fair", EDGE),
    "edge1000-flutter+mantri": (PM, "flutter+mantri", EDGE),
    "edge1000-iridium": (PM, "iridium", EDGE),
    # PingAn's candidate search split among threads (many tasks on many clusters)
    "edge1000-pingan": (PM, "pingan[epsilon=0.6]", EDGE),
    "redundancy-fair-slot": ("redundancy-gamma.toml", "fair", {"workload.n_jobs": 1000,
                                                             "run.timing": "slot"}),
    "redundancy-srpt+r-event": ("redundancy-gamma.toml", "srpt+r", {
        "workload.n_jobs": 4000, "workload.arrival_rate": 2.0, **EVENT}),
    "cloning-srptms+c": ("cloning-google.toml", "srptms+c", {"workload.n_jobs": 300}),
    "flowflex": ("flowflex.toml", None, {}),
}
TABLES = ("jobs", "tasks", "copies", "clusters", "links")


def tables_digest(result) -> str:
    """SHA-256 of a result's tables: names, columns and pandas' hash of every row."""
    import pandas as pd

    h = hashlib.sha256()
    for name in TABLES:
        table = getattr(result, name)
        h.update(name.encode())
        h.update(",".join(map(str, table.columns)).encode())
        h.update(pd.util.hash_pandas_object(table, index=True).to_numpy().tobytes())
    return h.hexdigest()


def digest(case: str, root: Path = ROOT) -> dict:
    """Run ``case`` with the geosim imported here: its digest, mean flowtime and seconds."""
    import geosim

    scenario, scheduler, overrides = CASES[case]
    start = time.perf_counter()
    result = geosim.run(str(root / "scenarios" / scenario), scheduler=scheduler,
                        overrides=overrides)
    seconds = time.perf_counter() - start
    return {"case": case, "digest": tables_digest(result),
            "mean_flowtime": float(result.jobs["flowtime"].mean()),
            "seconds": round(seconds, 2)}


def _in(checkout: Path, cases: list[str]) -> dict[str, dict]:
    """The digests of ``cases`` run by the geosim of ``checkout``, in a fresh process."""
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    proc = subprocess.run([sys.executable, __file__, "--emit", str(checkout), *cases],
                          env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"the reference runs failed in {checkout}:\n{proc.stderr[-2000:]}")
    rows = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    return {row["case"]: row for row in rows}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("cases", nargs="*", metavar="CASE",
                        help=f"cases to run, of {', '.join(CASES)} (default: all)")
    parser.add_argument("--against", type=Path, help="another checkout to compare with")
    parser.add_argument("--emit", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    unknown = sorted(set(args.cases) - set(CASES))
    if unknown:
        parser.error(f"unknown cases {unknown}; choose from {', '.join(CASES)}")
    cases = args.cases or list(CASES)
    if args.emit is not None:             # the runs of another checkout (see _in)
        for case in cases:
            print(json.dumps(digest(case, args.emit.resolve())), flush=True)
        return 0
    ours = {}
    for case in cases:
        ours[case] = digest(case)
        print(json.dumps({"checkout": "this", **ours[case]}), flush=True)
    theirs = _in(args.against.resolve(), cases) if args.against else {}
    print("\n| case | digest | mean flowtime (s) | seconds |"
          + (" against | same |" if theirs else ""))
    print("|---|---|---|---|" + ("---|---|" if theirs else ""))
    differ = 0
    for case, row in ours.items():
        line = (f"| {case} | {row['digest'][:16]} | {row['mean_flowtime']:.6f} | "
                f"{row['seconds']:.2f} |")
        if theirs:
            other = theirs[case]
            same = other["digest"] == row["digest"]
            differ += not same
            line += f" {other['digest'][:16]} | {'yes' if same else '**no**'} |"
        print(line)
    if theirs:
        print(f"\n{len(ours) - differ} of {len(ours)} reference runs give the same tables.")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
