"""The client layer: the only code outside the API server that talks to it.

Configuration (kubeconfig, in-cluster), HTTP with authentication, client-side rate limit, typed
errors and outage tracking, list-then-watch informers with bookmarks, resume and relist, and
their caches. The engine, the local node, the SDK and the web view all use it; it imports none
of them.
"""
