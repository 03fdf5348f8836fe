"""Admission: what happens to an object between decoding and storage, as kube-apiserver's admission
chain does it.

Typed decoding, defaulting (zero values included), the ServiceAccount and Priority plugins, QoS,
and the schema and validation gate every write passes. Pure over objects: no HTTP, no storage.
"""
