"""The kube-controller-manager duties the embedded cluster runs beside its store: garbage
collection, namespace termination, CRD clean-up, default ServiceAccounts, the root CA ConfigMap
and Event expiry.
"""
