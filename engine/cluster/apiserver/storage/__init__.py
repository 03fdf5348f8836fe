"""Storage: the object table and its resourceVersions, the watch history, and durability (journal,
snapshot, repair).

Knows objects as JSON documents and nothing of kinds, admission or HTTP.
"""
