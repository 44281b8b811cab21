"""FlowFlex (004): Stage 1 chains, costs, the greedy, minisum/minimax planning, McNaughton,
lower bounds (against an LP and brute force), Fair/FIFO and the §3 generator."""

import itertools
import math

import numpy as np
import pytest
from scipy.optimize import linprog

from geosim.flowflex import (
    MINIMAX_METRICS,
    MINISUM_METRICS,
    Flow,
    GeneratorConfig,
    GridOptions,
    Instance,
    Job,
    LinearCost,
    Metric,
    PlannerOptions,
    StepCost,
    bisection_bound,
    build_relaxation,
    compare,
    critical_path_bound,
    deadlines_admissible,
    fair_schedule,
    fifo_schedule,
    flow_bound,
    generate_instance,
    greedy_schedule,
    horizon,
    integerize,
    lower_bound,
    lower_bounds,
    plan,
    plan_deadlines,
    shape_shift,
    simulate_plan,
    slot_usage,
    solve_relaxation,
    squashed_area_bound,
    wrap_around,
)

ALL_METRICS = list(MINISUM_METRICS.values()) + list(MINIMAX_METRICS.values())


def random_instance(rng, *, flows=(1, 3), jobs=(1, 3), slots=(2, 6), releases=False):
    """A small random instance with weights, deadlines and SLA steps."""
    p = int(rng.integers(slots[0], slots[1] + 1))
    out = []
    for _ in range(int(rng.integers(flows[0], flows[1] + 1))):
        n = int(rng.integers(jobs[0], jobs[1] + 1))
        jl = [Job(float(rng.uniform(0.5, 6.0)), int(rng.integers(1, p + 1))) for _ in range(n)]
        edges = [(a, b) for a in range(n) for b in range(a + 1, n) if rng.random() < 0.5]
        flow = Flow(tuple(jl), tuple(edges))
        q = max(flow.critical_path, flow.total_work / p)
        rel = float(rng.uniform(0, 4)) if releases and rng.random() < 0.5 else 0.0
        k = int(rng.integers(1, 4))
        times = rel + q + np.cumsum(rng.uniform(0, 3, k))
        out.append(Flow(tuple(jl), tuple(edges), release=rel,
                        weight=float(rng.integers(1, 11)),
                        deadline=float(rel + q + rng.uniform(0, 4)),
                        sla_times=tuple(times), sla_heights=tuple(rng.integers(1, 5, k))))
    return Instance(tuple(out), p)


def close_le(a, b, rel=1e-6):
    return a <= b + rel * max(1.0, abs(b))


# ---------------------------------------------------------------- brute force (exact OPT)

