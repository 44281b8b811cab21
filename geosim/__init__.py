"""geosim: agent-based simulation of geo-distributed cloud-edge data analytics.

Quick use::

    import geosim
    scenario = geosim.load_scenario("scenarios/quickstart.toml",
                                    overrides={"workload.arrival_rate": 0.05})
    result = geosim.run(scenario, scheduler="fair", seed=3)
    result.jobs["flowtime"].mean(); result.save("results/")
"""

__version__ = "0.1.0"

from geosim.errors import GeosimError  # noqa: E402
from geosim.experiment import Comparison, Sweep, compare, sweep  # noqa: E402
from geosim.model import GeoModel, run  # noqa: E402
from geosim.results import Result, load_result  # noqa: E402
from geosim.scenario import Scenario, load_scenario  # noqa: E402
from geosim.schedulers import Scheduler, make_scheduler, register, registered  # noqa: E402

__all__ = [
    "Comparison", "GeoModel", "GeosimError", "Result", "Scenario", "Scheduler", "Sweep",
    "__version__", "compare", "load_result", "load_scenario", "make_scheduler", "register",
    "registered", "run", "sweep",
]
