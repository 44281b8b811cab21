"""Scenario loading, overrides and every kind of bad input."""

from __future__ import annotations

import copy
from pathlib import Path

import networkx as nx
import numpy as np
import pandas as pd
import pytest

from geosim import GeoModel, GeosimError, load_scenario
from geosim.scenario import parse_override

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = sorted((ROOT / "scenarios").glob("*.toml"))


@pytest.mark.parametrize("path", SHIPPED, ids=[p.stem for p in SHIPPED])
def test_shipped_scenarios_validate(path):
    scenario = load_scenario(path)
    assert scenario["run"]["name"] == path.stem


def test_pingan_scenarios_follow_003():
    for load, rate in (("light", 0.02), ("medium", 0.07), ("heavy", 0.15)):
        s = load_scenario(ROOT / "scenarios" / f"pingan-{load}.toml")
        assert s.get("workload.arrival_rate") == rate
        assert s.get("workload.n_jobs") == 2000
        assert s.get("tiers.large.slots") == [500, 1500]
        assert s.get("tiers.small.outage_probability") == [0.05, 0.5]
    model = GeoModel(load_scenario(ROOT / "scenarios" / "pingan-medium.toml",
                                   {"workload.n_jobs": 5}))
    assert model.world.n_clusters == 100
    assert list(__import__("numpy").bincount(model.world.tier)) == [5, 20, 75]


def test_calibrated_scenarios_change_compute_and_wan_only():
    # The calibrated world (docs/results.md) is 003's at each load with shorter tasks and
    # a slower WAN: every other key, defaults included, is the shipped scenario's.
    for load in ("light", "medium", "heavy"):
        expected = copy.deepcopy(load_scenario(ROOT / "scenarios" / f"pingan-{load}.toml").data)
        expected["run"]["name"] = f"pingan-calibrated-{load}"
        expected["workload"]["reference_mips"] = 6.25
        expected["links"]["bandwidth_scale"] = 0.6
        calibrated = load_scenario(ROOT / "scenarios" / f"pingan-calibrated-{load}.toml")
        assert calibrated.data == expected


def test_defaults_and_overrides():
    s = load_scenario({}, {"workload.arrival_rate": "0.11", "run.seed": 9,
                           "scheduler.params": {"multitasking": True}})
    assert s.get("workload.arrival_rate") == 0.11
    assert s.get("run.seed") == 9
    assert s.get("scheduler.params") == {"multitasking": True}
    assert s.get("availability.available_shape") == 0.34
    again = load_scenario(s.data)   # a complete scenario round-trips
    assert again.data == s.data


def test_to_toml_round_trips(tmp_path):
    s = load_scenario(ROOT / "scenarios" / "quickstart.toml")
    path = tmp_path / "full.toml"
    path.write_text(s.to_toml())
    assert load_scenario(path).data == s.data


def test_parse_override():
    assert parse_override("workload.arrival_rate=0.07") == ("workload.arrival_rate", 0.07)
    assert parse_override("scheduler.name=srpt") == ("scheduler.name", "srpt")
    assert parse_override("tiers.small.slots=[1, 2]") == ("tiers.small.slots", [1, 2])
    with pytest.raises(GeosimError, match="KEY=VALUE"):
        parse_override("novalue")


def write(tmp_path, text, name="s.toml"):
    path = tmp_path / name
    path.write_text(text)
    return path


BAD = [
    ("[run\nseed = 1", "malformed TOML"),
    ("[run]\nspeed = 1", "run.speed: unknown key"),
    ("[runs]\nseed = 1", "unknown section"),
    ("[workload]\narrival_rate = -0.5", "workload.arrival_rate: must be > 0"),
    ("[workload]\narrival_rate = \"fast\"", "workload.arrival_rate: must be a number"),
    ("[tiers.small]\noutage_probability = [0.1, 1.5]", "outage_probability: must be <= 1"),
    ("[tiers.small]\nslots = [50, 10]", "tiers.small.slots: low must not exceed high"),
    ("[tiers.small]\nslots = 2.5", "must be whole numbers"),
    ("[availability]\nenabled = 1", "availability.enabled: must be true or false"),
    ("[topology]\ngenerator = \"brite\"", "topology.generator: must be one of"),
    ("[topology]\ntier_shares = [0.5, 0.5, 0.5]", "topology.tier_shares"),
    ("[topology]\ngenerator = \"file\"\nfile = \"nope.graphml\"", "topology file not found"),
    ("[workload]\nkind = \"wfformat\"", "workload.files"),
]


