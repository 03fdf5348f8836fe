"""Validation of the built-in kinds, worded as kube-apiserver words it.

Field errors, name and label syntax, base64 values, the known fields of each kind, and one
validator per kind. Pure functions from an object to its causes.
"""
