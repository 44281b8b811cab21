import json
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import tiny_workload
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from geosim.errors import GeosimError
from geosim.workload import (
    FACEBOOK_SIZE_MIX,
    MONTAGE_TYPES,
    WorkDistribution,
    Workload,
    concat,
    empty_workload,
    montage_jobs,
    montage_task_counts,
    poisson_arrivals,
    read_wfformat,
    single_work_jobs,
    wfformat_jobs,
)

FIXTURE = Path(__file__).parent / "data" / "montage-wfformat.json"
PROJ, DIFF, CONCAT, BGMODEL, BACKGROUND, IMGTBL, ADD, SHRINK, JPEG = range(9)
ARRAYS = ("arrival", "weight", "task_ptr", "task_work", "task_type", "edge_src", "edge_dst",
          "edge_size", "raw_ptr", "raw_cluster", "raw_size", "task_stage", "task_cv")
INPUT_CLUSTERS = np.arange(20, 60)


def same(a: Workload, b: Workload, names: bool = True) -> bool:
    return (a.type_names == b.type_names or not names) and all(
        np.array_equal(getattr(a, k), getattr(b, k)) for k in ARRAYS)


@pytest.fixture(scope="module")
def montage() -> Workload:
    return montage_jobs(400, 0.07, np.random.default_rng(7), input_clusters=INPUT_CLUSTERS)


@pytest.fixture(scope="module")
def small_montage() -> Workload:
    # every task count from 1 to 40, to exercise truncated and smallest full structures
    mix = tuple((1 / 40, t, t) for t in range(1, 41))
    return montage_jobs(400, 0.07, np.random.default_rng(8), input_clusters=INPUT_CLUSTERS,
                        size_mix=mix)


# ------------------------------------------------------------------------------- arrivals, work
def test_poisson_arrivals_mean_interarrival():
    rate = 0.07
    a = poisson_arrivals(20_000, rate, np.random.default_rng(1), start=5.0)
    gaps = np.diff(np.concatenate(([5.0], a)))
    assert a.shape == (20_000,) and (gaps > 0).all()
    assert gaps.mean() == pytest.approx(1 / rate, rel=0.03)
    assert gaps.std() == pytest.approx(1 / rate, rel=0.05)  # exponential: sd = mean


@pytest.mark.parametrize("rate", [0, -1.0, float("nan")])
def test_poisson_arrivals_rejects_bad_rate(rate):
    with pytest.raises(GeosimError, match="rate"):
        poisson_arrivals(10, rate, np.random.default_rng(0))


def test_pareto_sample_mean_and_min():
    rng = np.random.default_rng(2)
    paper = WorkDistribution.pareto(scale=20, shape=2)  # 002 §6: b=20, alpha=2, mean 40
    assert paper.mean == pytest.approx(40.0)
    x = paper.sample(50_000, rng)
    assert x.min() >= 20.0 and x.min() < 20.05
    assert np.median(x) == pytest.approx(20 * 2 ** 0.5, rel=0.02)  # (b/x)^a = 1/2
    d = WorkDistribution("pareto", {"scale": 20, "shape": 3})
    y = d.sample(200_000, rng)
    assert d.mean == pytest.approx(30.0)
    assert y.mean() == pytest.approx(30.0, rel=0.01)
    assert WorkDistribution.pareto(1, 1).mean == float("inf")


def test_other_work_distributions():
    rng = np.random.default_rng(3)
    e = WorkDistribution.exponential(5.0)
    assert e.sample(50_000, rng).mean() == pytest.approx(5.0, rel=0.02)
    d = WorkDistribution.deterministic(3.0)
    assert (d.sample(4, rng) == 3.0).all() and d.mean == 3.0
    u = WorkDistribution.uniform(2.0, 4.0)
    s = u.sample(10_000, rng)
    assert u.mean == 3.0 and s.min() >= 2.0 and s.max() <= 4.0


