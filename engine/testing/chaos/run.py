"""One chaos run: jobs of every kind and outcome while the engine is killed, the API server
faults and the node is lost; then the verdict of `invariants.py` and the run's figures.

The API server runs in this process (so its faults can be switched during the
run) with the local node; the engine runs as `jobmachine run` in a process of
its own. The harness talks to the server as a user the fault plan spares: it
must see the truth to judge, and its own job submissions are not under test.
Everything is drawn from one seed, so a run can be repeated (the timing of the
processes is not, so a failure is replayed by its seed and its report).
"""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml
from loguru import logger

from engine.cluster.apiserver.endpoints.faults import FaultInjector
from engine.cluster.apiserver.endpoints.serve import (
    RunningApiServer,
    ServerOptions,
    running_apiserver,
)
from engine.cluster.node import Capacity, RestartBackoff
from engine.controller.machines.install import prepare_cluster
from engine.controller.machines.registry import recorded_revision
from engine.controller.machines.revisions import CONTROLLER_REVISIONS, compile_revision
from engine.definition.compiled import CompiledDefinition
from engine.kube.client import KubeClient
from engine.kube.errors import AlreadyExists, ApiError, NotFound
from engine.kube.resources import NAMESPACES
from engine.shipped import shipped_dir
from engine.testing.chaos.disruptions import (
    EngineProcess,
    Every,
    FaultPhases,
    NodeHost,
    chaos_fault_plan,
)
from engine.testing.chaos.invariants import Violation, check_run, event_shortfalls
from engine.testing.chaos.observer import ChaosObserver
from engine.testing.chaos.workload import KINDS, JobPlan, choose, plan_job

_log = logger.bind(component="chaos")

HARNESS_USER = "chaos-harness"
EVENT_QUEUE_S = 10.0
"""How long after a job settles its Events may still wait in the engine's queue (they are
posted one at a time, behind every other job's): a SIGKILL within it may take them."""
SYSTEM_NAMESPACE = "jobmachine-system"


@dataclass(frozen=True)
class ChaosConfig:
    """What a run does; the defaults are the short run `.ci/run` makes."""

    jobs: int = 60
    seed: int = 1
    node_mode: Literal["simulate", "process"] = "simulate"
    in_flight: int = 20
    """Jobs running at once; the next is submitted as one settles."""
    namespaces: int = 3
    engine_kills: tuple[float, float] | None = (6.0, 12.0)
    """Seconds between two SIGKILLs of the engine (uniform), or None for none."""
    node_losses: tuple[float, float] | None = (20.0, 30.0)
    faults: tuple[float, float] | None = (3.0, 8.0)
    """Seconds each fault phase (on, then off) lasts, or None for no faults."""
    settle_s: float = 120.0
    """How long a job may take to reach its end before it counts as stuck."""


@dataclass
class ChaosReport:
    """What happened and what broke."""

    config: ChaosConfig
    seconds: float = 0.0
    jobs: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    scenarios: Counter[str] = field(default_factory=Counter)
    kinds: Counter[str] = field(default_factory=Counter)
    disrupted_jobs: int = 0
    engine_kills: int = 0
    node_losses: int = 0
    disrupted_pods: int = 0
    pods_created: int = 0
    events_lost_with_engine: int = 0
    """State changes of jobs that ran while the engine was SIGKILLed, with no Event."""
    pods_after_deletion: int = 0
    """Pods created after their job's deletion began (a reconcile under way); all must
    be cleaned up."""
    restarts_counted: int = 0
    faults: dict[str, Any] = field(default_factory=dict)
    compactions: int = 0
    observer_gaps: list[str] = field(default_factory=list)
    engine_log_lines: int = 0
    engine_tracebacks: int = 0
    harness_errors: list[str] = field(default_factory=list)
    violations: list[Violation] = field(default_factory=list)

    def figures(self) -> dict[str, Any]:
        """The report as JSON-ready data (for `benchmarks/chaos.py --json`)."""
        figures = {name: value for name, value in vars(self).items()
                   if name not in ("config", "violations")}
        figures["config"] = vars(self.config)
        figures["violations"] = [str(violation) for violation in self.violations]
        return figures

    def summary(self) -> str:
        """The report as a person reads it."""
        lines = [
            f"chaos run: seed {self.config.seed}, {self.config.node_mode} mode, "
            f"{self.jobs} jobs in {self.seconds:.0f} s",
            f"  kinds: {dict(sorted(self.kinds.items()))}",
            f"  scenarios: {dict(sorted(self.scenarios.items()))}",
            f"  outcomes: {dict(sorted(self.outcomes.items()))}",
            f"  engine killed (SIGKILL) {self.engine_kills} times; node lost "
            f"{self.node_losses} times ({self.disrupted_pods} pods, {self.disrupted_jobs} "
            f"jobs); watch history compacted {self.compactions} times",
            f"  faults injected: {self.faults.get('injected', {})} of "
            f"{self.faults.get('decisions', 0)} requests",
            f"  pods created {self.pods_created} ({self.pods_after_deletion} after their job's "
            f"deletion began), restarts counted {self.restarts_counted}",
            f"  state changes whose Event died with a SIGKILLed engine: "
            f"{self.events_lost_with_engine}",
            f"  engine log: {self.engine_log_lines} lines, {self.engine_tracebacks} tracebacks",
            f"  observer gaps: {len(self.observer_gaps)}; harness errors: "
            f"{len(self.harness_errors)}",
            f"  violations: {len(self.violations)}",
        ]
        lines += [f"    {violation}" for violation in self.violations[:50]]
        return "\n".join(lines)