def brute_force(instance, metric):
    """Exact optimum by enumerating job completion orders, one LP each (releases 0).

    For a fixed order of job completions ``E_1 ≤ … ≤ E_n`` a job may run between the
    completion of its last predecessor and its own; the work ``x_{ik}`` of job ``i`` in
    ``[E_{k-1}, E_k]`` is at most ``δ_i (E_k − E_{k-1})`` and the total at most ``P`` times
    that, and McNaughton's rule makes any such amounts a schedule. Linear costs are LPs;
    step costs enumerate the set of flows that complete by their step time.
    """
    keys = instance.job_keys()
    n = len(keys)
    idx = {k: i for i, k in enumerate(keys)}
    preds = [[idx[(j, a)] for a, b in instance.flows[j].edges if b == i] for j, i in keys]
    costs = metric.costs(instance)
    m = instance.n_flows
    p = instance.slots
    best = math.inf
    linear = all(isinstance(c, LinearCost) for c in costs)
    for perm in itertools.permutations(range(n)):
        pos = {job: k for k, job in enumerate(perm)}
        if any(pos[a] > pos[i] for i in range(n) for a in preds[i]):
            continue
        first = [max((pos[a] + 1 for a in preds[i]), default=0) for i in range(n)]
        xvars = [(i, k) for i in range(n) for k in range(first[i], pos[i] + 1)]
        nv = n + len(xvars) + m + 1          # E, x, aux per flow, z
        xi = {v: n + t for t, v in enumerate(xvars)}
        aux = n + len(xvars)
        z = nv - 1
        a_ub, b_ub, a_eq, b_eq = [], [], [], []

        def row(nv=nv):
            return np.zeros(nv)

        for k in range(n):                   # E_k >= E_{k-1} >= 0
            r = row()
            r[k] = -1
            if k:
                r[k - 1] = 1
            a_ub.append(r)
            b_ub.append(0.0)
        for (i, k), col in xi.items():       # x_ik <= δ_i (E_k - E_{k-1})
            r = row()
            r[col] = 1
            r[k] -= instance.job(keys[i]).cap
            if k:
                r[k - 1] += instance.job(keys[i]).cap
            a_ub.append(r)
            b_ub.append(0.0)
        for k in range(n):                   # Σ_i x_ik <= P (E_k - E_{k-1})
            r = row()
            for (_, kk), col in xi.items():
                if kk == k:
                    r[col] = 1
            r[k] -= p
            if k:
                r[k - 1] += p
            a_ub.append(r)
            b_ub.append(0.0)
        for i in range(n):                   # all the work
            r = row()
            for (ii, _), col in xi.items():
                if ii == i:
                    r[col] = 1
            a_eq.append(r)
            b_eq.append(instance.job(keys[i]).size)
        last = [max(pos[idx[(j, i)]] for i in range(f.n_jobs))
                for j, f in enumerate(instance.flows)]
        bounds = [(0, None)] * nv
        if linear:
            c = row()
            for j, cf in enumerate(costs):   # aux_j >= w (F_j - offset), aux_j >= 0
                r = row()
                r[last[j]] = cf.weight
                r[aux + j] = -1
                a_ub.append(r)
                b_ub.append(cf.weight * cf.offset)
                if metric.minimax:
                    r = row()
                    r[aux + j] = 1
                    r[z] = -1
                    a_ub.append(r)
                    b_ub.append(0.0)
                else:
                    c[aux + j] = 1
            if metric.minimax:
                c[z] = 1
            res = linprog(c, A_ub=np.array(a_ub), b_ub=b_ub, A_eq=np.array(a_eq), b_eq=b_eq,
                          bounds=bounds, method="highs")
            assert res.status == 0
            best = min(best, res.fun)
            continue
        for on_time in itertools.product([False, True], repeat=m):
            extra_a, extra_b, value = [], [], []
            for j, cf in enumerate(costs):   # single-step costs: on time or the step
                (t,), (h,) = cf.times, cf.heights
                if on_time[j]:
                    r = row()
                    r[last[j]] = 1
                    extra_a.append(r)
                    extra_b.append(t)
                value.append(0.0 if on_time[j] else h)
            v = metric.aggregate(value)
            if v >= best:
                continue
            res = linprog(np.zeros(nv), A_ub=np.array(a_ub + extra_a), b_ub=b_ub + extra_b,
                          A_eq=np.array(a_eq), b_eq=b_eq, bounds=bounds, method="highs")
            if res.status == 0:
                best = v
    return best


def relaxation_lp(relax):
    """The relaxation as an LP solved by HiGHS: x_jk volume of flow j completing in cell k."""
    m, cells = relax.costs.shape
    allowed = np.argwhere(relax.allowed)
    c = np.array([relax.costs[j, k] / relax.volumes[j] for j, k in allowed])
    a_eq = np.zeros((m, len(allowed)))
    for t, (j, _) in enumerate(allowed):
        a_eq[j, t] = 1
    a_ub = np.zeros((cells - 1, len(allowed)))
    for t, (_, k) in enumerate(allowed):
        a_ub[k:, t] = 1                      # cumulative: cells 0..K
    b_ub = np.cumsum(relax.capacity)
    res = linprog(c, A_ub=a_ub, b_ub=b_ub, A_eq=a_eq, b_eq=relax.volumes, method="highs")
    assert res.status == 0
    return res.fun