@pytest.mark.parametrize(("kind", "params", "match"), [
    ("weibull", {}, "unknown work distribution 'weibull'"),
    ("pareto", {"scale": 20}, "needs parameter 'shape'"),
    ("pareto", {"scale": 20, "shape": -2}, "parameter 'shape' must be > 0"),
    ("pareto", {"scale": 0, "shape": 2}, "parameter 'scale' must be > 0"),
    ("exponential", {"mean": 1, "rate": 2}, "no parameter 'rate'"),
    ("uniform", {"low": 3, "high": 2}, "'high'"),
])
def test_work_distribution_validation(kind, params, match):
    with pytest.raises(GeosimError, match=match):
        WorkDistribution(kind, params)


def test_single_work_jobs():
    rng = np.random.default_rng(4)
    w = single_work_jobs(1000, 1.5, WorkDistribution.pareto(20, 2), rng, input_cluster=3)
    w.validate(4)
    assert w.n_jobs == w.n_tasks == w.n_raw == 1000 and w.n_edges == 0
    assert (np.diff(w.task_ptr) == 1).all() and w.type_names == ("job",)
    assert (w.task_work >= 20).all()
    np.testing.assert_array_equal(w.raw_size, w.task_work)
    assert (w.raw_cluster == 3).all()
    np.testing.assert_array_equal(w.task_data, w.task_work)
    bare = single_work_jobs(10, 1.0, WorkDistribution.deterministic(2), rng)
    assert bare.n_raw == 0 and (bare.raw_ptr == 0).all()
    bare.validate(1)


# ------------------------------------------------------------------------------- Montage
def test_facebook_mix_fractions():
    t = montage_task_counts(5000, np.random.default_rng(5))
    assert t.min() >= 1 and t.max() <= 2000
    fractions = [np.mean(t <= 150), np.mean((t > 150) & (t <= 500)), np.mean(t > 500)]
    for got, (want, _, _) in zip(fractions, FACEBOOK_SIZE_MIX, strict=True):
        assert got == pytest.approx(want, abs=0.015)
    small = t[t <= 150]
    assert small.mean() == pytest.approx(75.5, rel=0.05)  # uniform within the class


def test_montage_task_counts_equal_drawn_sizes(montage):
    rng = np.random.default_rng(7)
    poisson_arrivals(400, 0.07, rng)  # the generator draws arrivals first, then sizes
    drawn = montage_task_counts(400, rng)
    np.testing.assert_array_equal(np.diff(montage.task_ptr), drawn)
    assert montage.type_names == MONTAGE_TYPES


@pytest.mark.parametrize("name", ["montage", "small_montage"])
def test_montage_is_a_forward_dag(name, request):
    w = request.getfixturevalue(name)
    w.validate(100)
    job = w.job_of_task
    assert (w.edge_src < w.edge_dst).all()
    assert (job[w.edge_src] == job[w.edge_dst]).all()
    assert (w.edge_size >= 0).all() and (w.task_work > 0).all()


def check_job(w: Workload, j: int) -> bool:
    """Check one job's Montage structure; return whether it has the full structure."""
    lo, hi = w.task_ptr[j], w.task_ptr[j + 1]
    types = w.task_type[lo:hi]
    emask = (w.edge_dst >= lo) & (w.edge_dst < hi)
    src, dst = w.edge_src[emask] - lo, w.edge_dst[emask] - lo
    has_child = np.zeros(hi - lo, bool)
    has_child[src] = True
    sinks = np.flatnonzero(~has_child)
    n_proj = int((types == PROJ).sum())
    full = bool((types == DIFF).any())
    assert n_proj >= 1
    if full:
        assert len(sinks) == 1 and types[sinks[0]] == JPEG
        assert n_proj == (types == BACKGROUND).sum()
        counts = np.bincount(types, minlength=9)
        assert (counts[[CONCAT, BGMODEL, IMGTBL, ADD, SHRINK, JPEG]] == 1).all()
        diffs = np.flatnonzero(types == DIFF)
        d = len(diffs)
        assert n_proj - 1 <= d <= 4 * n_proj
        pairs = []
        for k in diffs:
            parents = src[dst == k]
            assert len(parents) == 2 and (types[parents] == PROJ).all()
            pairs.append(tuple(sorted(parents)))
        assert len(set(pairs)) == d  # no two mDiffFit compare the same images
        a, b = np.array(pairs).T
        graph = coo_matrix((np.ones(d), (a, b)), shape=(n_proj, n_proj))
        assert connected_components(graph, directed=False)[0] == 1
        for k in np.flatnonzero(types == BACKGROUND):
            assert sorted(types[src[dst == k]]) == [PROJ, BGMODEL]
    else:
        assert len(sinks) == (n_proj if hi - lo == 1 else 1)
        if hi - lo >= 5:
            assert types[sinks[0]] == JPEG
    return full


