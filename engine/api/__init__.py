"""Job kinds as data: the one model every replicated job shares, and CRDs from descriptions.

No Python model per kind: `replicated.py` checks what every kind has (replica specs, run
policy, failure rules) wherever its machine says it keeps them, and `kind_description.py`
with `crd.py` turn the short descriptions of `kinds/` into the CRDs of `crds/`. Pure.
"""