# ---------------------------------------------------------------- model and Stage 1

def test_pseudo_jobs_keep_work_critical_path_and_job_work():
    inst = generate_instance(3)
    for flow in inst.flows:
        chain = flow.pseudo_jobs
        assert sum(pj.size for pj in chain) == pytest.approx(flow.total_work)
        assert sum(pj.duration for pj in chain) == pytest.approx(flow.critical_path)
        work = np.zeros(flow.n_jobs)
        for pj in chain:
            for i, c in pj.members:
                work[i] += c * pj.duration
        assert work == pytest.approx([j.size for j in flow.jobs])


def test_pseudo_jobs_of_a_fork():
    # 0 -> {1, 2}; 1 is long and narrow, 2 short and wide.
    flow = Flow((Job(2.0, 2), Job(6.0, 1), Job(4.0, 4)), ((0, 1), (0, 2)))
    assert flow.critical_path == pytest.approx(7.0)
    caps = [(pj.duration, pj.cap) for pj in flow.pseudo_jobs]
    assert caps == [(1.0, 2), (1.0, 5), (5.0, 1)]


def test_model_validation():
    with pytest.raises(ValueError, match="acyclic"):
        Flow((Job(1, 1), Job(1, 1)), ((0, 1), (1, 0)))
    with pytest.raises(ValueError, match="cap"):
        Instance((Flow((Job(1, 5),)),), 4)
    with pytest.raises(ValueError):
        Job(0.0, 1)


# ---------------------------------------------------------------- costs

def test_cost_functions_and_inverse():
    lin = LinearCost(2.0, 3.0)
    assert lin.cost(np.array([1.0, 3.0, 5.0])) == pytest.approx([0, 0, 4])
    assert lin.deadline(4.0) == 5.0 and lin.deadline(-1) == -math.inf
    step = StepCost([5.0, 2.0, 5.0], [1.0, 2.0, 3.0])
    assert step.times == (2.0, 5.0) and step.heights == (2.0, 4.0)
    assert step.cost(2.0) == 0 and step.cost_after(2.0) == 2.0 and step.cost(6.0) == 6.0
    assert step.deadline(1.0) == 2.0 and step.deadline(2.0) == 5.0
    assert step.deadline(6.0) == math.inf
    assert list(step.values()) == [0, 2, 6]
    for f in (lin, step):
        for bound in (0.0, 0.5, 2.0, 3.5, 5.0):
            d = f.deadline(bound)
            if math.isfinite(d):
                assert f.cost(d) <= bound < f.cost(d + 1e-6)


def test_metric_costs():
    flow = Flow((Job(10.0, 2),), release=1.0, weight=3.0, deadline=9.0, sla_times=(8.0, 12.0),
                sla_heights=(2.0, 5.0))
    c = 7.0
    expect = {"completion": 7, "weighted_completion": 21, "stretch": 0.6, "tardy": 0,
              "weighted_tardy": 0, "tardiness": 0, "weighted_tardiness": 0,
              "unit_sla": 0, "sla": 0}
    for kind, value in expect.items():
        assert Metric(kind).flow_cost(flow).cost(c) == pytest.approx(value)
    c = 13.0
    expect = {"weighted_tardy": 3, "weighted_tardiness": 12, "unit_sla": 2, "sla": 7}
    for kind, value in expect.items():
        assert Metric(kind).flow_cost(flow).cost(c) == pytest.approx(value)
    assert Metric("weighted_completion", from_release=True).flow_cost(flow).cost(c) == 36
    assert Metric("stretch", stretch_size="critical_path").flow_cost(flow).cost(c) == (
        pytest.approx(2.4))
    with pytest.raises(ValueError):
        Metric("tardy").flow_cost(Flow((Job(1, 1),)))


# ---------------------------------------------------------------- McNaughton