def test_montage_structure(montage):
    full = [check_job(montage, j) for j in range(montage.n_jobs)]
    assert np.mean(full) > 0.85


def test_montage_truncated_structures(small_montage):
    w = small_montage
    sizes = np.diff(w.task_ptr)
    full = np.array([check_job(w, j) for j in range(w.n_jobs)])
    assert set(sizes[full]) == {11, 14, 15} | set(range(17, 41))
    assert set(sizes[~full]) == set(range(1, 11)) | {12, 13, 16}
    lone = np.flatnonzero(sizes == 1)
    assert len(lone) and (w.task_type[w.task_ptr[lone]] == PROJ).all()


def test_montage_overlap_ratio(montage):
    n_proj = np.bincount(montage.job_of_task[montage.task_type == PROJ],
                         minlength=montage.n_jobs)
    n_diff = np.bincount(montage.job_of_task[montage.task_type == DIFF],
                         minlength=montage.n_jobs)
    big = n_proj >= 30
    ratio = n_diff[big] / n_proj[big]
    assert ratio.min() >= 2.3 and ratio.max() <= 3.6


def test_montage_raw_inputs_on_input_clusters(montage):
    w = montage
    raw_per_task = np.diff(w.raw_ptr)
    np.testing.assert_array_equal(raw_per_task, (w.task_type == PROJ).astype(int))
    assert np.isin(w.raw_cluster, INPUT_CLUSTERS).all()
    job_of_raw = w.job_of_task[w.raw_task]
    per_job = [len(np.unique(w.raw_cluster[job_of_raw == j])) for j in range(w.n_jobs)]
    assert max(per_job) <= 4 and min(per_job) >= 1
    assert np.mean(np.array(per_job) > 1) > 0.5


def test_montage_input_probs():
    clusters = np.array([3, 5, 9, 11])
    w = montage_jobs(100, 0.1, np.random.default_rng(9), input_clusters=clusters,
                     input_probs=np.array([0.0, 1.0, 3.0, 0.0]))
    assert set(np.unique(w.raw_cluster)) <= {5, 9}
    w.validate(12)


def test_montage_same_seed_same_arrays():
    kw = {"input_clusters": INPUT_CLUSTERS}
    a = montage_jobs(150, 0.05, np.random.default_rng(11), **kw)
    b = montage_jobs(150, 0.05, np.random.default_rng(11), **kw)
    c = montage_jobs(150, 0.05, np.random.default_rng(12), **kw)
    assert same(a, b)
    assert not same(a, c)


def test_montage_sizes_and_work(montage):
    w = montage
    mips = 200.0
    assert w.raw_size.mean() == pytest.approx(4.222, rel=0.01)
    proj_out = w.edge_size[w.task_type[w.edge_src] == PROJ]
    assert np.median(proj_out) == pytest.approx(8.32, rel=0.02)  # image + area map
    fit = w.edge_size[w.task_type[w.edge_src] == DIFF]
    assert fit.max() < 0.001
    runtime = w.task_work / mips
    assert runtime[w.task_type == PROJ].mean() == pytest.approx(13.59, rel=0.03)
    assert runtime[w.task_type == DIFF].mean() == pytest.approx(10.59, rel=0.03)
    assert np.median(runtime[w.task_type == BACKGROUND]) < 30
    # the mosaic grows with the number of images: 173.5 MB per 50 images
    n_img = np.bincount(w.job_of_task[w.task_type == PROJ], minlength=w.n_jobs)
    e = (w.task_type[w.edge_src] == ADD) & (w.task_type[w.edge_dst] == SHRINK)
    to_shrink = w.edge_size[e]
    expected = 173.465 / 50 * n_img[w.job_of_task[w.edge_src[e]]]
    assert np.median(to_shrink / expected) == pytest.approx(1.0, abs=0.03)


