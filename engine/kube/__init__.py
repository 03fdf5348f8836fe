"""The client layer: the only code outside the API server that talks to it.

Configuration (an address and a token, in-cluster, or a kubeconfig: only the last loads the
`kubernetes` package), HTTP with authentication, client-side rate limit, typed
errors and outage tracking, list-then-watch informers with bookmarks, resume and relist, and
their caches. The engine, the local node, the SDK and the web view all use it; it imports none
of them.
"""
