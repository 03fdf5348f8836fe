"""The engine in a pod's shoes: `jobmachine up --no-engine` with an audit log, deploy/'s RBAC
applied with kubectl, the engine run with `--in-cluster` (over TLS, with the server's CA) as
the `jobmachine` service account, one job of every shipped kind to its end.

The server's audit log is the judge: no request of the engine's is refused, and every
permission the manifests grant is used by those jobs, or listed in KEPT with the reason it
stays. Taking one permission away makes the engine say so (a Warning event on the job and
an error in its log), and giving it back lets the job finish without a restart.
"""

from __future__ import annotations

import copy
import json
import signal
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from engine.shipped import shipped_dir
from tests.e2e.conftest import KUBECTL, Kubectl
from tests.e2e.up_process import JOBMACHINE, running_up

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = shipped_dir("examples")
ENGINE_USER = "system:serviceaccount:jobmachine-system:jobmachine"
JOBS_NAMESPACE = "least-privilege"
Triple = tuple[str, str, str]  # (API group, resource[/subresource], verb)

# A job of every shipped kind, as users write them (the Kubeflow ones from upstream).
JOB_FILES = (
    EXAMPLES / "pytorch-succeeds.yaml",
    EXAMPLES / "kubeflow" / "tf-ps-workers.yaml",
    EXAMPLES / "kubeflow" / "upstream" / "xgboost" / "xgboostjob.yaml",
    EXAMPLES / "kubeflow" / "upstream" / "paddlepaddle" / "simple-cpu.yaml",
    EXAMPLES / "kubeflow" / "upstream" / "jax" / "cpu-demo" / "demo.yaml",
    EXAMPLES / "kubeflow" / "upstream" / "mpi" / "tensorflow-mnist.yaml",
)
MACHINEJOB = {
    "apiVersion": "jobmachine.dev/v1alpha1",
    "kind": "MachineJob",
    "metadata": {"name": "plain"},
    "spec": {"replicaSpecs": {"Main": {"replicas": 1, "template": {"spec": {"containers": [
        {"name": "main", "image": "busybox", "command": ["true"]}]}}}}},
}
# A gang-scheduled PyTorchJob: its PodGroup is the engine's to make and remove.
GANG = "gang"

# Granted but not used by these jobs, and why each stays in deploy/base/rbac.yaml.
_JOB_KINDS = tuple(("kubeflow.org", plural) for plural in (
    "pytorchjobs", "tfjobs", "xgboostjobs", "paddlejobs", "jaxjobs", "mpijobs"))
_OBJECTS = ("a machine's declared objects: read when a create finds the name taken, "
            "updated when the machine's fields change, adopted by patch, deleted by the "
            "machine's clean-up")