def test_montage_deterministic_profile():
    kw = {"input_clusters": [0], "work_cv": 0.0, "size_cv": 0.0,
          "size_mix": ((1.0, 56, 56),), "overlap_ratio": 3.0}
    w = montage_jobs(3, 0.1, np.random.default_rng(0), **kw)
    w2 = montage_jobs(3, 0.1, np.random.default_rng(0), reference_mips=100.0, **kw)
    t = w.task_type
    n, d = (t == PROJ).sum() // 3, (t == DIFF).sum() // 3
    assert 2 * n + d + 6 == 56 and (t == PROJ).sum() == 3 * n
    assert n == 12 and d == 26  # 10 images on a 4-column grid have only 22 neighbour pairs
    np.testing.assert_allclose(w.task_work[t == PROJ], 13.59 * 200)
    np.testing.assert_allclose(w.raw_size, 4.22208)
    np.testing.assert_allclose(w2.task_work, w.task_work / 2)
    imgtbl_in = (w.task_type[w.edge_dst] == IMGTBL) & (w.task_type[w.edge_src] == BACKGROUND)
    add_in = (w.task_type[w.edge_dst] == ADD) & (w.task_type[w.edge_src] == BACKGROUND)
    np.testing.assert_allclose(w.edge_size[imgtbl_in], 4.162432)
    np.testing.assert_allclose(w.edge_size[add_in], 2 * 4.162432)


def test_montage_2000_jobs_is_fast():
    t0 = time.perf_counter()
    w = montage_jobs(2000, 0.15, np.random.default_rng(13), input_clusters=INPUT_CLUSTERS)
    elapsed = time.perf_counter() - t0
    assert w.n_jobs == 2000 and w.n_tasks > 150_000
    assert elapsed < 2.0


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"input_clusters": []}, "input_clusters"),
    ({"input_clusters": [1, -2]}, "input_clusters must be >= 0"),
    ({"input_clusters": [1, 2], "input_probs": [1.0]}, "input_probs"),
    ({"input_clusters": [1], "size_mix": ((0.5, 1, 10), (0.4, 11, 20))}, "sum to 1"),
    ({"input_clusters": [1], "size_mix": ((1.0, 0, 10),)}, "min_tasks"),
    ({"input_clusters": [1], "sites_per_job": (3, 2)}, "sites_per_job"),
    ({"input_clusters": [1], "work_cv": -0.1}, "work_cv"),
])
def test_montage_rejects_bad_parameters(kwargs, match):
    with pytest.raises(GeosimError, match=match):
        montage_jobs(5, 0.1, np.random.default_rng(0), **kwargs)