def test_wrap_around_counts_and_work():
    rng = np.random.default_rng(1)
    for _ in range(100):
        rates = rng.uniform(0, 3, int(rng.integers(1, 8))) * (rng.random(1) < 0.8)
        length = float(rng.uniform(0.1, 10))
        parts = wrap_around(rates, length)
        assert parts[0][0] == 0 and parts[-1][1] == pytest.approx(length)
        work = np.zeros(rates.size)
        for a, b, counts in parts:
            assert b > a
            assert np.all(counts >= np.floor(rates - 1e-9)) and np.all(counts <= np.ceil(rates))
            assert counts.sum() <= math.ceil(rates.sum() - 1e-9)
            work += counts * (b - a)
        assert work == pytest.approx(rates * length)


def test_shape_shift_piece():
    flow = Flow((Job(2.0, 2), Job(6.0, 1), Job(4.0, 4)), ((0, 1), (0, 2)))
    pj = flow.pseudo_jobs[1]                 # jobs 1 and 2, cap 5, duration 1
    out = shape_shift(pj, 10.0, 12.5, 2)     # 2 slots for 2.5: the work of the whole interval
    work = {i: sum(s * (b - a) for a, b, s in v) for i, v in out.items()}
    assert work == pytest.approx({1: 1.0, 2: 4.0})
    usage = slot_usage(out)
    assert max(u for *_, u in usage) <= 2
    assert all(s <= dict(pj.members)[i] for i, v in out.items() for *_, s in v)


def test_plan_slots_respect_caps_total_and_work():
    inst = generate_instance(5)
    p = plan(inst, MINISUM_METRICS["weighted_completion_time"])
    work = dict.fromkeys(inst.job_keys(), 0.0)
    for t0, t1, alloc in p.timeline():
        assert sum(alloc.values()) <= inst.slots
        for key, s in alloc.items():
            assert isinstance(s, int) and 0 < s <= inst.job(key).cap
            work[key] += s * (t1 - t0)
    for key, w in work.items():
        assert w == pytest.approx(inst.job(key).size, rel=1e-7)
    # The malleable rates before McNaughton carry the same work within the same caps.
    for key, pieces in p.job_rates.items():
        assert sum(r * (b - a) for a, b, r in pieces) == pytest.approx(inst.job(key).size)
        assert all(r <= inst.job(key).cap + 1e-9 for *_, r in pieces)


def test_integerize_fair_schedule():
    rng = np.random.default_rng(2)
    for _ in range(5):
        inst = random_instance(rng, flows=(2, 4), jobs=(1, 4))
        fair = fair_schedule(inst)
        caps = {k: inst.job(k).cap for k in inst.job_keys()}
        slots = integerize(fair.pieces, caps, inst.slots)
        assert all(isinstance(s, int) for v in slots.values() for *_, s in v)
        sim = simulate_plan(inst, slots)      # checks caps, P, precedence and work
        assert sim.flow_completion == pytest.approx(fair.flow_completion)


# ---------------------------------------------------------------- greedy (Theorem 2.2)

def test_greedy_meets_feasible_deadlines_within_two():
    rng = np.random.default_rng(3)
    for trial in range(20):
        inst = random_instance(rng, flows=(2, 5), jobs=(1, 5), releases=trial % 2 == 1)
        # Any schedule's completion times are feasible deadlines.
        d = (fair_schedule(inst) if trial % 3 else fifo_schedule(inst)).flow_completion
        assert deadlines_admissible(inst, d)
        p = plan_deadlines(inst, d)
        assert p.check.within_factor and p.check.factor == 2
        assert np.all(p.flow_completion <= 2 * d * (1 + 1e-9))
        assert p.lower_bound == 0


def test_greedy_on_job_chains_and_infeasible_report():
    chains = [[Job(4.0, 2), Job(2.0, 1)], [Job(6.0, 3)]]
    g = greedy_schedule(chains, [0.0, 0.0], [10.0, 3.0], slots=3)
    assert list(g.order) == [1, 0]
    # Chain 1 first on 3 slots ([0, 2)); chain 0 then 2 slots for 2, 1 slot for 2.
    assert g.completion == pytest.approx([6.0, 2.0])
    inst = Instance((Flow((Job(8.0, 2),)), Flow((Job(8.0, 2),))), 2)
    p = plan_deadlines(inst, [4.0, 4.0])      # 16 work on 2 slots by 4: impossible
    assert p.lower_bound == 1 and not p.check.all_met
    assert p.cost == 1 and p.check.within_factor