_BATCH_JOBS = ("batch", "jobs")
BATCH_JOB = {
    "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "batch-ours"},
    # In a cluster the engine runs only the Jobs whose managedBy names it.
    "spec": {"managedBy": "jobmachine.dev/job-controller", "template": {"spec": {
        "restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox"}]}}},
}
KEPT: dict[Triple, str] = {
    **{(group, f"{plural}/finalizers", "update"):
       "clusters that enable the OwnerReferencesPermissionEnforcement admission check it "
       "when the engine makes a child with blockOwnerDeletion"
       for group, plural in (*_JOB_KINDS, ("jobmachine.dev", "machinejobs"), _BATCH_JOBS)},
    **{(group, plural, "get"): "read fresh before adopting orphaned pods (claims.py)"
       for group, plural in (*_JOB_KINDS, ("jobmachine.dev", "machinejobs"), _BATCH_JOBS)},
    **{(group, plural, "delete"): "runPolicy.ttlSecondsAfterFinished deletes a finished job"
       for group, plural in (*_JOB_KINDS, ("jobmachine.dev", "machinejobs"), _BATCH_JOBS)},
    ("", "services", "get"): "read when a create finds the name taken, to say whose it is",
    ("", "services", "patch"): "adopting or releasing an orphaned service (claims.py)",
    **{("", "configmaps", verb): _OBJECTS for verb in ("get", "update", "patch", "delete")},
    **{("", "secrets", verb): _OBJECTS
       for verb in ("get", "list", "watch", "create", "update", "patch", "delete")},
    **{(group, plural, verb): _OBJECTS
       for group, plural in (("", "serviceaccounts"), ("rbac.authorization.k8s.io", "roles"),
                             ("rbac.authorization.k8s.io", "rolebindings"))
       for verb in ("get", "update", "patch", "delete")},
    **{("", "pods/exec", verb): "MPIJob's launcher Role grants it: RBAC lets the engine "
                                "grant only what it holds" for verb in ("get", "create")},
    **{("scheduling.volcano.sh", "podgroups", verb): _OBJECTS
       for verb in ("get", "update", "patch", "delete")},
    **{("scheduling.x-k8s.io", "podgroups", verb): "--gang-scheduler-name scheduler-plugins"
       for verb in ("get", "list", "watch", "create", "update", "patch", "delete")},
    ("", "events", "patch"): "a repeated event bumps the count of the one posted",
    **{("jobset.x-k8s.io", plural, verb): "JobSets (machines/jobset.yaml), which these jobs "
       "do not include" for plural, verbs in (
           ("jobsets", ("get", "list", "watch", "patch", "delete")),
           ("jobsets/status", ("update",)), ("jobsets/finalizers", ("update",)))
       for verb in verbs},
    ("jobset.x-k8s.io", "jobsets", "create"): "a TrainJob's JobSet is its child (spec.child)",
    **{("trainer.kubeflow.org", plural, verb): "TrainJobs (machines/trainjob.yaml) and the "
       "runtimes they name (governs.references), which these jobs do not include"
       for plural, verbs in (
           ("trainjobs", ("get", "list", "watch", "patch", "delete")),
           ("trainjobs/status", ("update",)), ("trainjobs/finalizers", ("update",)),
           ("trainingruntimes", ("list", "watch")),
           ("clustertrainingruntimes", ("list", "watch")))
       for verb in verbs},
    ("batch", "jobs", "create"): "a JobSet's Jobs are its children (spec.child)",
    ("", "pods", "get"): "read when a create finds the name taken, to say whose it is",
    ("coordination.k8s.io", "leases", "list"): "--shards: the shard Leases are listed",
    ("coordination.k8s.io", "leases", "delete"): "--shards: a shard Lease is given back",
    ("apps", "controllerrevisions", "delete"): "revisions no job runs on are pruned",
    **{("", "events", verb): "the web view (run --ui-port) shows a job's events"
       for verb in ("list", "watch")},
    ("apps", "controllerrevisions", "get"): "the web view (run --ui-port) draws the machine "
                                            "revision a job ran with",
}


@dataclass
class Deployed:
    """The server, kubectl as the admin, the engine process and where its files are."""

    url: str
    admin: Kubectl
    audit_log: Path
    engine_log: Path
    service_account_dir: Path
    engine: subprocess.Popen[bytes] | None = None

    def start_engine(self) -> None:
        """`jobmachine run --in-cluster` as in the Deployment, the pod's files elsewhere."""
        host, port = self.url.removeprefix("https://").rsplit(":", 1)
        env = {key: value for key, value in self.admin.env.items()
               if not key.startswith(("KUBE", "JOBMACHINE_"))}
        env.update(KUBERNETES_SERVICE_HOST=host, KUBERNETES_SERVICE_PORT=port,
                   JOBMACHINE_REPLICA_BACKOFF_BASE_S="0.2")
        command = [JOBMACHINE, "run", "--in-cluster",
                   "--service-account-dir", str(self.service_account_dir),
                   "--lease-namespace", "jobmachine-system", "--leader-elect"]
        with self.engine_log.open("ab") as log:
            self.engine = subprocess.Popen(command, env=env, stdout=log, stderr=log)

    def stop_engine(self) -> None:
        if self.engine is None:
            return
        self.engine.send_signal(signal.SIGTERM)
        try:
            self.engine.wait(30)
        except subprocess.TimeoutExpired:
            self.engine.kill()
            self.engine.wait()
        self.engine = None

    def engine_requests(self) -> list[dict[str, Any]]:
        return [event for event in _audit_events(self.audit_log)
                if event["user"].get("username") == ENGINE_USER]


def _audit_events(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture(scope="module")
def deployed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployed]:
    """`jobmachine up --no-engine` with an audit log, deploy/'s RBAC applied with kubectl,
    the service account's files written as the kubelet would, and the engine started."""
    if KUBECTL is None:
        pytest.skip("kubectl is not installed on this machine")
    home = tmp_path_factory.mktemp("least-privilege")
    audit_log = home / "audit.log"
    with running_up(home, "--no-engine", "--node-mode", "simulate", "--node-capacity",
                    "cpu=64,memory=256Gi", "--audit-log-path", str(audit_log), "-q") as up:
        assert "no engine" in up.output.read_text()
        env = {**up.env, "KUBECONFIG": str(up.kubeconfig), "KUBECACHEDIR": str(home / "cache"),
               "HOME": str(home)}
        admin = Kubectl(env, "default")
        admin("apply", "-f", str(REPO / "deploy" / "base" / "namespace.yaml"),
              "-f", str(REPO / "deploy" / "base" / "rbac.yaml"))
        token = admin("create", "token", "jobmachine", "-n", "jobmachine-system",
                      "--duration=2h").stdout.strip()
        account = home / "serviceaccount"
        account.mkdir()
        (account / "token").write_text(token)
        (account / "ca.crt").write_bytes((home / "data" / "tls" / "ca.crt").read_bytes())
        (account / "namespace").write_text("jobmachine-system")
        admin("create", "namespace", JOBS_NAMESPACE)
        running = Deployed(up.url, admin, audit_log, home / "engine.log", account)
        running.start_engine()
        try:
            yield running
        finally:
            running.stop_engine()


