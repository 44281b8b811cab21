"""geosim: agent-based simulation of geo-distributed cloud-edge data analytics.

Quick use::

    import geosim
    scenario = geosim.load_scenario("scenarios/quickstart.toml",
                                    overrides={"workload.arrival_rate": 0.05})
    result = geosim.run(scenario, scheduler="fair", seed=3)
    result.jobs["flowtime"].mean(); result.save("results/")
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

from geosim.version import __version__

# The public names load on first use (PEP 562), so that ``geosim --help``, a bad
# scenario's one-line error and ``import geosim.errors`` do not pay for NumPy, SciPy,
# pandas, Numba and Mesa.
_EXPORTS = {
    "Comparison": "geosim.experiment", "Sweep": "geosim.experiment",
    "compare": "geosim.experiment", "sweep": "geosim.experiment",
    "GeoModel": "geosim.model", "run": "geosim.model",
    "GeosimError": "geosim.errors",
    "Result": "geosim.results", "load_result": "geosim.results",
    "Scenario": "geosim.scenario", "load_scenario": "geosim.scenario",
    "Scheduler": "geosim.schedulers", "make_scheduler": "geosim.schedulers",
    "register": "geosim.schedulers", "registered": "geosim.schedulers",
}

__all__ = [
    "Comparison", "GeoModel", "GeosimError", "Result", "Scenario", "Scheduler", "Sweep",
    "__version__", "compare", "load_result", "load_scenario", "make_scheduler", "register",
    "registered", "run", "sweep",
]

if TYPE_CHECKING:  # pragma: no cover
    from geosim.errors import GeosimError
    from geosim.experiment import Comparison, Sweep, compare, sweep
    from geosim.model import GeoModel, run
    from geosim.results import Result, load_result
    from geosim.scenario import Scenario, load_scenario
    from geosim.schedulers import Scheduler, make_scheduler, register, registered


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'geosim' has no attribute {name!r}")
    value = getattr(import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
