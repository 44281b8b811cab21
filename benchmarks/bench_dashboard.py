"""Live dashboard timings on ``pingan-medium`` (100 clusters), printed as JSON.

For each scheduler, over the first STEPS steps of the run with a frame after every step
(the dashboard's default of one step per frame):

- ``step_ms``: one dashboard step (the geosim slot plus the per-step record);
- ``map_ms`` / ``plots_ms``: one frame of the load map / of the plots (read the model,
  update the artists, blit, encode);
- ``ui_step_ms``: a click on SolaraViz's Step button until the page is rendered again,
  in-process without a browser (step, both frames, the status lines, Solara's render).

Then the same for schedulers side by side (COMPARISONS, ``geosim dashboard --compare``):

- ``advance_ms``: every side advanced by one slot in lockstep;
- ``maps_ms`` / ``plots_ms``: all sides' load maps / the shared plots;
- ``ui_step_ms``: a Step click until the comparison page is rendered again.

Usage:

    python benchmarks/bench_dashboard.py [STEPS]      # default: 1500
"""

from __future__ import annotations

import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = str(ROOT / "scenarios" / "pingan-medium.toml")
SCHEDULERS = ("fair", "pingan[epsilon=0.6]")
COMPARISONS = ("pingan,flutter+mantri", "pingan,flutter+mantri,iridium,flutter")


def _stats(seconds: list[float]) -> dict[str, float]:
    ms = 1e3 * np.asarray(seconds)
    return {"mean": round(float(ms.mean()), 2), "p50": round(float(np.median(ms)), 2),
            "p95": round(float(np.percentile(ms, 95)), 2), "max": round(float(ms.max()), 1)}


def bench_frames(scheduler: str, steps: int) -> dict:
    from viz.dashboard import build_config
    from viz.dashboard_draw import LoadMap, TimeSeries
    from viz.dashboard_run import build_model, model_frame, step, watch
    from viz.data import layout_of

    config = build_config(SCENARIO, scheduler)
    start = time.perf_counter()
    model = build_model(**config.model_kwargs())
    cmap = LoadMap(layout_of(model.world), scheduler, (0.0, 0.0, 0.0), size=(6.2, 5.8))
    plots = TimeSeries(model)
    setup = time.perf_counter() - start
    step_s, map_s, plot_s = [], [], []
    for _ in range(steps):
        step(model)
        step_s.append(watch(model).step_seconds)
        cmap.draw(model_frame(model))
        map_s.append(cmap.frame_seconds)
        plots.frame(model)
        plot_s.append(plots.frame_seconds)
    return {"scheduler": scheduler, "steps": steps, "setup_seconds": round(setup, 2),
            "simulated_seconds": model.view.time, "clusters": int(model.world.n_clusters),
            "step_ms": _stats(step_s), "map_ms": _stats(map_s), "plots_ms": _stats(plot_s),
            "plot_backgrounds": plots.backgrounds}


def bench_ui(scheduler: str, steps: int) -> dict:
    import ipyvuetify as v
    import solara

    from viz.dashboard import build_config
    from viz.dashboard_ui import make_page

    page = make_page(build_config(SCENARIO, scheduler))
    _box, rc = solara.render(solara.AppLayout(children=[page()]), handle_error=False)
    step = rc.find(v.Btn, children=["Step"]).widget
    clicks = []
    for _ in range(steps):
        start = time.perf_counter()
        step.click()
        clicks.append(time.perf_counter() - start)
    rc.close()
    return {"scheduler": scheduler, "ui_step_ms": _stats(clicks)}


def bench_comparison(specs: str, steps: int) -> dict:
    import ipyvuetify as v
    import solara

    from viz.compare_data import LiveComparison
    from viz.compare_draw import CompareSeries
    from viz.compare_ui import make_compare_page
    from viz.dashboard import compare_config
    from viz.dashboard_draw import LoadMap

    labels = specs.split(",")
    start = time.perf_counter()
    live = LiveComparison(labels, SCENARIO)
    maps = [LoadMap(live.layout, label, (0.0, 0.0, 0.0)) for label in live.labels]
    plots = CompareSeries(live.labels)
    setup = time.perf_counter() - start
    advance_s, maps_s, plots_s = [], [], []
    for _ in range(steps):
        start = time.perf_counter()
        live.advance(1)
        advance_s.append(time.perf_counter() - start)
        start = time.perf_counter()
        for k, m in enumerate(maps):
            m.draw(live.map_frame(k))
        maps_s.append(time.perf_counter() - start)
        plots.draw([live.series(k) for k in range(len(labels))],
                   [live.paired_series(k) for k in range(1, len(labels))])
        plots_s.append(plots.frame_seconds)
    page = make_compare_page(compare_config(SCENARIO, specs))
    _box, rc = solara.render(solara.AppLayout(children=[page()]), handle_error=False)
    step = rc.find(v.Btn, children=["Step"]).widget
    clicks = []
    for _ in range(min(steps, 300)):
        start = time.perf_counter()
        step.click()
        clicks.append(time.perf_counter() - start)
    rc.close()
    return {"compare": specs, "steps": steps, "setup_seconds": round(setup, 2),
            "simulated_seconds": live.time, "advance_ms": _stats(advance_s),
            "maps_ms": _stats(maps_s), "plots_ms": _stats(plots_s),
            "ui_step_ms": _stats(clicks)}


def main() -> None:
    """Print the timings of every scheduler and comparison as JSON lines."""
    warnings.filterwarnings("ignore", category=UserWarning)
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 1500
    for scheduler in SCHEDULERS:
        out = bench_frames(scheduler, steps)
        out.update(bench_ui(scheduler, min(steps, 300)))
        print(json.dumps(out), flush=True)
    for specs in COMPARISONS:
        print(json.dumps(bench_comparison(specs, steps)), flush=True)


if __name__ == "__main__":
    main()
