"""Result tables on disk, the monitor's observed statistics."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from conftest import closed_world, geo_world

import geosim
from geosim import GeoModel, GeosimError, load_scenario
from geosim.monitor import Monitor


def test_save_and_load_round_trip(tmp_path):
    result = geosim.run(geo_world(n_jobs=4))
    for fmt in ("parquet", "csv"):
        out = result.save(tmp_path / fmt, fmt=fmt)
        back = geosim.load_result(out)
        pd.testing.assert_frame_equal(back.jobs, result.jobs, check_dtype=False)
        assert len(back.copies) == len(result.copies)
        assert back.summary["jobs_done"] == 4
        assert back.meta["scheduler"] == "fifo"
    result.save(tmp_path / "parquet")   # a previous result may be replaced
    with pytest.raises(GeosimError, match="not a geosim results directory"):
        geosim.load_result(tmp_path)


def test_summary_is_consistent_with_tables():
    result = geosim.run(geo_world(n_jobs=5, scheduler="fair"))
    s, jobs, copies = result.summary, result.jobs, result.copies
    assert s["mean_flowtime"] == pytest.approx(jobs["flowtime"].mean())
    assert s["p95_flowtime"] == pytest.approx(np.percentile(jobs["flowtime"], 95))
    assert s["copies_launched"] == len(copies)
    assert s["copies_killed"] == int((copies["outcome"] != "won").sum())
    assert 0 < s["slot_utilisation"] < 1
    clusters = result.clusters
    assert set(clusters["tier"].unique()) <= {"large", "medium", "small"}
    assert (clusters["busy"] <= clusters["slots"] + 1e-9).all()
    assert (clusters["available_slots"] <= clusters["slots"]).all()


def test_monitor_ring_keeps_the_most_recent_window():
    mon = Monitor(n_clusters=2, n_types=1, window=4)
    mon.record_copies(np.array([0, 0, 0]), np.array([0, 0, 0]), np.array([1.0, 2.0, 3.0]))
    mon.record_copies(np.array([0, 1, 0, 0]), np.zeros(4, dtype=int), np.array([4., 9., 5., 6.]))
    assert sorted(mon.speed_samples(0, 0)) == [3.0, 4.0, 5.0, 6.0]
    assert list(mon.speed_samples(1)) == [9.0]
    mon.record_transfers(np.array([0]), np.array([1]), np.array([2.5]))
    assert list(mon.bandwidth_samples(0, 1)) == [2.5]
    assert mon.bandwidth_samples(1, 0).size == 0


def test_monitor_learns_the_true_speed_from_completed_copies():
    # Power N(50, 10) per slot, fixed for the run, no availability dips: every observed
    # speed is one slot's power, so the samples follow the slots' distribution.
    world = closed_world(slots=40, rate=0.5, n_jobs=400)
    world["tiers"]["small"].update(power_mean=50.0, power_rsd=0.2)
    model = GeoModel(load_scenario(world))
    model.run()
    seen = model.monitor.speed_samples(0)
    assert seen.size == 64
    assert seen.mean() == pytest.approx(50.0, rel=0.1)
    assert set(np.round(seen, 9)) <= set(np.round(model.world.power.level, 9))


def test_link_traffic_is_recorded_per_direction():
    # two clusters joined by one link: every remote byte crosses it, u→v from u's egress
    two = geo_world(n_clusters=2, n_jobs=6, seed=5)
    two["topology"]["m"] = 1
    result = geosim.run(two)
    links, clusters = result.links, result.clusters
    assert list(links.columns) == ["time", "link", "u", "v", "bandwidth", "forward_mbps",
                                   "backward_mbps"]
    assert len(links) == clusters["time"].nunique() and (links["u"] == 0).all()
    gate = clusters.pivot(index="time", columns="cluster", values="egress_mbps")
    np.testing.assert_allclose(links["forward_mbps"], gate[0].to_numpy(), atol=1e-9)
    np.testing.assert_allclose(links["backward_mbps"], gate[1].to_numpy(), atol=1e-9)
    assert links[["forward_mbps", "backward_mbps"]].to_numpy().sum() > 0
    assert (links["bandwidth"] > 0).all()


def test_link_traffic_covers_every_route_and_survives_saving(tmp_path):
    result = geosim.run(geo_world(n_jobs=6, scheduler="fair"))
    links, clusters = result.links, result.clusters
    per_sample = links.groupby("time")[["forward_mbps", "backward_mbps"]].sum().sum(axis=1)
    wan = clusters.groupby("time")["egress_mbps"].sum()
    hops = len(result.clusters["cluster"].unique()) - 1
    assert (per_sample >= wan - 1e-9).all() and (per_sample <= hops * wan + 1e-9).all()
    assert per_sample.sum() > 0
    for fmt in ("parquet", "csv"):
        back = geosim.load_result(result.save(tmp_path / fmt, fmt=fmt))
        pd.testing.assert_frame_equal(back.links, links, check_dtype=False)
    (tmp_path / "parquet" / "links.parquet").unlink()   # a result saved before links existed
    assert geosim.load_result(tmp_path / "parquet").links.empty
    single = geosim.run(closed_world(n_jobs=3))
    assert single.links.empty and "forward_mbps" in single.links
