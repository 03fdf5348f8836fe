"""Schemas: OpenAPI v2 and v3 documents, structural schemas of CRDs, value checks, pruning,
defaulting and `x-kubernetes-validations` CEL rules.
"""
