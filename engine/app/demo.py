"""`jobmachine demo`: a throw-away local cluster runs the examples while the user watches.

The shortest way from a checkout to seeing the engine work: `up` in a temporary
folder, every example submitted, each recorded state change printed as it
happens, then the phases, the events and each job's path as a picture. It
returns whether every job ended as its `demo.jobmachine.dev/expect` annotation
says (Succeeded or Failed; a TrainJob's success is Complete), so the same run doubles as a
smoke test of the whole engine. `--real` runs examples/real instead: replicas that train for
real (a TrainJob's pods too, found through its JobSet's Jobs), whose `result:` log lines it
prints.
"""

from __future__ import annotations

import importlib.util
import queue
import shutil
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, TextIO

from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from engine.app.demo_report import JobRow, events_block, summary_table, timeline_line, verdict
from engine.app.job_graph import job_picture
from engine.app.up import (
    LocalCluster,
    NodeMode,
    UpOptions,
    local_settings,
    running_local_cluster,
)
from engine.controller.machines.install import crd_resources
from engine.controller.machines.served import BUILT_IN_JOB_KINDS
from engine.controller.reconcile.children import JOB_UID_LABEL
from engine.controller.reconcile.native_status import engine_view
from engine.controller.reconcile.reconcile import RecordedTransition
from engine.kube.client import KubeClient
from engine.kube.errors import ApiError
from engine.kube.resources import CONFIGMAPS, EVENTS, PODS, Resource
from engine.shipped import shipped_dir

EXPECT_ANNOTATION = "demo.jobmachine.dev/expect"
EXPECTATIONS = ("Succeeded", "Complete", "Failed")
"""The end phases an example may expect: a job's success (a TrainJob's is Complete) or
failure."""
POLL_INTERVAL_S = 0.2
# Short enough that a restart shows within seconds, long enough to be seen in the timeline.
DEMO_REPLICA_BACKOFF_S = 2.0
EVENT_FLUSH_TIMEOUT_S = 5.0
# What the examples in examples/real import: the `real` extra.
REAL_MODULES = ("xgboost", "jax", "numpy", "mpi4py", "torch")
# What the MPIJob example runs besides Python: Open MPI's launcher, from the machine.
REAL_PROGRAMS = {"mpirun": "Open MPI (Debian: apt-get install openmpi-bin)"}
# The examples' scripts (the folder's *.py), mounted by the examples that run them.
SCRIPTS_CONFIGMAP = "example-scripts"
RESULT_PREFIX = "result:"
BATCH_JOBS = BUILT_IN_JOB_KINDS[("batch/v1", "Job")]


class DemoError(ValueError):
    """An example the demo cannot run; the message names the file and what is wrong."""


@dataclass(frozen=True)
class DemoOptions:
    """Where the pictures go, how the node runs pods, which examples, how long to wait."""

    output: Path = Path("demo-output")
    node_mode: NodeMode = "process"
    examples: Path | None = None
    timeout_s: float = 120.0
    real: bool = False
    """Run examples/real (unless `examples` names a folder); needs the `real` extra."""


@dataclass(frozen=True)
class Example:
    """One job manifest of the examples folder and the phase it is expected to end in."""

    path: Path
    manifest: Mapping[str, Any]
    resource: Resource
    expect: str

    @property
    def name(self) -> str:
        return str(self.manifest["metadata"]["name"])

    @property
    def namespace(self) -> str:
        return str(self.manifest["metadata"].get("namespace") or "default")


def load_examples(folder: Path, kinds: Mapping[str, Resource]) -> list[Example]:
    """Every job manifest in `folder`'s YAML files, in file order; DemoError if one is unusable.

    `kinds` are the job kinds the demo's cluster serves, by kind name.
    """
    files = sorted([*folder.glob("*.yaml"), *folder.glob("*.yml")])
    if not files:
        raise DemoError(f"{folder}: no example manifests (*.yaml) here")
    examples: list[Example] = []
    for path in files:
        try:
            documents = list(YAML(typ="safe", pure=True).load_all(path.read_text()))
        except YAMLError as exc:
            raise DemoError(f"{path}: not valid YAML: {exc}") from exc
        examples += [_example(path, document, kinds) for document in documents
                     if document is not None]
    return examples


def _example(path: Path, document: Any, kinds: Mapping[str, Resource]) -> Example:
    kind = document.get("kind") if isinstance(document, dict) else None
    if kind not in kinds:
        known = ", ".join(sorted(kinds))
        raise DemoError(f"{path}: a demo example is a job of kind {known}, not {kind!r}")
    metadata = document.get("metadata") or {}
    expect = (metadata.get("annotations") or {}).get(EXPECT_ANNOTATION)
    if not metadata.get("name") or expect not in EXPECTATIONS:
        raise DemoError(
            f"{path}: needs metadata.name and the annotation {EXPECT_ANNOTATION}: "
            f"{', '.join(EXPECTATIONS)} (the phase the demo checks it ends in)"
        )
    return Example(path, document, kinds[str(kind)], expect)