@pytest.mark.parametrize(("text", "message"), BAD, ids=[m for _, m in BAD])
def test_bad_scenarios_name_file_key_and_value(tmp_path, text, message):
    path = write(tmp_path, text)
    with pytest.raises(GeosimError) as info:
        load_scenario(path)
    text = str(info.value)
    assert message in text
    assert str(path) in text
    assert "\n" not in text


def test_missing_scenario_file(tmp_path):
    with pytest.raises(GeosimError, match="scenario file not found"):
        load_scenario(tmp_path / "absent.toml")


def test_unknown_override_key():
    with pytest.raises(GeosimError, match="unknown key 'workload.rate'"):
        load_scenario({}, {"workload.rate": 1})


def test_unknown_scheduler_and_bad_params():
    with pytest.raises(GeosimError, match="unknown scheduler 'pingpong'"):
        GeoModel(load_scenario({"scheduler": {"name": "pingpong"},
                                "workload": {"n_jobs": 2}}))
    with pytest.raises(GeosimError, match="scheduler.params: fair: .*unexpected keyword"):
        GeoModel(load_scenario({"scheduler": {"name": "fair", "params": {"epsilon": 0.5}},
                                "workload": {"n_jobs": 2}}))
    with pytest.raises(GeosimError, match="multitasking must be true or false"):
        GeoModel(load_scenario({"scheduler": {"name": "fair", "params": {"multitasking": 3}},
                                "workload": {"n_jobs": 2}}))


def test_input_on_a_cluster_that_does_not_exist():
    s = load_scenario({"topology": {"generator": "single"},
                       "workload": {"kind": "single", "n_jobs": 3, "input_cluster": 4}})
    with pytest.raises(GeosimError, match="workload.input_cluster: input on cluster 4"):
        GeoModel(s)


def test_disconnected_and_malformed_topology_files(tmp_path):
    graph = nx.Graph([(0, 1), (2, 3)])
    nx.write_graphml(graph, tmp_path / "split.graphml")
    s = write(tmp_path, "[topology]\ngenerator = \"file\"\nfile = \"split.graphml\"")
    with pytest.raises(GeosimError, match="split.graphml: .*disconnected"):
        GeoModel(load_scenario(s, {"workload.n_jobs": 1}))
    (tmp_path / "bad.graphml").write_text("<graphml><graph")
    s = write(tmp_path, "[topology]\ngenerator = \"file\"\nfile = \"bad.graphml\"")
    with pytest.raises(GeosimError, match="bad.graphml"):
        GeoModel(load_scenario(s, {"workload.n_jobs": 1}))


def test_shipped_brite_topology_runs():
    s = load_scenario({"topology": {"generator": "file",
                                    "file": str(ROOT / "topologies" / "small.brite")},
                       "workload": {"n_jobs": 3, "large_max_tasks": 600}})
    result = GeoModel(s).run()
    assert result.jobs["finished"].all()
    assert result.clusters["cluster"].nunique() == 8


def test_wfformat_workload_replays_a_real_instance(tmp_path):
    data = Path(__file__).parent / "data" / "montage-wfformat.json"
    s = load_scenario({"topology": {"n_clusters": 6},
                       "workload": {"kind": "wfformat", "files": [str(data)], "n_jobs": 3,
                                    "arrival_rate": 0.01}})
    model = GeoModel(s)
    result = model.run()
    assert result.jobs["finished"].all()
    assert (result.jobs["tasks"] == 19).all()
    assert "mProjectPP" in set(result.tasks["type"])


