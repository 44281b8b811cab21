"""Scheduling policies, registered by name.

Importing this package registers every built-in scheduler; ``registered()`` lists them
with the plugins of the ``geosim.schedulers`` entry points (loaded on first use),
``unavailable()`` the plugins that could not be loaded and why, and
``make_scheduler(name, params)`` builds one.
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
from geosim.schedulers.base import (
    Scheduler,
    make_scheduler,
    register,
    registered,
    unavailable,
)

__all__ = ["Scheduler", "make_scheduler", "register", "registered", "unavailable"]