class _SilentTransitions:
    """Which recorded transitions the job's machine posts no Event for (read from the
    machine revision the job runs with)."""

    def __init__(self, client: KubeClient) -> None:
        self._client = client
        self._compiled: dict[str, CompiledDefinition] = {}

    def __call__(self, job: Mapping[str, Any], level: str, source: str, target: str,
                 reason: str) -> bool:
        recorded = recorded_revision(job)
        if recorded is None:
            return False
        revision = recorded[1]
        compiled = self._compiled.get(revision)
        if compiled is None:
            obj = self._client.get(CONTROLLER_REVISIONS, revision, SYSTEM_NAMESPACE)
            compiled = self._compiled[revision] = compile_revision(obj)
        machine = compiled.job if level == "job" else compiled.replica
        matches = [t for t in machine.transitions
                   if t.target == target and source in t.sources and t.reason == reason]
        return bool(matches) and all(t.silent for t in matches)


def _harness_kubeconfig(server: RunningApiServer, token: str, path: Path) -> Path:
    config = yaml.safe_load(server.kubeconfig.read_text())
    for user in config.get("users") or ():
        user["user"] = {"token": token}
    path.write_text(yaml.safe_dump(config))
    return path


@contextmanager
def _cluster(work: Path, injector: FaultInjector, seed: int
             ) -> Iterator[tuple[RunningApiServer, KubeClient]]:
    token = f"chaos-{seed}-{random.Random(seed).getrandbits(64):016x}"
    users = work / "users.csv"
    users.write_text(f'{token},{HARNESS_USER},chaos-1,"system:masters"\n')
    options = ServerOptions(faults=injector, token_auth_file=users)
    with running_apiserver(data_dir=work / "data", tls=True, options=options) as server:
        client = KubeClient.from_kubeconfig(
            _harness_kubeconfig(server, token, work / "harness.kubeconfig"),
            qps=1000, burst=2000, user_agent="chaos-harness")
        try:
            prepare_cluster(client, crds=[shipped_dir("crds"), shipped_dir("crds") / "podgroups"],
                            machines=shipped_dir("machines"))
            yield server, client
        finally:
            client.close()


def _retrying(what: str, call: Any, errors: list[str]) -> Any:
    """The harness's own writes: retried on what a busy server answers."""
    for attempt in range(20):
        try:
            return call()
        except (AlreadyExists, NotFound):
            raise
        except ApiError as exc:
            if attempt == 19:
                errors.append(f"{what}: {exc}")
                raise
            time.sleep(0.2)
    return None


