"""The web view: jobs on their machines, live, for anyone the API server lets list them.

`serving_web_view` follows the cluster through the engine's watch and serves pages
(server-rendered HTML, updated live over server-sent events); `jobmachine up` serves it
by default and `jobmachine run --ui-port` on demand.
"""

from engine.app.web.server import RunningWebView, WebOptions, serving_web_view

__all__ = ["RunningWebView", "WebOptions", "serving_web_view"]
