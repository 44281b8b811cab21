"""A GeoModel's Mesa scenario object (Mesa 3.4 and later), so SolaraViz can re-create it.

From Mesa 3.4 on, ``model.scenario`` is Mesa's own scenario object, and SolaraViz's Reset
re-creates a model whose ``__init__`` takes ``scenario`` by passing a new object of the
same scenario class as ``scenario``, built from the model parameters that are that
class's fields. A GeoModel's Mesa scenario is therefore a :class:`ScenarioFile`, whose
one field, ``scenario_file``, is the geosim scenario the model was built from (a TOML
path, a mapping or a :class:`~geosim.scenario.Scenario`); GeoModel takes such an object
as its ``scenario`` and builds from its ``scenario_file``. A SolaraViz model parameter
named ``scenario_file`` then chooses the scenario file on Mesa 3.4+, where ``scenario``
does on Mesa 3.3 (:data:`SCENARIO_PARAM`). With Mesa 3.3 nothing here is used.
"""

from __future__ import annotations

from typing import Any

from geosim.errors import GeosimError

try:
    from mesa.experimental.scenarios import Scenario as MesaScenario
except ImportError:          # Mesa 3.3: no scenario objects
    MesaScenario = None

#: The name of the model parameter that chooses the scenario in Mesa's SolaraViz.
SCENARIO_PARAM = "scenario" if MesaScenario is None else "scenario_file"

if MesaScenario is not None:
    class ScenarioFile(MesaScenario):
        """Mesa's scenario object of a GeoModel: the geosim scenario it is built from."""

        scenario_file: Any = None
else:
    ScenarioFile = None


def geosim_scenario(scenario: Any) -> Any:
    """The geosim scenario argument behind ``scenario`` (Mesa's object: its field).

    Raises:
        GeosimError: A Mesa scenario object without a ``scenario_file``.
    """
    if MesaScenario is None or not isinstance(scenario, MesaScenario):
        return scenario
    source = getattr(scenario, "scenario_file", None)
    if source is None:
        raise GeosimError("Mesa's scenario object names no geosim scenario: give GeoModel "
                          "a scenario file, mapping or Scenario (or set scenario_file)")
    return source


def attach(model: Any, source: Any, seed: int) -> None:
    """Make ``model.scenario`` a :class:`ScenarioFile` of ``source`` (Mesa 3.4+ only)."""
    if ScenarioFile is not None:
        model.scenario = ScenarioFile(rng=seed, scenario_file=source)