class _Driver:
    """Submits the jobs, plays their scenarios' actions, and settles each."""

    def __init__(self, config: ChaosConfig, client: KubeClient, *, rng: random.Random,
                 chaos_dir: Path, report: ChaosReport, observer: ChaosObserver) -> None:
        self.config = config
        self.client = client
        self.rng = rng
        self.chaos_dir = chaos_dir
        self.report = report
        self.observer = observer
        self.plans: list[JobPlan] = []
        self.active: list[JobPlan] = []
        self.disrupted: set[str] = set()
        self._lock = threading.Lock()

    def mark_disrupted(self, job_uids: set[str]) -> None:
        with self._lock:
            self.disrupted |= job_uids

    def run(self) -> None:
        submitted = settled = 0
        started = time.monotonic()
        while submitted < self.config.jobs or self.active:
            while submitted < self.config.jobs and len(self.active) < self.config.in_flight:
                self._submit(submitted)
                submitted += 1
            for plan in list(self.active):
                self._act(plan)
                if self._settled(plan):
                    self.active.remove(plan)
                    settled += 1
                    if settled % 500 == 0:
                        _log.info(f"{settled}/{self.config.jobs} jobs settled in "
                                  f"{time.monotonic() - started:.0f} s")
            time.sleep(0.05)

    def _submit(self, index: int) -> None:
        shape, scenario = choose(self.rng)
        namespace = f"chaos-{index % self.config.namespaces}"
        name = f"{shape.kind.lower()}-{index:05d}"
        plan = plan_job(namespace, name, shape, scenario, rng=self.rng,
                        chaos_dir=str(self.chaos_dir))
        created = _retrying(f"create {plan.key}", lambda: self.client.create(
            shape.resource, plan.body, namespace), self.report.harness_errors)
        plan.uid = str(created["metadata"]["uid"])
        plan.created_at = time.monotonic()
        self.plans.append(plan)
        self.active.append(plan)

    def _act(self, plan: JobPlan) -> None:
        age = time.monotonic() - plan.created_at
        scenario = plan.scenario
        res = plan.shape.resource
        try:
            if scenario.suspend_at is not None and "suspend" not in plan.actions_done \
                    and age >= scenario.suspend_at:
                plan.actions_done.append("suspend")
                self._patch_suspend(plan, suspend=True)
            if scenario.resume_after is not None and "suspend" in plan.actions_done \
                    and "resume" not in plan.actions_done \
                    and age >= (scenario.suspend_at or 0) + scenario.resume_after:
                plan.actions_done.append("resume")
                self._patch_suspend(plan, suspend=False)
            if scenario.delete_at is not None and "delete" not in plan.actions_done \
                    and age >= scenario.delete_at:
                plan.actions_done.append("delete")
                _retrying(f"delete {plan.key}", lambda: self.client.delete(
                    res, plan.name, plan.namespace, uid=plan.uid), self.report.harness_errors)
        except NotFound:
            pass

    def _patch_suspend(self, plan: JobPlan, *, suspend: bool) -> None:
        body = {"spec": {"runPolicy": {"suspend": suspend}}}
        _retrying(f"suspend={suspend} {plan.key}", lambda: self.client.patch(
            plan.shape.resource, plan.name, body, namespace=plan.namespace),
            self.report.harness_errors)

    def _settled(self, plan: JobPlan) -> bool:
        """Whether the job reached its end (then it is deleted, as a user cleans up), or
        ran out of time (the checks then report where it stopped)."""
        life = self.observer.job(plan.uid)
        with self._lock:
            plan.disrupted = plan.uid in self.disrupted
        ended = life is not None and (
            life.deleted is not None if plan.expected_end == "Deleted"
            else bool(life.phases_seen) and life.phases_seen[-1] in ("Succeeded", "Failed"))
        waiting = self.config.settle_s * (2 if plan.disrupted else 1)
        if not ended and time.monotonic() - plan.created_at < waiting:
            return False
        plan.settled_at = time.monotonic()
        if life is None or life.deleted is None:
            with suppress(NotFound):
                _retrying(f"clean up {plan.key}", lambda: self.client.delete(
                    plan.shape.resource, plan.name, plan.namespace, uid=plan.uid,
                    propagation_policy="Background"), self.report.harness_errors)
        return True