# ------------------------------------------------------------------------------- WfFormat
def test_read_wfformat_fixture():
    w = read_wfformat(FIXTURE, arrival=12.5, input_cluster=2, reference_mips=100.0)
    w.validate(3)
    assert w.n_jobs == 1 and w.arrival[0] == 12.5
    assert (w.n_tasks, w.n_edges, w.n_raw) == (19, 35, 21)
    assert set(w.type_names) == set(MONTAGE_TYPES)
    counts = {name: int((w.task_type == i).sum()) for i, name in enumerate(w.type_names)}
    assert counts == {"mProjectPP": 4, "mDiffFit": 5, "mConcatFit": 1, "mBgModel": 1,
                      "mBackground": 4, "mImgtbl": 1, "mAdd": 1, "mShrink": 1, "mJPEG": 1}
    types = np.array(w.type_names)[w.task_type]
    esrc, edst = types[w.edge_src], types[w.edge_dst]
    # mDiffFit reads both projected images and their area maps (2 x 4161600 B for image 1)
    first = (esrc == "mProjectPP") & (edst == "mDiffFit") & (w.edge_src == 0)
    np.testing.assert_allclose(w.edge_size[first], 2 * 4_161_600 / 1e6)
    assert ((esrc == "mProjectPP") & (edst == "mDiffFit")).sum() == 10
    # mImgtbl reads corrected images only, mAdd images and area maps
    img = w.edge_size[(esrc == "mBackground") & (edst == "mImgtbl")]
    add = w.edge_size[(esrc == "mBackground") & (edst == "mAdd")]
    np.testing.assert_allclose(add, 2 * img)
    np.testing.assert_allclose(w.edge_size[(esrc == "mAdd") & (edst == "mShrink")], 13.87872)
    np.testing.assert_allclose(w.edge_size[(esrc == "mDiffFit")], [268e-6, 275e-6, 281e-6,
                                                                    262e-6, 279e-6])
    # raw inputs: images and the region header for mProjectPP, tables for the aggregators
    assert (w.raw_cluster == 2).all()
    proj = np.flatnonzero(types == "mProjectPP")
    np.testing.assert_allclose(w.task_data[proj] - 4.22208, 305e-6, rtol=1e-9)
    np.testing.assert_allclose(w.task_work[proj], [1362.0, 1341.0, 1377.0, 1355.0])
    assert (types[w.job_of_task] is not None) and types[-1] == "mJPEG"


def _write(tmp_path: Path, doc: dict, name: str = "wf.json") -> Path:
    p = tmp_path / name
    p.write_text(json.dumps(doc))
    return p


def test_read_wfformat_orders_tasks_topologically(tmp_path):
    doc = json.loads(FIXTURE.read_text())
    doc["workflow"]["specification"]["tasks"].reverse()
    w = read_wfformat(_write(tmp_path, doc))
    ref = read_wfformat(FIXTURE)
    w.validate(1)
    assert (w.n_tasks, w.n_edges, w.n_raw) == (ref.n_tasks, ref.n_edges, ref.n_raw)
    assert w.edge_size.sum() == pytest.approx(ref.edge_size.sum())
    assert np.array(w.type_names)[w.task_type[0]] == "mProjectPP"


def test_read_wfformat_old_layout(tmp_path):
    doc = {"name": "old", "schemaVersion": "1.4", "workflow": {
        "makespanInSeconds": 10, "executedAt": "2020-01-01T00:00:00Z", "tasks": [
            {"name": "split_ID01", "id": "ID01", "category": "split", "parents": [],
             "runtimeInSeconds": 2.0,
             "files": [{"name": "in.txt", "link": "input", "sizeInBytes": 3_000_000},
                       {"name": "a.txt", "link": "output", "sizeInBytes": 1_000_000},
                       {"name": "b.txt", "link": "output", "sizeInBytes": 2_000_000}]},
            {"name": "count_ID02", "id": "ID02", "parents": ["split_ID01"], "runtime": 0.0,
             "files": [{"name": "a.txt", "link": "input", "size": 1_000_000},
                       {"name": "c.txt", "link": "output", "size": 10}]},
            {"name": "merge_ID03", "id": "ID03", "parents": ["ID02"], "runtime": 1.0,
             "files": [{"name": "b.txt", "link": "input", "size": 2_000_000},
                       {"name": "c.txt", "link": "input", "size": 10}]},
        ]}}
    w = read_wfformat(_write(tmp_path, doc), reference_mips=10.0)
    w.validate(1)
    assert w.type_names == ("split", "count", "merge")
    # merge reads b.txt from split (a data dependency not declared) and c.txt from count
    edges = {(int(s), int(d)): float(z) for s, d, z in zip(w.edge_src, w.edge_dst, w.edge_size,
                                                          strict=True)}
    assert edges == {(0, 1): 1.0, (0, 2): 2.0, (1, 2): 1e-5}
    np.testing.assert_allclose(w.raw_size, [3.0])
    np.testing.assert_allclose(w.task_work, [20.0, 0.01, 10.0])  # 0 s raised to min_runtime


