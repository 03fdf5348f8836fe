"""The engine: runs machine definitions against one API server, through the client layer.

`reconcile/` takes one job key from observation to the Events that follow its status
write; `runtime/` runs reconciles (manager, queue, workers, scheduler); `coordination/`
shares the work between replicas (leader election, shards); `reporting/` says what
happened (Events, metrics, health); `machines/` turns StateMachine objects into the
machines in force. It never imports the embedded cluster: it reaches any API server over
HTTP through `engine.kube`.
"""
