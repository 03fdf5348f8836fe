"""The reconcile core: observe -> decide -> status -> act -> record, for one job key.

What the engine sees of a job and its children, what its machines decide, the one status write,
the actions carried out after it, and the Events that say what changed.
"""