def _manifests() -> list[dict[str, Any]]:
    documents = [yaml.safe_load(path.read_text()) for path in JOB_FILES]
    gang = yaml.safe_load((EXAMPLES / "pytorch-succeeds.yaml").read_text())
    gang["metadata"]["name"] = GANG
    gang["spec"]["runPolicy"] = {"schedulingPolicy": {"minAvailable": 3}}
    documents += [gang, MACHINEJOB, copy.deepcopy(BATCH_JOB)]
    for document in documents:
        document["metadata"]["namespace"] = JOBS_NAMESPACE
        if document["kind"] == "MPIJob":
            # MPI Workers only wait to be reached: in simulate mode they would end after the
            # default 0.2 s, before the Launcher (behind its init container) is done, and
            # the clean-up that deletes running Workers and their services would not run.
            template = document["spec"]["mpiReplicaSpecs"]["Worker"]["template"]
            template.setdefault("metadata", {}).setdefault("annotations", {})[
                "sim.jobmachine.dev/run-seconds"] = "600"
    return documents


KIND_NAMES = ("pytorchjobs.kubeflow.org,tfjobs.kubeflow.org,xgboostjobs.kubeflow.org,"
              "paddlejobs.kubeflow.org,jaxjobs.kubeflow.org,mpijobs.kubeflow.org,"
              "machinejobs.jobmachine.dev,jobs.batch")


def _phases(admin: Kubectl) -> dict[str, str]:
    listed = json.loads(admin("get", KIND_NAMES, "-n", JOBS_NAMESPACE, "-o", "json").stdout)
    return {f"{item['kind']}/{item['metadata']['name']}": _phase(item)
            for item in listed["items"]}


def _phase(job: dict[str, Any]) -> str:
    """The job's phase; a batch/v1 Job's from its Job API conditions."""
    status = job.get("status") or {}
    if job["kind"] != "Job":
        return str(status.get("phase", ""))
    ended = {c["type"] for c in status.get("conditions") or () if c["status"] == "True"}
    return "Succeeded" if "Complete" in ended else "Failed" if "Failed" in ended else ""


def _wait(what: str, check: Callable[[], bool], timeout_s: float = 180) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.5)


def _granted() -> set[Triple]:
    """Every (group, resource, verb) deploy/base/rbac.yaml grants the engine."""
    triples: set[Triple] = set()
    documents = yaml.safe_load_all((REPO / "deploy" / "base" / "rbac.yaml").read_text())
    for document in documents:
        if document["kind"] not in ("ClusterRole", "Role"):
            continue
        for rule in document.get("rules") or ():
            triples |= {(group, resource, verb) for group in rule["apiGroups"]
                        for resource in rule["resources"] for verb in rule["verbs"]}
    return triples


def _used(requests: list[dict[str, Any]]) -> set[Triple]:
    used = set()
    for event in requests:
        ref = event.get("objectRef")
        if ref is None:
            continue
        resource = ref["resource"] + (f"/{ref['subresource']}" if ref.get("subresource") else "")
        used.add((ref.get("apiGroup", ""), resource, event["verb"]))
    return used


def test_every_shipped_kind_runs_to_its_end_as_the_engines_service_account(
    deployed: Deployed,
) -> None:
    deployed.admin.apply(yaml.safe_dump_all(_manifests()))
    expected = len(_manifests())

    def all_done() -> bool:
        phases = _phases(deployed.admin)
        return len(phases) == expected and all(p in ("Succeeded", "Failed")
                                               for p in phases.values())

    _wait("every job to finish", all_done)
    phases = _phases(deployed.admin)
    assert set(phases.values()) == {"Succeeded"}, phases
    # Every job is deleted, so the engine's clean-up (finalizer, PodGroup) is used too.
    deployed.admin("delete", KIND_NAMES, "--all", "-n", JOBS_NAMESPACE, "--timeout=60s",
                   timeout=90)
    deployed.stop_engine()

    requests = deployed.engine_requests()
    assert requests, "the audit log has no request of the engine's"
    refused = [f"{e['verb']} {e['requestURI']}: {e['responseStatus']['code']}"
               for e in requests if e["responseStatus"]["code"] == 403]
    assert refused == []
    unused = _granted() - _used(requests)
    unexplained = sorted(unused - KEPT.keys())
    assert unexplained == [], f"granted, never used and not explained in KEPT: {unexplained}"
    assert all(e["annotations"]["authorization.k8s.io/decision"] == "allow" for e in requests)


