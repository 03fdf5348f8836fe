"""Rollouts: revisions of a template moved over children, as the Deployment controller moves
pods from old ReplicaSets to the new one.

numbers.py resolves the bounds (maxSurge, maxUnavailable) and names a template by its
hash; plan.py decides one sync without touching the API (which child to make, scale or
delete, the Events, the status, when to look again); run.py reads the children, acts and
writes.
"""
