"""Validation of the built-in kinds, worded as kube-apiserver words it.

Field errors, name and label syntax, base64 values, the known fields of each kind, pod specs
wherever they appear, and one validator per kind (the batch kinds' in modules of their own:
Jobs, their policies and status, CronJobs and their schedules). Pure functions from an object
to its causes.
"""