def _without(role: dict[str, Any], group: str, resource: str, verb: str) -> dict[str, Any]:
    """`role` without `verb` on `resource` of `group`, every other grant kept."""
    rules = []
    for rule in role["rules"]:
        if group in rule["apiGroups"] and resource in rule["resources"] and verb in rule["verbs"]:
            others = [r for r in rule["resources"] if r != resource]
            if others:
                rules.append({**rule, "resources": others})
            if verbs := [v for v in rule["verbs"] if v != verb]:
                rules.append({"apiGroups": [group], "resources": [resource], "verbs": verbs})
        else:
            rules.append(rule)
    return {**role, "rules": rules}


def _grants(admin: Kubectl, group: str, resource: str, verb: str) -> bool:
    rules = admin.get_json("clusterrole", "jobmachine")["rules"]
    return any(group in r.get("apiGroups", ()) and resource in r.get("resources", ())
               and verb in r["verbs"] for r in rules)


# One rule of each ClusterRole the engine aggregates, and what the engine says without it.
REMOVED = {
    "pods-create": ("jobmachine-engine", "", "pods", "create",
                    'pods is forbidden: User "{user}" cannot create resource "pods" in API '
                    'group "" in the namespace "{namespace}"'),
    "services-create": ("jobmachine-engine", "", "services", "create",
                        'services is forbidden: User "{user}" cannot create resource '
                        '"services" in API group "" in the namespace "{namespace}"'),
    "status-update": ("jobmachine-shipped-kinds", "kubeflow.org", "pytorchjobs/status", "update",
                      'pytorchjobs.kubeflow.org "{name}" is forbidden: User "{user}" cannot '
                      'update resource "pytorchjobs/status" in API group "kubeflow.org" in '
                      'the namespace "{namespace}"'),
}


@pytest.mark.parametrize("removed", REMOVED.values(), ids=REMOVED.keys())
def test_a_missing_permission_is_reported_on_the_job_and_granting_it_lets_it_finish(
    deployed: Deployed, removed: tuple[str, str, str, str, str]
) -> None:
    role_name, group, resource, verb, refusal = removed
    if deployed.engine is None:
        deployed.start_engine()
    role = deployed.admin.get_json("clusterrole", role_name)
    deployed.admin.apply(json.dumps(_without(role, group, resource, verb)))
    _wait(f"the aggregated role to lose {verb} {resource}",
          lambda: not _grants(deployed.admin, group, resource, verb))

    name = f"refused-{uuid.uuid4().hex[:6]}"
    job = yaml.safe_load((EXAMPLES / "pytorch-succeeds.yaml").read_text())
    job["metadata"] |= {"name": name, "namespace": JOBS_NAMESPACE}
    deployed.admin.apply(yaml.safe_dump(job))

    def forbidden_events() -> list[dict[str, Any]]:
        events = deployed.admin.get_json(
            "events", "-n", JOBS_NAMESPACE, "--field-selector",
            f"involvedObject.name={name},reason=Forbidden")
        items: list[dict[str, Any]] = events["items"]
        return items

    _wait("a Forbidden event on the job", lambda: bool(forbidden_events()), timeout_s=60)
    message = forbidden_events()[0]["message"]
    # kube-apiserver's own words (a create names no object in its URL, so neither does
    # its message), then what to do about it.
    assert refusal.format(user=ENGINE_USER, namespace=JOBS_NAMESPACE, name=name) in message
    assert "grant the engine's service account this permission" in message
    assert refusal.format(user=ENGINE_USER, namespace=JOBS_NAMESPACE,
                          name=name) in deployed.engine_log.read_text()

    deployed.admin.apply(json.dumps({key: value for key, value in role.items()
                                     if key != "metadata"} | {"metadata": {"name": role_name,
                                     "labels": role["metadata"]["labels"]}}))
    _wait("the job to succeed once the permission is granted again", lambda: _phases(
        deployed.admin).get(f"PyTorchJob/{name}") == "Succeeded", timeout_s=120)
