"""The engine's runtime: the manager that wires it, the work queue, workers, the scheduler of wake-
ups, and the expectations and freshness that keep a stale cache from repeating work. It knows
nothing of machines: it runs reconciles.
"""
