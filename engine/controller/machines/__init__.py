"""StateMachine objects drive the engine: which machine governs which kind, at which revision.

The engine watches StateMachine objects, the CRDs that serve job kinds and the
revisions it keeps of every machine; it judges each machine (valid, in conflict,
its kind served), says so on the object, and keeps the compiled revisions that
running jobs started with until no job needs them.
"""