@dataclass
class _Tracked:
    """What the demo knows of one submitted job: its last read and when it ended."""

    example: Example
    job: Mapping[str, Any]
    submitted_at: float
    finished_at: float | None = None

    @property
    def status(self) -> Mapping[str, Any]:
        """The engine's status: the job's own, or the annotation a kind with a fixed status
        schema (a TrainJob) keeps it in."""
        return engine_view(self.job).get("status") or {}

    def row(self) -> JobRow:
        ended = self.finished_at
        return JobRow(
            name=self.example.name,
            expected=self.example.expect,
            phase=str(self.status.get("phase") or "-"),
            restarts=int(self.status.get("restarts") or 0),
            duration_s=None if ended is None else ended - self.submitted_at,
        )


def run_demo(options: DemoOptions, *, out: TextIO = sys.stdout) -> bool:
    """Run every example on a fresh local cluster; True if each ended as it expects."""
    if options.real:
        _check_real_extra(options.node_mode)
    kinds = {r.kind: r for r in crd_resources(shipped_dir("crds")) if r.namespaced}
    folder = options.examples or (
        shipped_dir("examples") / "real" if options.real else shipped_dir("examples"))
    examples = load_examples(folder, kinds)
    settings = local_settings({}, replica_backoff_base_s=DEMO_REPLICA_BACKOFF_S)
    _say(out, f"jobmachine demo: {len(examples)} jobs, node mode {options.node_mode}, replica "
              f"back-off {DEMO_REPLICA_BACKOFF_S:g}s (doubling per restart); starting a local "
              f"cluster...")
    with tempfile.TemporaryDirectory(prefix="jobmachine-demo-") as data_dir:
        up = UpOptions(data_dir=Path(data_dir), port=0, node_mode=options.node_mode,
                       settings=settings)
        with running_local_cluster(up) as cluster:
            share_scripts(cluster.client, folder, (example.namespace for example in examples))
            _say(out, f"cluster up at {cluster.server.url}; submitting "
                      f"{', '.join(e.name for e in examples)}\n")
            tracked = _run_examples(cluster, examples, options.timeout_s, out)
            rows = [one.row() for one in tracked]
            _report(cluster, tracked, options.output, out)
    _say(out, "\n" + verdict(rows).rstrip())
    return all(row.as_expected for row in rows)


def _check_real_extra(node_mode: NodeMode) -> None:
    """DemoError, in one line, unless the real examples can run here."""
    if node_mode != "process":
        raise DemoError("the real examples train for real: they need --node-mode process")
    missing = [name for name in REAL_MODULES if importlib.util.find_spec(name) is None]
    if missing:
        raise DemoError(f"the real examples need {', '.join(missing)}, which {sys.executable} "
                        f"cannot import: pip install -e '.[real]'")
    absent = [f"{program}: {source}" for program, source in REAL_PROGRAMS.items()
              if shutil.which(program) is None]
    if absent:
        raise DemoError(f"the real examples need programs this machine lacks: "
                        f"{'; '.join(absent)}")


def share_scripts(client: KubeClient, folder: Path, namespaces: Iterable[str]) -> None:
    """The folder's scripts as the ConfigMap the examples mount, in each namespace (what
    `kubectl create configmap example-scripts --from-file=FOLDER` makes)."""
    scripts = {path.name: path.read_text() for path in sorted(folder.glob("*.py"))}
    if not scripts:
        return
    for namespace in sorted(set(namespaces)):
        client.create(CONFIGMAPS, {"apiVersion": "v1", "kind": "ConfigMap",
                                   "metadata": {"name": SCRIPTS_CONFIGMAP}, "data": scripts},
                      namespace)


def with_this_python(node: Any) -> Any:
    """The manifest with each container command `python3 ...` run by this Python instead,
    the one the demo runs in (with the extras installed), whatever `python3` is on PATH."""
    if isinstance(node, list):
        return [with_this_python(item) for item in node]
    if not isinstance(node, dict):
        return node
    copy = {key: with_this_python(value) for key, value in node.items()}
    command = copy.get("command")
    if "image" in copy and isinstance(command, list) and command[:1] == ["python3"]:
        copy["command"] = [sys.executable, *command[1:]]
    return copy


