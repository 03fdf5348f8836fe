"""A Kubernetes-compatible API server for one machine, in kube-apiserver's own rooms.

A request enters at `endpoints/` (routing, parameters, responses), is authenticated and
authorised by `auth/`, goes through `admission/` and the store of `registry/` (with
`validation/`, `schema/` and `patch/`), and lands in `storage/`, which feeds every
watch; `printing/`, `encoding/` and `exec/` serve what kubectl asks beyond JSON, and
`controllers/` run kube-controller-manager's duties beside the store. `core.py`
assembles it all in start-up order; `errors.py` is every failure as a `Status`.
"""
