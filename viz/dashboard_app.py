"""The live dashboard as a Solara app.

``geosim dashboard`` serves it with ``solara run viz.dashboard_app``; its choices come
from the ``GEOSIM_DASHBOARD`` environment variable (see :mod:`viz.dashboard`), and
without it the app shows ``scenarios/pingan-medium.toml`` (relative to the working
directory).
"""

import warnings

# Two warnings the server would print, neither about this app: plain http on 127.0.0.1
# (Solara prefers https cookies), and Mesa 3.3's own hook order in ComponentsView
# (reported when Mesa's visualisation is imported; fixed in Mesa 3.5).
warnings.filterwarnings("ignore", message="Cookies with samesite=none", category=UserWarning)
warnings.filterwarnings("ignore", message=r".*ComponentsView: `use_state` found despite",
                        category=UserWarning)

from viz.dashboard import DashboardConfig  # noqa: E402
from viz.dashboard_ui import make_page  # noqa: E402

Page = make_page(DashboardConfig.from_env())
