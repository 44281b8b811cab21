"""Declared parameters: the checker, and the declarations of every registered scheduler.

Scenario keys and scheduler parameters share :class:`geosim.params.Field` and
:func:`geosim.params.check_value`. Every registered scheduler (plugins included) declares
exactly its ``__init__`` keywords with their defaults, and refuses a value outside a
declaration in one line naming the parameter: as a ``ValueError`` when built directly,
as a :class:`~geosim.errors.GeosimError` through :func:`make_scheduler`.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from test_conformance import VARIANTS

from geosim import GeosimError, make_scheduler, registered
from geosim.params import MAX_FLOAT, MAX_INT, Field, check_value, values_outside
from geosim.schedulers import Scheduler
from geosim.schedulers.base import Parametrised
from geosim.schedulers.compose import Composite, Locality, Part, Redundancy
from geosim.schedulers.dolly import Dolly
from geosim.schedulers.fifo import FIFO
from geosim.schedulers.laps import LAPS, LAPSR
from geosim.testing import check_params

SCHEDULERS = registered()
BUILT_IN = sorted(n for n, cls in SCHEDULERS.items() if cls.__module__.startswith("geosim."))


# --- the checker -------------------------------------------------------------------------------

@pytest.mark.parametrize(("fld", "value", "problem"), [
    (Field(1.0, "float", lo=0, lo_open=True), 0, "must be > 0"),
    (Field(1.0, "float", lo=0), -0.5, "must be >= 0"),
    (Field(0.5, "float", lo=0, hi=1, hi_open=True), 1.0, "must be < 1"),
    (Field(0.5, "float", lo=0, hi=1), 1.5, "must be <= 1"),
    (Field(1.0, "float", lo=1e-6), 1e-7, "must be >= 1e-06"),
    (Field(1.0, "float", lo=0), 1e300, "must be <= 1e+15"),
    (Field(1.0, "float"), -1e300, "must be >= -1e+15"),
    (Field(1, "int", lo=0), 2**40, "must be <= 2147483647"),
    (Field(1.0, "float", lo=0), math.nan, "must not be NaN"),
    (Field(1.0, "float", lo=0, hi=2), math.inf, "must be <= 2"),
    (Field(1.0, "float", lo=0, hi=math.inf), math.inf, "must be finite"),
    (Field(1.0, "float", lo=0), 10**400, "must be a finite number"),
    (Field(1.0, "float"), "1", "must be a number"),
    (Field(1.0, "float"), True, "must be a number"),
    (Field(1, "int"), 2.0, "must be a whole number"),
    (Field(True, "bool"), "true", "must be true or false"),
    (Field("a", "str", choices=("a", "b")), "c", "must be one of a, b"),
    (Field("a", "str"), 1, "must be a string"),
    (Field([1, 2], "irange", lo=1), [1.5, 2], "must be whole numbers"),
    (Field([1, 2], "range", lo=0), [3, 2], "low must not exceed high"),
    (Field([1, 2], "range", lo=0), [1, 2, 3], "must be a number or a [low, high] pair"),
    (Field([], "list"), {}, "must be a list"),
    (Field({}, "table"), [], "must be a table"),
    (Field(None, "int", lo=1, optional=True), 0, "must be >= 1"),
])
def test_the_checker_names_the_rule(fld, value, problem):
    assert check_value(fld, value) == problem


@pytest.mark.parametrize(("fld", "value"), [
    (Field(1.0, "float", lo=0, hi=math.inf), 1e300),          # unbounded: no cap
    (Field(1, "int", lo=0, hi=math.inf), 2**62),
    (Field(1.0, "float", lo=0), MAX_FLOAT),
    (Field(1, "int", lo=0), MAX_INT),
    (Field(0.5, "float", lo=0, hi=1), np.float64(1.0)),
    (Field(1.0, "float", lo=0), 3),                            # an int is a number
    (Field(None, "int", lo=1, optional=True), None),
    (Field(None, "any"), object()),
    (Field([1, 2], "irange", lo=1), [1.0, 2]),
])
def test_the_checker_accepts(fld, value):
    assert check_value(fld, value) is None


def test_the_scenario_declares_its_keys_with_the_same_fields():
    from geosim import scenario
    from geosim.scenario import SCHEMA
    assert scenario.Field is Field
    assert all(isinstance(f, Field) for fields in SCHEMA.values() for f in fields.values())


@pytest.mark.parametrize("fld", [
    Field(1.0, "float", lo=0, lo_open=True, hi=math.inf), Field(0.5, "float", lo=0, hi=1),
    Field(2, "int", lo=1), Field(None, "int", lo=1, hi=math.inf, optional=True),
    Field("a", "str", choices=("a", "ab")), Field("x", "str"), Field(False, "bool"),
    Field([1, 2], "irange", lo=1, hi=10), Field([], "list"), Field({}, "table"),
])
def test_values_outside_are_refused_and_the_default_is_not(fld):
    assert check_value(fld, fld.default) is None
    outside = values_outside(fld)
    assert outside and all(check_value(fld, v) for v in outside)


# --- the declarations of every registered scheduler ---------------------------------------------

@pytest.mark.parametrize("name", sorted(SCHEDULERS))
def test_declarations_match_init(name):
    cls = SCHEDULERS[name]
    if name in BUILT_IN:
        assert sorted(cls.params) == sorted(cls.param_names())
    defaults = make_scheduler(name).get_params()
    for key, fld in cls.params.items():
        assert defaults[key] == fld.default, (name, key)


@pytest.mark.parametrize(("name", "params"), VARIANTS,
                         ids=[f"{n}-{i}" for i, (n, _) in enumerate(VARIANTS)])
def test_the_params_check_passes_with_every_conformance_variant(name, params):
    check_params(SCHEDULERS[name], params)


@pytest.mark.parametrize("name", BUILT_IN)
def test_built_in_numbers_have_explicit_upper_bounds(name):
    """A parameter without an upper bound says so (``hi=inf``): none is capped silently."""
    for key, fld in SCHEDULERS[name].params.items():
        if fld.kind in ("int", "float"):
            assert fld.hi is not None, (name, key)


@pytest.mark.parametrize("name", sorted(SCHEDULERS))
def test_values_outside_a_declaration_are_one_line_errors(name):
    cls = SCHEDULERS[name]
    for key, fld in cls.params.items():
        for bad in values_outside(fld):
            with pytest.raises(ValueError, match=rf"^{key} ") as direct:
                cls(**{key: bad})
            with pytest.raises(GeosimError) as made:
                make_scheduler(name, {key: bad})
            message = str(made.value)
            assert f"{name}: {direct.value}" in message and "\n" not in message


@pytest.mark.parametrize(("name", "params", "message"), [
    ("laps+r", {"beta": 1.0}, "beta must be < 1 (got 1.0)"),
    ("laps", {"beta": 0}, "beta must be > 0 (got 0)"),
    ("dolly", {"straggler_ratio": 0.5}, "straggler_ratio must be >= 1 (got 0.5)"),
    ("dolly", {"admission": "lifo"}, "admission must be one of smallest, arrival (got 'lifo')"),
    ("fair+r", {"max_copies": 0}, "max_copies must be >= 1 (got 0)"),
    ("mantri", {"delta": 1.0}, "delta must be < 1 (got 1.0)"),
    ("mantri", {"max_restarts": 1.5}, "max_restarts must be a whole number (got 1.5)"),
    ("late", {"monitoring_cost": 1.0}, "monitoring_cost must be < 1 (got 1.0)"),
    ("spark", {"order": "lifo"}, "order must be one of fifo, fair (got 'lifo')"),
    ("pingan", {"allocation": "greedy"},
     "allocation must be one of efa, jga, in any case (got 'greedy')"),
    ("srptms+c", {"epsilon": True}, "epsilon must be a number (got True)"),
    ("sca", {"price": -1}, "price must be >= 0 (got -1)"),
    ("iridium", {"chunk": 0}, "chunk must be > 0 (got 0)"),
])
def test_a_bad_value_is_refused_with_its_parameter_and_rule(name, params, message):
    where = f"scheduler: scheduler.params: {name}: "
    with pytest.raises(GeosimError, match=f"^{re.escape(where + message)}$"):
        make_scheduler(name, params)


@pytest.mark.parametrize(("name", "params"), [
    ("laps+r", {"beta": 1e-9}), ("laps+r", {"beta": 0.999999}),
    ("dolly", {"budget": 1.0, "straggle_target": 1, "straggler_ratio": 1, "delay": 0}),
    ("dolly", {"small_tasks": 10**12, "max_clones": 1}),
    ("mantri", {"delta": 0.0, "interval": 1e-9, "restart_margin": 0, "max_restarts": 0}),
    ("mantri", {"duplicate_factor": 1, "interval": 1e300}),
    ("pingan", {"principle": "Eff-Reli", "allocation": "JGA", "atoms": 2, "refresh": 0}),
    ("pingan", {"candidates": 2**40, "prior_seconds": 1e300}),
    ("late", {"slow_node_threshold": 0, "speculative_cap": 1, "min_runtime": 0}),
    ("late", {"monitoring": "reports", "report_to": 3, "monitoring_cost": 0.0}),
    ("spark+speculation", {"quantile": 0, "interval": 0, "multiplier": 1e-9}),
    ("srptms+c", {"epsilon": 1, "r": 0, "max_copies": 1}),
    ("srptms-offline", {"r": 1e300}), ("sca", {"price": 0, "max_copies": 1}),
    ("iridium", {"chunk": 1}), ("flowflex", {"objective": "minimax", "kind": "sla"}),
])
def test_accepted_ranges_are_unchanged(name, params):
    assert make_scheduler(name, params).get_params().items() >= params.items()


def test_direct_construction_checks_before_storing():
    with pytest.raises(ValueError, match=r"^straggler_ratio must be >= 1 \(got 0.5\)$"):
        Dolly(straggler_ratio=0.5)
    assert LAPS().get_params() == {"beta": 0.8, "reassign": "keep"}   # max_copies is fixed
    assert "max_copies" not in LAPS.params and "max_copies" in LAPSR.params


def test_get_params_has_one_implementation():
    for cls in (Scheduler, Part, Composite, *SCHEDULERS.values()):
        assert cls.get_params is Parametrised.get_params, cls


# --- the params check of geosim.testing ---------------------------------------------------------

def _scheduler(init, params=None, **attrs):
    """A FIFO subclass with ``init`` as ``__init__`` and ``params`` as declarations."""
    namespace = {"name": "checked", "__init__": init, **attrs}
    if params is not None:
        namespace["params"] = params
    return type("Checked", (FIFO,), namespace)


def _depth_init(self, depth: int = 1):
    self.validate_params(depth=depth)
    self.depth = depth


def _unchecked_init(self, depth: int = 1):
    self.depth = depth


DEPTH = Field(1, "int", lo=1, hi=math.inf)


@pytest.mark.parametrize(("cls", "message"), [
    (_scheduler(_depth_init, {"depth": DEPTH}), None),
    (_scheduler(_unchecked_init), None),                      # declarations are optional
    (_scheduler(_unchecked_init, {"depth": DEPTH}), "depth='1' breaks its declaration but "
                                                    "was accepted"),
    (_scheduler(_depth_init, {"depth": DEPTH, "width": Field(1, "int", lo=1, hi=math.inf)}),
     "width is declared but __init__ does not take it"),
    (_scheduler(lambda self, depth=1, width=2: _depth_init(self, depth) or setattr(
        self, "width", width), {"depth": DEPTH}),
     "width is a keyword argument of __init__ but is not declared"),
    (_scheduler(_depth_init, {"depth": Field(2, "int", lo=1, hi=math.inf)}),
     "depth is declared with default 2 but defaults to 1"),
    (_scheduler(_depth_init, {"depth": Field(0, "int", lo=1, hi=math.inf)}),
     "the declared default of depth, 0, breaks its rule"),
])
def test_the_params_check_holds_declarations_to_init(cls, message):
    if message is None:
        check_params(cls, {})
    else:
        with pytest.raises(AssertionError, match=f"^Checked, params: {message}"):
            check_params(cls, {})


def test_a_composite_part_without_declarations_passes_the_params_check():
    class Cloner(Redundancy):
        name = "cloner"

        def __init__(self, copies: int = 2):
            if not isinstance(copies, int) or copies < 1:
                raise ValueError(f"copies must be >= 1, got {copies}")
            self.copies = copies

    cls = type("Cloning", (Composite,), {"name": "cloning", "placement_cls": Locality,
                                         "redundancy_cls": Cloner, "default_order": "fair"})
    assert list(cls.params) == ["order"] and cls.params["order"].default == "fair"
    assert cls().get_params() == {"order": "fair", "copies": 2}
    check_params(cls, {"copies": 3})