# ---------------------------------------------------------------- relaxation and bounds

@pytest.mark.parametrize(("unit", "max_cells"), [(1.0, 400), (0.005, 400), (0.005, 4)])
def test_min_cost_flow_matches_lp(unit, max_cells):
    rng = np.random.default_rng(4)
    for metric in (Metric("weighted_completion"), Metric("weighted_tardy"), Metric("sla"),
                   Metric("tardiness")):
        inst = random_instance(rng, flows=(2, 3), jobs=(1, 3), releases=True)
        grid = GridOptions(time_unit=unit, max_cells=max_cells)
        relax = build_relaxation(inst, metric.costs(inst), grid)
        assert relax.kind == ("uniform" if unit == 1.0 else "geometric")
        assert relax.times[0] == 0 and relax.times[-1] >= horizon(inst)
        breaks = [b for c in metric.costs(inst) for b in c.breakpoints()]
        assert all(np.isclose(relax.times, b).any() for b in breaks if 0 < b < horizon(inst))
        sol = solve_relaxation(relax)
        exact = relaxation_lp(relax)
        assert sol.value <= exact + 1e-9 * max(1, exact)
        assert sol.value >= exact - 1e-4 * max(1, exact)
        assert np.all(sol.units.sum(axis=1) == sol.supplies)


CASES = [("weighted_completion", "minisum"), ("completion", "minisum"),
         ("tardiness", "minisum"), ("weighted_tardy", "minisum"),
         ("weighted_completion", "minimax"), ("stretch", "minimax"),
         ("weighted_tardiness", "minimax"), ("weighted_tardy", "minimax")]


@pytest.mark.parametrize(("kind", "objective"), CASES)
def test_bounds_and_plan_against_brute_force(kind, objective):
    rng = np.random.default_rng(CASES.index((kind, objective)))
    metric = Metric(kind, objective)
    for _ in range(3):
        inst = random_instance(rng, flows=(2, 3), jobs=(1, 2))
        while sum(f.n_jobs for f in inst.flows) > 5:
            inst = random_instance(rng, flows=(2, 3), jobs=(1, 2))
        opt = brute_force(inst, metric)
        coarse = plan(inst, metric, PlannerOptions(grid=GridOptions(time_unit=0.005)))
        assert close_le(coarse.lower_bound, opt) and close_le(opt, coarse.cost)
        p = plan(inst, metric)
        assert close_le(p.lower_bound, opt)
        assert close_le(opt, p.cost)
        for other in (fair_schedule(inst), fifo_schedule(inst)):
            assert close_le(opt, metric.evaluate(inst, other.flow_completion))
        if kind == "weighted_completion" and objective == "minisum":
            assert p.cost <= 6 * opt * (1 + 1e-6)          # Corollary 2.4
        if kind in ("weighted_completion", "stretch") and objective == "minimax":
            assert p.cost <= 2 * opt * (1 + 3e-3)          # Corollary 2.6


