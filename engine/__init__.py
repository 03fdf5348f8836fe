"""jobmachine: a declarative state-machine job engine for Kubernetes.

The package is layered (see docs/architecture.md): `definition` and `api` are
pure, `graph`, `controller` and `cluster` build on them, and `cli` wires it all.
"""

__version__ = "0.1.0"
