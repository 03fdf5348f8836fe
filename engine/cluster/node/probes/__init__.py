"""Readiness probes of the local node: when a running container counts as ready, and how a
probe is run in process and simulate mode."""
