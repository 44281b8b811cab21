"""Scheduling policies, registered by name.

``registered()`` lists the built-in schedulers with the plugins of the
``geosim.schedulers`` entry points, ``unavailable()`` the plugins that could not be
loaded and why, and ``make_scheduler(name, params)`` builds one. The built-ins are
imported on first use (:mod:`geosim.schedulers.registry`), not with this package.
"""

from geosim.schedulers.base import Scheduler
from geosim.schedulers.registry import make_scheduler, register, registered, unavailable

__all__ = ["Scheduler", "make_scheduler", "register", "registered", "unavailable"]