def test_named_bounds():
    inst = Instance((Flow((Job(8.0, 2),), deadline=1.0), Flow((Job(4.0, 4),), deadline=9.0)), 4)
    cp = critical_path_bound(inst, Metric("completion"))
    assert cp == pytest.approx(4.0 + 1.0)
    area = squashed_area_bound(inst, Metric("completion"))
    assert area == pytest.approx(2.0 + 1.0 + 1.0)   # own areas 2 and 1, the last ends at >= 3
    assert squashed_area_bound(inst, Metric("completion", "minimax")) == pytest.approx(3.0)
    assert horizon(inst) == pytest.approx(4.0 + 3.0)
    lbs = lower_bounds(inst, Metric("tardiness", "minimax"))
    assert set(lbs) == {"critical_path", "squashed_area", "bisection"}
    assert lbs["bisection"] == pytest.approx(3.0, rel=1e-6)  # flow 0 cannot end before 4
    assert lower_bound(inst, Metric("tardiness")) == pytest.approx(3.0, rel=1e-5)
    assert bisection_bound(inst, Metric("tardy", "minimax")) == 1.0
    # Σ C: at best 4 + 2 (or 5 + 1); the per-flow bound is 4 + 1.
    assert 5.0 - 1e-5 <= flow_bound(inst, Metric("completion")) <= 6.0


def test_custom_costs_mixed():
    rng = np.random.default_rng(9)
    for objective in ("minisum", "minimax"):
        for _ in range(10):
            base = random_instance(rng, flows=(2, 4), jobs=(1, 3))
            flows = tuple(Flow(f.jobs, f.edges, cost=LinearCost(f.weight, f.deadline) if j % 2
                               else StepCost(f.sla_times, f.sla_heights))
                          for j, f in enumerate(base.flows))
            inst = Instance(flows, base.slots)
            metric = Metric("custom", objective)
            p = plan(inst, metric)
            assert p.cost == pytest.approx(metric.evaluate(inst, p.flow_completion))
            for s in (fair_schedule, fifo_schedule):
                assert close_le(p.lower_bound, metric.evaluate(inst, s(inst).flow_completion))
            assert close_le(p.lower_bound, p.cost)


def test_lower_bound_below_every_schedule_property():
    rng = np.random.default_rng(5)
    options = PlannerOptions(grid=GridOptions(time_unit=0.5))
    for trial in range(50):
        inst = random_instance(rng, flows=(1, 4), jobs=(1, 4), releases=trial % 3 == 0)
        metric = ALL_METRICS[trial % len(ALL_METRICS)]
        if trial % 5 == 4:
            metric = Metric(metric.kind, metric.objective, from_release=True)
        p = plan(inst, metric, options if trial % 2 else None)
        costs = [p.cost] + [metric.evaluate(inst, s(inst).flow_completion)
                            for s in (fair_schedule, fifo_schedule)]
        assert all(close_le(p.lower_bound, c) for c in costs), (trial, metric, p.lower_bounds)
        sim = simulate_plan(inst, p.job_slots)
        assert sim.flow_completion == pytest.approx(p.flow_completion)
        if not metric.minimax:                 # C_j <= (1 + 1/α) d_j (Theorem 2.3's 3 d_j)
            assert np.all(p.flow_completion <= p.check.factor * p.deadlines * (1 + 1e-3))


# ---------------------------------------------------------------- planner behaviour

def test_minimax_keeps_smallest_feasible_bound():
    inst = generate_instance(7, GeneratorConfig(flows=(6, 6), jobs=(3, 6)))
    metric = MINIMAX_METRICS["weighted_completion_time"]
    p = plan(inst, metric)
    d = p.details
    assert d["critical_path_bound"] <= d["two_speed_bound"] <= d["unit_speed_bound"]
    assert p.cost <= d["unit_speed_bound"] * (1 + 1e-9)
    assert p.cost == pytest.approx(metric.evaluate(inst, p.flow_completion))
    assert p.lower_bound <= p.cost and p.lower_bound >= d["critical_path_bound"]
    # The deadline problem at the final bound is met at unit speed when the bound passed.
    if d["bound"] == d["unit_speed_bound"]:
        assert p.check.all_met


def test_release_times_respected():
    rng = np.random.default_rng(8)
    inst = random_instance(rng, flows=(3, 3), jobs=(2, 3), releases=True)
    inst = Instance(tuple(Flow(f.jobs, f.edges, release=5.0 * j, weight=f.weight)
                          for j, f in enumerate(inst.flows)), inst.slots)
    for metric in (Metric("weighted_completion", from_release=True),
                   Metric("stretch", "minimax")):
        p = plan(inst, metric)
        for (j, _), pieces in p.job_slots.items():
            assert pieces[0][0] >= inst.flows[j].release - 1e-9


