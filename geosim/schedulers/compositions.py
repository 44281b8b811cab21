"""The registered compositions of a placement and a redundancy rule (003 §6.1 baselines).

One line per registered name; the parts live in their own modules and
:mod:`geosim.schedulers.compose` explains how a composite decides.
"""

from __future__ import annotations

from geosim.schedulers.compose import Locality, composite
from geosim.schedulers.late import LATE
from geosim.schedulers.mantri import Mantri

composite("mantri", Locality, Mantri,
          "Mantri (OSDI 2010): restart or duplicate outliers when t_rem beats t_new")
composite("late", Locality, LATE,
          "LATE (OSDI 2008): back up the slow tasks with the longest time left, 10% cap")
