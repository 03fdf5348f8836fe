"""The kubelet's rules for container and pod status, pure: container records, phases and
conditions, restart back-off, termination messages, the status written.
"""
