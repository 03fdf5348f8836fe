"""Coordination between replicas of the engine: leader election and shards, on
coordination.k8s.io/v1 Leases.
"""