def test_outage_length_distributions():
    for kind in ("gamma", "exponential", "deterministic"):
        s = load_scenario({"topology": {"n_clusters": 5}, "outages": {"duration": kind},
                           "workload": {"n_jobs": 2, "large_max_tasks": 600}})
        assert GeoModel(s).run().jobs["finished"].all()
    with pytest.raises(GeosimError, match="outages.duration: must be one of"):
        load_scenario({"outages": {"duration": "weibull"}})


def test_readme_documents_every_scenario_key():
    from geosim.scenario import SCHEMA
    readme = (ROOT / "README.md").read_text()
    for section, fields in SCHEMA.items():
        assert f"| `[{section}]` |" in readme, section
        for key, field in fields.items():
            assert f"| `{key}` |" in readme and field.doc in readme, f"{section}.{key}"


def test_scheduler_defaults_fill_what_a_spec_leaves_out():
    scenario = load_scenario("scenarios/pingan-heavy.toml", overrides={"workload.n_jobs": 2})
    assert GeoModel(scenario, "pingan").policy.epsilon == 0.2          # the heavy-load ε
    assert GeoModel(scenario, "pingan[epsilon=0.5]").policy.epsilon == 0.5
    assert GeoModel(scenario, "pingan[principle=eff-eff]").policy.epsilon == 0.2
    assert GeoModel(scenario, "fifo").policy.get_params() == {}
    import tomllib
    saved = tomllib.loads(scenario.to_toml())
    assert saved["scheduler"]["defaults"] == {"pingan": {"epsilon": 0.2}}


def test_scheduler_defaults_must_be_tables_of_parameters():
    with pytest.raises(GeosimError, match="scheduler.defaults.pingan: must be a table"):
        load_scenario({"scheduler": {"defaults": {"pingan": 0.8}}})


def test_scarcity_axes_scale_what_was_drawn_and_nothing_else():
    from geosim.world import build_world, spawn_streams
    base = load_scenario(ROOT / "scenarios" / "pingan-medium.toml")
    ref = build_world(base, spawn_streams(1))
    scaled = build_world(base.with_overrides({"clusters.slot_scale": 0.05,
                                              "links.bandwidth_scale": 0.5,
                                              "outages.probability_scale": 3.0}),
                         spawn_streams(1))
    np.testing.assert_array_equal(scaled.slots, np.maximum(1, np.rint(ref.slots * 0.05)))
    np.testing.assert_allclose(scaled.gate, ref.gate * 0.5, rtol=1e-15)   # drawn slots' gates
    np.testing.assert_allclose(scaled.link_bw.mean, ref.link_bw.mean * 0.5, rtol=1e-15)
    np.testing.assert_allclose(scaled.outage_p, np.minimum(ref.outage_p * 3.0, 1.0))
    assert scaled.outage_p.max() == 1.0 and ref.outage_p.max() < 1.0
    np.testing.assert_array_equal(scaled.tier, ref.tier)
    np.testing.assert_array_equal(scaled.input_clusters, ref.input_clusters)


@pytest.mark.parametrize(("key", "value", "message"), [
    ("clusters.slot_scale", 0.0, "must be > 0"),
    ("links.bandwidth_scale", -1.0, "must be > 0"),
    ("outages.probability_scale", -0.5, "must be >= 0"),
])
def test_scarcity_axes_refuse_bad_values(key, value, message):
    with pytest.raises(GeosimError, match=f"{key}: {message}"):
        load_scenario(ROOT / "scenarios" / "pingan-medium.toml", {key: value})


def test_an_error_naming_a_key_with_a_line_break_stays_one_line():
    with pytest.raises(GeosimError) as err:
        load_scenario({"availability": {"\r": float("nan")}})
    assert str(err.value).splitlines() == [r"<dict>: availability.\r: unknown key (value nan)"]


