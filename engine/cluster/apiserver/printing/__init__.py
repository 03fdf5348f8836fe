"""Server-side printing: objects as `meta.k8s.io` Tables, with kube-apiserver's columns for each
built-in kind and CRD printer columns (JSONPath).
"""
