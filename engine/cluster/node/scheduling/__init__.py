"""The local node's scheduler: which pending pods fit the node's capacity, and in what order.

The embedded cluster has one node, and this is its kube-scheduler: pods are bound only when
their requests fit what the node has left; the rest stay Pending with the reason. Gangs
(PodGroups) are bound all together or not at all.
"""
