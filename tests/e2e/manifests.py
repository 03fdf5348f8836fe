"""Manifests the kubectl end-to-end tests apply: a CRD with printer columns and a few objects."""

from __future__ import annotations

GROUP = "e2e.jobmachine.dev"

WIDGET_CRD = f"""
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.{GROUP}
spec:
  group: {GROUP}
  scope: Namespaced
  names:
    kind: Widget
    plural: widgets
    singular: widget
    shortNames: [wd]
    categories: [all]
  versions:
    - name: v1
      served: true
      storage: true
      subresources:
        status: {{}}
      additionalPrinterColumns:
        - name: Size
          type: integer
          jsonPath: .spec.size
        - name: Ready
          type: string
          jsonPath: .status.conditions[?(@.type=="Ready")].status
        - name: Age
          type: date
          jsonPath: .metadata.creationTimestamp
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              properties:
                size:
                  type: integer
                color:
                  type: string
            status:
              type: object
              properties:
                conditions:
                  type: array
                  items:
                    type: object
                    properties:
                      type: {{type: string}}
                      status: {{type: string}}
                      reason: {{type: string}}
"""


def widget(name: str, *, size: int = 1, extra_spec: str = "") -> str:
    return f"""
apiVersion: {GROUP}/v1
kind: Widget
metadata:
  name: {name}
spec:
  size: {size}
{extra_spec}"""


def configmap(name: str, data: dict[str, str], *, owner: dict[str, str] | None = None) -> str:
    lines = "\n".join(f'  {key}: "{value}"' for key, value in data.items())
    owners = ""
    if owner is not None:
        owners = (
            "  ownerReferences:\n"
            f"    - apiVersion: v1\n      kind: ConfigMap\n      name: {owner['name']}\n"
            f"      uid: {owner['uid']}\n      blockOwnerDeletion: true\n"
        )
    return f"""
apiVersion: v1
kind: ConfigMap
metadata:
  name: {name}
{owners}data:
{lines}
"""


def pod(name: str, *, image: str = "busybox:1.36") -> str:
    return f"""
apiVersion: v1
kind: Pod
metadata:
  name: {name}
  labels:
    app: {name}
spec:
  containers:
    - name: main
      image: {image}
      command: ["sleep", "3600"]
"""
