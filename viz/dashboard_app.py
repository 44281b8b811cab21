"""The live dashboard as a Solara app.

``geosim dashboard`` serves it with ``solara run viz.dashboard_app``; its choices come
from the ``GEOSIM_DASHBOARD`` environment variable (see :mod:`viz.dashboard`), and
without it the app shows ``scenarios/pingan-medium.toml`` (relative to the working
directory).
"""

import warnings

# Solara warns at every page load that plain http on 127.0.0.1 cannot use its preferred
# cookie settings; that is expected for a local dashboard.
warnings.filterwarnings("ignore", message="Cookies with samesite=none", category=UserWarning)

from viz.dashboard import DashboardConfig  # noqa: E402

config = DashboardConfig.from_env()
if config.side_by_side:
    from viz.compare_ui import make_compare_page
    Page = make_compare_page(config)
else:
    from viz.dashboard_ui import make_page
    Page = make_page(config)