def test_simulate_plan_rejects_bad_plans():
    inst = Instance((Flow((Job(4.0, 2), Job(2.0, 2)), ((0, 1),)),), 2)
    good = {(0, 0): [(0.0, 2.0, 2)], (0, 1): [(2.0, 3.0, 2)]}
    assert simulate_plan(inst, good).flow_completion == pytest.approx([3.0])
    with pytest.raises(ValueError, match="cap"):
        simulate_plan(inst, {(0, 0): [(0.0, 4 / 3, 3)], (0, 1): [(2.0, 3.0, 2)]})
    with pytest.raises(ValueError, match="predecessor"):
        simulate_plan(inst, {(0, 0): [(0.0, 2.0, 2)], (0, 1): [(1.0, 2.0, 2)]})
    with pytest.raises(ValueError, match="work"):
        simulate_plan(inst, {(0, 0): [(0.0, 1.0, 2)], (0, 1): [(2.0, 3.0, 2)]})
    two = Instance((Flow((Job(2.0, 2),)), Flow((Job(2.0, 2),))), 3)
    with pytest.raises(ValueError, match="slots"):
        simulate_plan(two, {(0, 0): [(0.0, 1.0, 2)], (1, 0): [(0.0, 1.0, 2)]})


def test_fair_and_fifo_exact():
    inst = Instance((Flow((Job(4.0, 4),)), Flow((Job(8.0, 4),))), 4)
    fair, fifo = fair_schedule(inst), fifo_schedule(inst)
    assert fair.flow_completion == pytest.approx([2.0, 3.0])   # 2+2 slots, then 4
    assert fifo.flow_completion == pytest.approx([1.0, 3.0])   # 4 slots each in turn
    # Water-filling under caps: cap 1 keeps 1 slot, the other gets the rest.
    capped = Instance((Flow((Job(1.0, 1),)), Flow((Job(6.0, 4),))), 4)
    fair = fair_schedule(capped)
    assert fair.pieces[(1, 0)][0][2] == pytest.approx(3.0)
    assert fair.flow_completion == pytest.approx([1.0, 1.0 + 3.0 / 4.0])
    # Precedence and release: the successor waits, the late flow waits for its release.
    chain = Instance((Flow((Job(2.0, 2), Job(2.0, 2)), ((0, 1),)),
                      Flow((Job(1.0, 1),), release=10.0)), 2)
    for s in (fair_schedule(chain), fifo_schedule(chain)):
        assert s.flow_completion == pytest.approx([2.0, 11.0])
        simulate_plan(chain, s.pieces)


# ---------------------------------------------------------------- the §3 experiment

def test_generator_follows_section_3():
    inst = generate_instance(11)
    assert inst.slots == 25 and 5 <= inst.n_flows <= 20
    for f in inst.flows:
        n = f.n_jobs
        assert 2 <= n <= 20 and f.release == 0
        assert all(a < b for a, b in f.edges)
        assert all(f.successors[i] for i in range(n - 1))     # every sink precedes the last
        assert f.weight in range(1, 11)
        assert f.deadline >= max(f.critical_path, f.total_work / 25) - 1e-9
        assert 1 <= len(f.sla_times) <= 5 and list(f.sla_times) == sorted(f.sla_times)
        assert all(1 <= j.cap <= 25 for j in f.jobs)
    again = generate_instance(np.random.default_rng(11))
    assert [f.total_work for f in again.flows] == [f.total_work for f in inst.flows]


def test_section_3_ratios_per_metric():
    inst = generate_instance(12)
    for metric in ALL_METRICS:
        cmp = compare(inst, metric)
        for name, ratio in cmp.ratios.items():
            assert math.isfinite(ratio) and ratio >= 1 - 1e-9, (metric.name, name, ratio)
        assert cmp.costs["flowflex"] == cmp.plan.cost