def _wait_for_cleanup(observer: ChaosObserver, plans: list[JobPlan], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        lingering = [plan for plan in plans
                     if (life := observer.job(plan.uid)) is not None and life.deleted is None]
        leftovers = [child for plan in plans for child in observer.children_of(plan.uid)
                     if child.deleted is None]
        if not lingering and not leftovers:
            return
        time.sleep(0.2)


def _engine_log_figures(files: list[Path]) -> tuple[int, int]:
    lines = tracebacks = 0
    for path in files:
        for line in path.read_text(errors="replace").splitlines():
            lines += 1
            tracebacks += line.startswith("Traceback (most recent call last)")
    return lines, tracebacks


def run_chaos(config: ChaosConfig, work: Path) -> ChaosReport:
    """Run the chaos the config describes in `work` (left there for a post-mortem)."""
    rng = random.Random(config.seed)
    report = ChaosReport(config)
    chaos_dir = work / "replicas"
    for sub in ("locks", "attempts", "violations"):
        (chaos_dir / sub).mkdir(parents=True, exist_ok=True)
    (work / "logs").mkdir(parents=True, exist_ok=True)
    injector = FaultInjector(chaos_fault_plan(config.seed, HARNESS_USER), enabled=False)
    started = time.monotonic()
    with _cluster(work, injector, config.seed) as (server, client):
        for index in range(config.namespaces):
            with suppress(AlreadyExists):
                client.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace",
                                           "metadata": {"name": f"chaos-{index}"}})
        observer = ChaosObserver(client, [shape.resource for shape in KINDS])
        observer.start()
        node = NodeHost(server, config.node_mode, work / "node",
                        Capacity.of_this_machine({"pods": "1000"}),
                        RestartBackoff(initial_s=0.05, max_s=0.5))
        node.start()
        engine = EngineProcess(server.kubeconfig, work / "logs", {
            "JOBMACHINE_REPLICA_BACKOFF_BASE_S": "0.05", "JOBMACHINE_REPLICA_BACKOFF_CAP_S": "0.5",
            "JOBMACHINE_CLIENT_QPS": "500", "JOBMACHINE_CLIENT_BURST": "1000",
            "JOBMACHINE_EVENT_QPS": "500", "JOBMACHINE_EVENT_BURST": "1000",
        })
        engine.start()
        driver = _Driver(config, client, rng=rng, chaos_dir=chaos_dir, report=report,
                         observer=observer)
        phases = FaultPhases(injector, random.Random(rng.random()))
        disruptions: list[Every] = []
        if config.engine_kills:
            disruptions.append(Every("engine-kill", config.engine_kills,
                                     engine.restart,
                                     random.Random(rng.random())))
        if config.node_losses:
            disruptions.append(Every("node-loss", config.node_losses,
                                     lambda: driver.mark_disrupted(node.lose(client)),
                                     random.Random(rng.random())))
        if config.faults:
            disruptions.append(Every("faults", config.faults, phases.toggle,
                                     random.Random(rng.random())))
        for disruption in disruptions:
            disruption.start()
        try:
            driver.run()
        finally:
            for disruption in disruptions:
                disruption.stop()
                report.harness_errors += disruption.errors
            injector.enabled = False
            engine.ensure_running()
        _wait_for_cleanup(observer, driver.plans, timeout=60)
        _, version = client.list(NAMESPACES)
        observer.wait_caught_up(int(version))
        engine.stop()
        node.stop()
        observer.stop()
        for plan in driver.plans:
            plan.disrupted = plan.uid in driver.disrupted
            plan.engine_killed = any(
                plan.created_at <= kill <= plan.settled_at + EVENT_QUEUE_S
                for kill in engine.kills)
        silent = _SilentTransitions(client)
        report.violations = check_run(driver.plans, observer, silent, chaos_dir / "violations")
        _fill(report, driver.plans, observer, silent=silent, engine=engine, node=node,
              injector=injector, phases=phases)
    report.seconds = time.monotonic() - started
    _log.info(report.summary())
    return report


def _fill(report: ChaosReport, plans: list[JobPlan], observer: ChaosObserver, *,
          silent: _SilentTransitions, engine: EngineProcess, node: NodeHost,
          injector: FaultInjector, phases: FaultPhases) -> None:
    report.jobs = len(plans)
    for plan in plans:
        life = observer.job(plan.uid)
        phases_seen = life.phases_seen if life else []
        end = phases_seen[-1] if phases_seen else "never started"
        if plan.expected_end == "Deleted":
            end = f"deleted after {end}"
        report.outcomes[end] += 1
        report.scenarios[plan.scenario.name] += 1
        report.kinds[plan.shape.kind] += 1
        report.disrupted_jobs += plan.disrupted
        if life is not None and life.restarts_seen:
            report.restarts_counted += life.restarts_seen[-1]
        if life is not None and plan.engine_killed:
            report.events_lost_with_engine += sum(
                want - got for want, got in event_shortfalls(
                    life, observer.events_of(plan.uid), silent).values())
    report.pods_created = len(observer.pods)
    report.pods_after_deletion = sum(
        1 for pod in observer.pods.values()
        if pod.job_uid and (job := observer.jobs.get(pod.job_uid)) is not None
        and job.deleting is not None and pod.created > job.deleting)
    report.engine_kills = len(engine.kills)
    report.node_losses = node.losses
    report.disrupted_pods = node.disrupted_pods
    report.faults = injector.report()
    report.compactions = phases.compactions
    report.observer_gaps = list(observer.gaps)
    report.engine_log_lines, report.engine_tracebacks = _engine_log_figures(engine.log_files)
