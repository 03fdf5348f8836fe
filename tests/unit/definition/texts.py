"""Small definition texts for the tests, with line numbers that are easy to read.

`HEADER` is 5 lines, so a `job:` section given to `document` starts at line 6;
`abstract` keeps those lines, and `extending` starts its own sections at line 7.
"""

from __future__ import annotations

GOVERNS = "  governs: {apiVersion: example.dev/v1, kind: Demo}\n"

HEADER = """\
apiVersion: jobmachine.dev/v1alpha1
kind: StateMachine
metadata: {name: demo}
spec:
""" + GOVERNS

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


def abstract(text: str, name: str = "base") -> str:
    """`text` (a `document`) as an abstract machine named `name`: `abstract: true` takes the
    place of its governs line, so every line keeps its number."""
    assert GOVERNS in text
    return text.replace("name: demo", f"name: {name}", 1).replace(GOVERNS, "  abstract: true\n")


def extending(body: str = "", *, base: str = "base", name: str = "child", kind: str = "Demo"
              ) -> str:
    """A machine `name` that extends `base` and governs `kind`; `body` (its own sections)
    starts at line 7."""
    return (
        "apiVersion: jobmachine.dev/v1alpha1\n"
        "kind: StateMachine\n"
        f"metadata: {{name: {name}}}\n"
        "spec:\n"
        f"  extends: {base}\n"
        f"  governs: {{apiVersion: example.dev/v1, kind: {kind}}}\n"
    ) + body