def _run_examples(
    cluster: LocalCluster, examples: Sequence[Example], timeout_s: float, out: TextIO
) -> list[_Tracked]:
    """Submit every example, print each state change as it is recorded, until all are done."""
    client = cluster.client
    changes: queue.SimpleQueue[RecordedTransition] = queue.SimpleQueue()
    cluster.engine.add_transition_listener(partial(_enqueue, changes))
    started = time.monotonic()
    tracked = [
        _Tracked(example, client.create(example.resource, with_this_python(example.manifest),
                                        example.namespace), time.monotonic())
        for example in examples
    ]
    width = max(len(example.name) for example in examples)
    deadline = started + timeout_s
    names = {str(one.job["metadata"]["uid"]): one.example.name for one in tracked}
    while True:
        _print_changes(changes, names, started=started, width=width, out=out)
        for one in tracked:
            if one.finished_at is None:
                _follow(client, one)
        if all(one.finished_at is not None for one in tracked):
            return tracked
        if time.monotonic() >= deadline:
            waiting = ", ".join(one.example.name for one in tracked if one.finished_at is None)
            _say(out, f"timed out after {timeout_s:g}s waiting for {waiting}")
            return tracked
        time.sleep(POLL_INTERVAL_S)


def _enqueue(
    changes: queue.SimpleQueue[RecordedTransition], recorded: Sequence[RecordedTransition]
) -> None:
    for change in recorded:
        changes.put(change)


def _print_changes(
    changes: queue.SimpleQueue[RecordedTransition], names: Mapping[str, str], *,
    started: float, width: int, out: TextIO,
) -> None:
    """Print the state changes of the demo's jobs the engine recorded since the last look."""
    now = time.monotonic()
    while True:
        try:
            change = changes.get_nowait()
        except queue.Empty:
            return
        name = names.get(change.uid)
        if name is not None:
            _say(out, timeline_line(now - started, name, change, width=width))


def _follow(client: KubeClient, one: _Tracked) -> None:
    """Read the job again; note when it has ended."""
    example = one.example
    one.job = client.get(example.resource, example.name, example.namespace)
    if one.status.get("phase") in EXPECTATIONS:
        one.finished_at = time.monotonic()


def _report(cluster: LocalCluster, tracked: Sequence[_Tracked], output: Path, out: TextIO) -> None:
    """The final table, each job's events, and each job's picture written into `output`."""
    _say(out, "\n" + summary_table([one.row() for one in tracked]))
    cluster.engine.recorder.flush(EVENT_FLUSH_TIMEOUT_S)
    for one in tracked:
        events, _ = cluster.client.list(
            EVENTS, one.example.namespace,
            field_selector=f"involvedObject.name={one.example.name}",
        )
        uid = one.job["metadata"]["uid"]
        mine = [event for event in events if event["involvedObject"].get("uid") == uid]
        _say(out, "\n" + events_block(one.example.name, mine))
    results = [found for one in tracked for found in _result_lines(cluster.client, one)]
    if results:
        width = max(len(pod) for pod, _ in results)
        _say(out, f"\nresults (the lines of the pods' logs that start with {RESULT_PREFIX!r}):\n"
                  + "\n".join(f"  {pod:<{width}}  {line}" for pod, line in results))
    output.mkdir(parents=True, exist_ok=True)
    written = []
    for one in tracked:
        path = output / f"{one.example.name}.svg"
        path.write_bytes(job_picture(
            cluster.client, one.example.namespace, one.example.name, fmt="svg",
            system_namespace=cluster.engine.settings.system_namespace,
        ))
        written.append(str(path))
    _say(out, "each job's path through its machine (states visited and transitions fired, "
              "highlighted): " + ", ".join(written))


def _result_lines(client: KubeClient, one: _Tracked) -> list[tuple[str, str]]:
    """(pod, line) for each result line the job's pods logged, its children's too (a
    TrainJob's pods are its JobSet's Jobs')."""
    namespace = one.example.namespace
    owners = _descendants(client, namespace, str(one.job["metadata"]["uid"]))
    pods, _ = client.list(PODS, namespace,
                          label_selector=f"{JOB_UID_LABEL} in ({','.join(sorted(owners))})")
    names = sorted(str(pod["metadata"]["name"]) for pod in pods)
    return [(name, line) for name in names for line in _log(client, name, namespace).splitlines()
            if line.startswith(RESULT_PREFIX)]


def _descendants(client: KubeClient, namespace: str, uid: str) -> set[str]:
    """The job's uid and those of the jobs made under it, at any depth: the engine labels
    each child object with its parent's uid, as it labels pods."""
    kinds = [r for r in crd_resources(shipped_dir("crds")) if r.namespaced]
    found, parents = {uid}, {uid}
    while parents:
        selector = f"{JOB_UID_LABEL} in ({','.join(sorted(parents))})"
        parents = {str(child["metadata"]["uid"]) for kind in (*kinds, BATCH_JOBS)
                   for child in client.list(kind, namespace, label_selector=selector)[0]}
        parents -= found
        found |= parents
    return found


def _log(client: KubeClient, pod: str, namespace: str) -> str:
    """The pod's log; empty when it has none (a container that never started)."""
    try:
        return client.read_text(PODS, pod, namespace, subresource="log")
    except ApiError:
        return ""


def _say(out: TextIO, text: str) -> None:
    out.write(text.rstrip("\n") + "\n")
    out.flush()
