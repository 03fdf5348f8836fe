"""Small definition texts for the tests, with line numbers that are easy to read.

`HEADER` is 5 lines, so a `job:` section given to `document` starts at line 6.
"""

from __future__ import annotations

HEADER = """\
apiVersion: jobmachine.dev/v1alpha1
kind: StateMachine
metadata: {name: demo}
spec:
  governs: {apiVersion: example.dev/v1, kind: Demo}
"""

JOB = """\
  job:
    initial: Running
    states:
      Running: {}
      Done: {terminal: success}
    transitions:
      - {from: Running, to: Done, when: "restarts == 0"}
"""

REPLICA = """\
  replica:
    initial: Pending
    states:
      Pending: {}
      Running: {}
      Succeeded: {terminal: success}
      Failed: {terminal: failure}
    transitions:
      - {from: Pending, to: Pending, "on": podMissing, actions: [createPod]}
      - {from: Pending, to: Running, "on": podRunning}
      - {from: [Pending, Running], to: Succeeded, "on": podSucceeded}
      - {from: [Pending, Running], to: Failed, "on": podFailed}
"""


def document(job: str = JOB, replica: str = REPLICA, extra: str = "") -> str:
    """A whole definition: the header, then the job and replica sections, then `extra`."""
    return HEADER + job + replica + extra
