"""What the engine reports: Events on jobs, Prometheus metrics, and the health endpoints.
"""