def test_aliases_say_what_a_name_runs():
    aliases = {"srpt": "srpt+r[max_copies=1,reassign=random]", "laps": "laps[reassign=random]"}
    s = load_scenario("scenarios/redundancy-gamma.toml",
                      {"workload.n_jobs": 3, "scheduler.aliases": aliases})
    policy = GeoModel(s, "srpt").policy
    assert policy.name == "srpt+r" and policy.get_params() == {"reassign": "random",
                                                                "max_copies": 1}
    # the spec's own parameters go on top of the alias's; an alias applies once
    assert GeoModel(s, "laps[beta=0.5]").policy.get_params() == {"beta": 0.5,
                                                                  "reassign": "random"}
    assert GeoModel(s, "srpt+r").policy.get_params()["reassign"] == "keep"
    for bad, match in [({"srpt": "nope"}, r"scheduler.aliases.srpt: unknown scheduler 'nope'"),
                       ({"srpt": 3}, r"scheduler.aliases.srpt: must be a scheduler spec"),
                       ({"srpt": "fifo[x"}, r"scheduler.aliases.srpt: .*bad scheduler spec")]:
        with pytest.raises(GeosimError, match=match):
            GeoModel(load_scenario({"scheduler": {"aliases": bad}}), "fifo")


def test_the_002_scenario_runs_002_s_model_and_baselines():
    s = load_scenario("scenarios/redundancy-gamma.toml", {"workload.n_jobs": 300})
    assert s["run"]["timing"] == "event"
    for name, twin in [("srpt", "srpt+r[max_copies=1,reassign=random]"),
                       ("fair", "fair+r[max_copies=1,reassign=random]"),
                       ("laps", "laps[reassign=random]")]:
        a = GeoModel(s, name).run().jobs
        b = GeoModel(s, twin).run().jobs
        pd.testing.assert_frame_equal(a, b)


def test_a_comparison_under_aliases_resumes_without_running_again(tmp_path, capsys):
    from geosim.cli import main
    argv = ["compare", "scenarios/redundancy-gamma.toml", "--set", "workload.n_jobs=200",
            "--schedulers", "srpt,laps[beta=0.5]", "--out", str(tmp_path / "cmp"),
            "--no-progress", "--jobs-parallel", "1"]
    assert main(argv) == 0
    first = capsys.readouterr()
    assert main(argv) == 0
    again = capsys.readouterr()
    assert "damaged" not in again.err and "runs done" not in again.err
    assert again.out == first.out
    meta = (tmp_path / "cmp" / "runs" / "srpt" / "seed-1" / "meta.json").read_text()
    assert '"scheduler": "srpt+r"' in meta and '"reassign": "random"' in meta


def test_edge_10k_keeps_the_offered_load_per_slot_and_validates(capsys):
    from geosim.cli import main
    edge = load_scenario(ROOT / "scenarios" / "edge-10k.toml")
    medium = load_scenario(ROOT / "scenarios" / "pingan-medium.toml")
    assert edge.get("topology.n_clusters") == 10_000 and edge.get("workload.n_jobs") == 20_000
    assert edge.get("clusters.slot_streams") == "keyed" and edge.get("run.record_interval") == 0
    assert main(["validate", str(ROOT / "scenarios" / "edge-10k.toml")]) == 0
    printed = capsys.readouterr().out
    slots = int(printed.split(" slots,")[0].split()[-1])
    # pingan-medium: 12 356 slots for seed 1 (100 clusters) at λ = 0.07
    per_slot = edge.get("workload.arrival_rate") / slots
    assert per_slot == pytest.approx(medium.get("workload.arrival_rate") / 12_356, rel=0.05)


def test_record_interval_is_zero_or_at_least_a_microsecond():
    assert load_scenario({"run": {"record_interval": 0}}).get("run.record_interval") == 0
    for bad in (1e-9, -1.0):
        with pytest.raises(GeosimError, match="run.record_interval"):
            load_scenario({"run": {"record_interval": bad}})
    with pytest.raises(GeosimError, match="clusters.slot_streams: must be one of"):
        load_scenario({"clusters": {"slot_streams": "lazy"}})
