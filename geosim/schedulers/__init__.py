"""Scheduling policies, registered by name.

Importing this package registers every built-in scheduler; ``registered()`` lists them
and ``make_scheduler(name, params)`` builds one.
"""

from geosim.schedulers import (  # noqa: F401
    compositions,
    fair,
    fair_r,
    fifo,
    flow_fair,
    flowflex,
    laps,
    pingan,
    smart_cloning,
    srpt,
    srpt_r,
    srptms_c,
    srptms_offline,
)
from geosim.schedulers.base import Scheduler, make_scheduler, register, registered

__all__ = ["Scheduler", "make_scheduler", "register", "registered"]
