"""Mutation testing of the engine's core: which planted one-line bugs no fast test catches.

Python modules are mutated by mutmut (PyPI, the `mutation` extra); the CEL guards of the
shipped machines (`machines/*.yaml`) by `cel_guards`, a text mutator of our own, because no
mutation tool knows CEL inside YAML. `python -m tools.mutation` runs both and writes a report.
"""
