"""The registry: the served resource types (built-ins and CRDs) and the generic store that applies
every write's rules (admission, defaults, ownership, deletion, scale) before storage, plus list
semantics and selectors.

As k8s.io/apiserver's `registry` package: per-kind strategies over one generic store.
"""