def _fixture_doc() -> dict:
    return json.loads(FIXTURE.read_text())


@pytest.mark.parametrize(("mutate", "match"), [
    (lambda d: d["workflow"]["specification"]["tasks"][5]["parents"].append("ID9999999"),
     "unknown parent 'ID9999999'"),
    (lambda d: d["workflow"]["specification"]["tasks"][0]["parents"].append("ID0000019"),
     "dependency cycle"),
    (lambda d: d["workflow"]["specification"]["tasks"][0]["inputFiles"].append("nope.fits"),
     "unknown file 'nope.fits'"),
    (lambda d: d["workflow"]["execution"]["tasks"].pop(3), "no valid runtime"),
    (lambda d: d["workflow"]["specification"].pop("tasks"), "missing field 'tasks'"),
    (lambda d: d.pop("workflow"), "no 'workflow'"),
])
def test_read_wfformat_errors(tmp_path, mutate, match):
    doc = _fixture_doc()
    mutate(doc)
    path = _write(tmp_path, doc)
    with pytest.raises(GeosimError, match=match) as info:
        read_wfformat(path)
    assert info.value.source == str(path)
    assert "\n" not in str(info.value)


def test_read_wfformat_bad_json(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('{"workflow": [1, 2')
    with pytest.raises(GeosimError, match="not valid JSON") as info:
        read_wfformat(path)
    assert str(info.value).startswith(str(path))
    with pytest.raises(GeosimError, match="cannot read"):
        read_wfformat(tmp_path / "missing.json")


def test_wfformat_jobs(tmp_path):
    doc = _fixture_doc()
    doc["workflow"]["specification"]["tasks"] = doc["workflow"]["specification"]["tasks"][:4]
    for task in doc["workflow"]["specification"]["tasks"]:
        task["children"] = []
    four = _write(tmp_path, doc, "four.json")  # four mProjectPP only, no edges
    w = wfformat_jobs([FIXTURE, four], 9, 0.1, np.random.default_rng(3),
                      input_clusters=INPUT_CLUSTERS)
    w.validate(100)
    np.testing.assert_array_equal(np.diff(w.task_ptr), [19, 4] * 4 + [19])
    assert set(w.type_names) == set(MONTAGE_TYPES)
    assert np.isin(w.raw_cluster, INPUT_CLUSTERS).all()
    # the shared region header of a job is in one place
    j0 = w.raw_task < 19
    hdr = np.isclose(w.raw_size[j0], 305e-6)
    assert hdr.sum() == 9 and len(np.unique(w.raw_cluster[j0][hdr])) == 1
    again = wfformat_jobs([FIXTURE, four], 9, 0.1, np.random.default_rng(3),
                          input_clusters=INPUT_CLUSTERS)
    assert same(w, again)


# ------------------------------------------------------------------------------- validate


def test_validate_accepts_consistent_workload():
    w = tiny_workload()
    w.validate(3)
    np.testing.assert_array_equal(w.job_of_task, [0, 0, 1])
    np.testing.assert_allclose(w.task_data, [1.0, 3.5, 3.0])


def test_validate_names_missing_cluster():
    with pytest.raises(GeosimError, match=r"task 2 \(job 1\).*cluster 2") as info:
        tiny_workload().validate(2, source="scenario.toml")
    assert str(info.value).startswith("scenario.toml: ")
    w = montage_jobs(20, 0.1, np.random.default_rng(0), input_clusters=[7])
    with pytest.raises(GeosimError, match="cluster 7, which does not exist"):
        w.validate(5)


@pytest.mark.parametrize(("changes", "match"), [
    ({"edge_src": [1], "edge_dst": [2]}, "crosses jobs"),
    ({"edge_src": [1], "edge_dst": [0]}, "does not go forward"),
    ({"task_work": [10.0, 0.0, 30.0]}, "non-positive work"),
    ({"edge_size": [-1.0]}, "negative size"),
    ({"raw_size": [1.0, -2.0, 3.0]}, "negative size"),
    ({"arrival": [2.0, 1.0]}, "arrivals decrease"),
    ({"task_ptr": [0, 3, 3]}, "bad task_ptr"),
    ({"task_ptr": [0, 2, 4]}, "task_ptr must run"),
    ({"raw_ptr": [0, 2, 1, 3]}, "bad raw_ptr"),
    ({"raw_ptr": [0, 1, 2]}, "raw_ptr has length"),
    ({"task_type": [0, 2, 0]}, "has type 2"),
    ({"edge_src": [0, 0], "edge_dst": [1, 1], "edge_size": [1.0, 1.0]}, "duplicate edge"),
])
def test_validate_rejects(changes, match):
    with pytest.raises(GeosimError, match=match):
        tiny_workload(**changes).validate(3)


def test_workload_arrays_are_coerced_and_read_only():
    w = tiny_workload()
    assert w.task_ptr.dtype == np.int64 and w.task_type.dtype == np.int32
    assert w.task_work.dtype == np.float64
    with pytest.raises(ValueError):
        w.task_work[0] = 1.0
    with pytest.raises(GeosimError, match="not an integer"):
        tiny_workload(task_ptr=[0, 1.5, 3])


# ------------------------------------------------------------------------------- subset, concat
def test_subset(montage):
    s = montage.subset(37)
    s.validate(100)
    nt = montage.task_ptr[37]
    assert s.n_jobs == 37 and s.n_tasks == nt
    np.testing.assert_array_equal(s.task_work, montage.task_work[:nt])
    np.testing.assert_array_equal(s.task_data, montage.task_data[:nt])
    np.testing.assert_array_equal(s.raw_cluster, montage.raw_cluster[: montage.raw_ptr[nt]])
    assert s.n_edges == int((montage.edge_dst < nt).sum())
    assert same(montage.subset(montage.n_jobs), montage)
    assert montage.subset(0).n_tasks == 0
    with pytest.raises(GeosimError, match="first 401 jobs"):
        montage.subset(401)


def test_concat_reindexes_and_merges_types(montage):
    a = montage.subset(20)
    b = single_work_jobs(5, 1.0, WorkDistribution.deterministic(7.0),
                         np.random.default_rng(1), input_cluster=4, start=a.arrival[-1])
    c = concat([a, b])
    c.validate(100)
    assert c.type_names == MONTAGE_TYPES + ("job",)
    assert (c.n_jobs, c.n_tasks, c.n_edges, c.n_raw) == (
        25, a.n_tasks + 5, a.n_edges, a.n_raw + 5)
    assert same(c.subset(20), a, names=False)
    tail = np.arange(a.n_tasks, c.n_tasks)
    assert (c.task_type[tail] == len(MONTAGE_TYPES)).all()
    np.testing.assert_array_equal(c.task_data[tail], 7.0)
    assert same(concat([a]), a)
    assert concat([]).n_jobs == 0 and same(concat([empty_workload(), a]), a)


def test_concat_sort_by_arrival(montage):
    a, b = montage.subset(10), montage.subset(10)
    with pytest.raises(GeosimError, match="sort_by_arrival"):
        concat([a, b])
    c = concat([a, b], sort_by_arrival=True)
    c.validate(100)
    assert c.n_tasks == 2 * a.n_tasks and c.n_edges == 2 * a.n_edges
    # each job appears twice, in place: jobs 2i and 2i+1 are copies of job i
    for i in range(10):
        lo, hi = c.task_ptr[2 * i], c.task_ptr[2 * i + 2]
        mid = c.task_ptr[2 * i + 1]
        np.testing.assert_array_equal(c.task_work[lo:mid], c.task_work[mid:hi])
        np.testing.assert_array_equal(c.task_work[lo:mid],
                                      a.task_work[a.task_ptr[i]:a.task_ptr[i + 1]])
    np.testing.assert_allclose(np.sort(c.task_data), np.sort(np.tile(a.task_data, 2)))
