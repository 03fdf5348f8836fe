"""The `jobmachine` command: parses flags and calls into the packages.

Every command is a thin shell around one function of a package, so that the
same behaviour is reachable from Python and tested there; this module holds no
logic of its own beyond turning results into exit codes.
"""

from __future__ import annotations

import os
import sys
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer

from engine.kube.in_cluster import DEFAULT_SERVICE_ACCOUNT_DIR

if TYPE_CHECKING:
    from engine.definition.cel_types import SchemaLookup

app = typer.Typer(
    name="jobmachine",
    help="A declarative state-machine job engine for Kubernetes.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def _every_command() -> None:
    """Log in the project's format, without frame locals, whatever the command (a command
    that wants another level or format configures logging again)."""
    from pydantic import ValidationError

    from engine.logs import configure_logging
    from engine.settings import EngineSettings

    try:
        settings = EngineSettings.from_env(None)
    except ValidationError:
        configure_logging()  # the command that reads the settings says what is wrong
        return
    configure_logging(log_format=settings.log_format, level=settings.log_level)


class Level(StrEnum):
    job = "job"
    replica = "replica"
    all = "all"


class GraphFormat(StrEnum):
    dot = "dot"
    mermaid = "mermaid"
    svg = "svg"
    png = "png"


KindOption = Annotated[
    list[Path] | None,
    typer.Option("--kind", help="A CRD or kind description (file or folder) whose schema "
                 "types `job` in the machines governing its kind; those beside the machine "
                 "files and the shipped CRDs are read without it. Repeatable."),
]


def _kind_schemas(paths: list[Path], kinds: list[Path] | None) -> SchemaLookup:
    """The schemas `validate` and `check` type `job` with; a --kind file that is missing or
    has errors stops the command with its FILE:LINE:COL lines."""
    from engine.api.kind_schemas import kind_schema_lookup
    from engine.definition import DefinitionError

    try:
        return kind_schema_lookup(paths, kinds or ())
    except DefinitionError as exc:
        typer.echo(str(exc), err=True)
        raise typer.Exit(code=1) from exc


@app.command()
def validate(
    paths: Annotated[list[Path], typer.Argument(help="Machine files or folders of them.")],
    kind: KindOption = None,
) -> None:
    """Check machine definitions; print FILE:LINE:COL: error|warning: MESSAGE lines, where
    each base was found (the file's folder, then the shipped machines) and a count."""
    from engine.definition.validate import validate_report

    report = validate_report(paths, _kind_schemas(paths, kind))
    for line in [*map(str, report.diagnostics), *report.notes]:
        typer.echo(line)
    typer.echo(report.summary())
    if report.errors:
        raise typer.Exit(code=1)


class TraceFormat(StrEnum):
    text = "text"
    dot = "dot"
    svg = "svg"


@app.command()
def check(
    paths: Annotated[list[Path], typer.Argument(help="Machine files or folders of them.")],
    max_replicas: Annotated[
        int, typer.Option(min=1, max=4, help="Replicas per type, from 1 to this.")] = 1,
    max_types: Annotated[
        int, typer.Option(min=1, help="Replica types in one job: every combination of this "
                          "many of the kind's types.")] = 2,
    backoff_limit: Annotated[
        int, typer.Option(min=0, max=5, help="The checked jobs' runPolicy.backoffLimit.")] = 1,
    faults: Annotated[
        int, typer.Option(min=0, max=3, help="Disruptions per trace: lost node, deleted pod, "
                          "suspension, invalid spec.")] = 1,
    max_states: Annotated[
        int, typer.Option(min=100, help="Situations per job shape before giving up.")] = 20_000,
    jobs: Annotated[
        int | None, typer.Option(min=1, help="Job shapes explored at once (default: CPUs).")
    ] = None,
    output_format: Annotated[
        TraceFormat, typer.Option("--format", help="text, or dot/svg: the first broken "
                                  "rule's trace drawn over the machine (with -o).")
    ] = TraceFormat.text,
    output: Annotated[
        Path | None, typer.Option("-o", "--output", help="Where --format dot|svg writes.")
    ] = None,
    kind: KindOption = None,
) -> None:
    """Explore every reachable situation of each machine with the engine's own decisions;
    exit 1 with FILE:LINE:COL and the shortest trace of each broken rule."""
    from engine.logs import configure_logging
    from engine.modelcheck.check import check_paths
    from engine.modelcheck.report import report_lines, trace_picture
    from engine.modelcheck.shapes import Bounds

    if output_format != TraceFormat.text and output is None:
        raise typer.BadParameter("--format dot|svg writes a picture: give -o FILE",
                                 param_hint="--output")
    # The engine's own warnings (a pod value that fails, once per situation) are summed up
    # in the report, once per expression.
    configure_logging(level="ERROR")
    bounds = Bounds(max_replicas=max_replicas, max_types=max_types,
                    backoff_limit=backoff_limit, faults=faults, max_states=max_states)
    report = check_paths(paths, bounds, jobs=jobs or os.cpu_count() or 1,
                         schemas=_kind_schemas(paths, kind))
    for line in report_lines(report):
        typer.echo(line)
    broken = [(m, v) for m in report.machines for v in m.violations]
    if output is not None and broken:
        output.write_bytes(trace_picture(*broken[0], fmt=output_format.value))
        typer.echo(f"{output}: the trace of {broken[0][1].rule}, drawn")
    raise typer.Exit(code=0 if report.ok else 1)


@app.command()
def graph(
    file: Annotated[
        Path | None, typer.Argument(help="A machine definition file (or use --job).")
    ] = None,
    job: Annotated[
        str | None,
        typer.Option(help="NAMESPACE/NAME: draw this job's machine with the path it took."),
    ] = None,
    kubeconfig: Annotated[
        Path | None, typer.Option(help="With --job: the cluster (default: $KUBECONFIG).")
    ] = None,
    machines: Annotated[
        Path | None,
        typer.Option(help="With --job: draw these machine files (default: the revision the "
                          "job ran with, from the cluster)."),
    ] = None,
    level: Annotated[Level, typer.Option(help="Which machine to draw.")] = Level.all,
    output_format: Annotated[
        GraphFormat | None,
        typer.Option("--format", help="Output format (default: from -o's suffix, else dot)."),
    ] = None,
    output: Annotated[
        Path | None, typer.Option("-o", "--output", help="Write here instead of stdout.")
    ] = None,
    machine: Annotated[
        str | None,
        typer.Option(help="metadata.name of the definition, when the file holds several."),
    ] = None,
    rollout: Annotated[
        bool,
        typer.Option("--rollout", help="With FILE: draw the path of its rollout (spec.rollout) "
                                       "for 3 replicas at the defaults, situation by situation."),
    ] = False,
    depth: Annotated[
        int | None,
        typer.Option(min=0, help="With --job: how many levels of the job's child objects to "
                                 "draw with their paths (a JobSet's Jobs: 1; default: all; "
                                 "0: the job alone)."),
    ] = None,
) -> None:
    """Draw a machine definition, or one job's path through it, as DOT, Mermaid, SVG or PNG."""
    from engine.graph.render import RenderError, render_file

    fmt = (output_format.value if output_format else None) or _format_from_suffix(output)
    if (file is None) == (job is None):
        _fail("give either a machine FILE or --job NAMESPACE/NAME")
    try:
        if rollout:
            if file is None:
                _fail("--rollout draws a machine FILE's rollout, not a job's")
            data = _rollout_picture(file, machine, fmt)
        elif job is not None:
            data = _job_picture(job, kubeconfig, machines, level=level.value, fmt=fmt,
                                depth=depth)
        else:
            assert file is not None
            data = render_file(file, level=level.value, fmt=fmt, machine=machine)
    except RenderError as exc:
        _fail(str(exc))
    if output is None:
        sys.stdout.buffer.write(data)  # PNG is bytes: written as they are, not decoded
        sys.stdout.flush()
    else:
        output.write_bytes(data)


class TimelineFormat(StrEnum):
    text = "text"
    json = "json"


@app.command()
def simulate(
    scenario: Annotated[Path, typer.Argument(help="A scenario file (examples/simulations/).")],
    output: Annotated[
        Path | None,
        typer.Option("-o", "--output", help="Write the job's path picture here (.svg, .png, "
                                            ".dot or .mmd, by suffix)."),
    ] = None,
    until: Annotated[
        str, typer.Option(help="Stop after this much simulated time (a duration: 90m, 24h).")
    ] = "24h",
    output_format: Annotated[
        TimelineFormat, typer.Option("--format", help="The timeline as text lines or JSON.")
    ] = TimelineFormat.text,
) -> None:
    """Play a scenario through the engine's decisions on a fake clock; exit 1 if its expect
    is not met, 2 if the scenario is wrong."""
    from engine.definition.durations import parse_duration
    from engine.graph.render import RenderError
    from engine.logs import configure_logging
    from engine.shipped import ROOT
    from engine.simulation.loading import ScenarioError
    from engine.simulation.picture import tree_picture
    from engine.simulation.play import play
    from engine.simulation.run import NeverSettlesError
    from engine.simulation.timeline import json_report, text_report

    seconds = parse_duration(until)
    if seconds is None:
        raise typer.BadParameter(f"{until!r} is not a duration such as 90m or 24h",
                                 param_hint="--until")
    configure_logging(level="WARNING")
    try:
        played = play(scenario, machines=ROOT / "machines", until_s=seconds)
    except ScenarioError as exc:
        for diagnostic in exc.diagnostics:
            typer.echo(str(diagnostic), err=True)
        raise typer.Exit(code=2) from None
    except NeverSettlesError as exc:
        _fail(str(exc))
    typer.echo(json_report(played) if output_format == TimelineFormat.json else text_report(played))
    if output is not None:
        try:
            picture = tree_picture(played.simulation.worlds, fmt=_format_from_suffix(output))
        except RenderError as exc:
            _fail(str(exc))
        output.write_bytes(picture)
    for diagnostic in played.unmet:
        typer.echo(str(diagnostic), err=True)
    raise typer.Exit(code=1 if played.unmet else 0)


def _fail(message: str) -> NoReturn:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code=1)


def _rollout_picture(file: Path, machine: str | None, fmt: str) -> bytes:
    from engine.definition import DefinitionError, load_definitions
    from engine.definition.cel import CelEvaluationError
    from engine.graph.rollout import RolloutPictureError, rollout_picture
    from engine.modelcheck.rollouts import PATH_SHAPE, rollout_path

    try:
        found = [d for d in load_definitions([file]) if machine in {None, d.name}]
    except DefinitionError as exc:
        _fail(str(exc))
    if len(found) != 1:
        _fail(f"{file}: {len(found)} definitions match: choose one with --machine NAME")
    [definition] = found
    if definition.rollout is None:
        _fail(f"{file}: machine {definition.name} has no rollout (spec.rollout)")
    try:
        steps = rollout_path(definition)
        title = (f"{definition.governs.kind} (machine {definition.name}): one order of a "
                 f"rollout, {PATH_SHAPE}")
        return rollout_picture(title, steps, fmt)
    except (CelEvaluationError, ValueError, RolloutPictureError) as exc:
        _fail(str(exc))


def _job_picture(
    job: str, kubeconfig: Path | None, machines: Path | None, *, level: str, fmt: str,
    depth: int | None,
) -> bytes:
    from engine.app.job_graph import JobNotFoundError, job_picture
    from engine.definition import DefinitionError, load_definitions
    from engine.kube.client import KubeClient
    from engine.kube.errors import ApiError
    from engine.settings import EngineSettings

    namespace, _, name = job.rpartition("/")
    if not namespace or not name:
        _fail(f"--job takes NAMESPACE/NAME, not {job!r}")
    client = KubeClient.from_kubeconfig(kubeconfig)
    try:
        definitions = load_definitions([machines]) if machines is not None else []
        return job_picture(
            client, namespace, name, definitions=definitions, level=level, fmt=fmt,
            depth=depth, system_namespace=EngineSettings.from_env().system_namespace,
        )
    except (JobNotFoundError, ApiError, DefinitionError) as exc:
        _fail(str(exc))
    finally:
        client.close()


def _given(**flags: object) -> dict[str, object]:
    """The flags given on the command line: they win over JOBMACHINE_* variables."""
    return {
        name: value.value if isinstance(value, StrEnum) else value
        for name, value in flags.items()
        if value is not None
    }


def _format_from_suffix(output: Path | None) -> str:
    suffix = output.suffix.lstrip(".").lower() if output else ""
    return (
        {"mmd": "mermaid", "gv": "dot"}.get(suffix, suffix)
        if suffix in {"dot", "gv", "mermaid", "mmd", "svg", "png"}
        else "dot"
    )


TokenAuthFileOption = Annotated[
    Path | None,
    typer.Option("--token-auth-file", help="Users who log in with a bearer token: CSV lines "
                 "token,user,uid,\"group1,group2\" (kube-apiserver's format)."),
]


def _checked_token_file(path: Path | None) -> Path | None:
    """The token file, read once here so a bad one stops the command in one line."""
    if path is not None:
        from engine.cluster.apiserver.auth.authentication import load_token_users

        try:
            load_token_users(path)
        except (OSError, ValueError, UnicodeDecodeError) as exc:
            _fail(f"--token-auth-file: {exc}")
    return path


FaultPlanOption = Annotated[
    Path | None,
    typer.Option("--fault-plan", help="Inject faults from this JSON/YAML plan (tests and the "
                 "chaos harness; docs/embedded-cluster.md). Off when omitted."),
]


AuditLogOption = Annotated[
    str | None,
    typer.Option("--audit-log-path", help="Append one audit.k8s.io/v1 Event per request, as "
                 "JSON lines at the Metadata level, to this file ('-': standard output)."),
]


EventTtlOption = Annotated[
    str,
    typer.Option("--event-ttl", help="How long an Event is kept after its last write, as a "
                 "duration (1h, 90s, 5m; 0 keeps events until deleted), as kube-apiserver's "
                 "--event-ttl."),
]


CompactionIntervalOption = Annotated[
    str,
    typer.Option("--compaction-interval", help="How often the data dir's journal is compacted "
                 "into its snapshot while serving, as a duration (5m, 30s; 0: only at start), "
                 "as kube-apiserver's --etcd-compaction-interval."),
]


def _duration_seconds(flag: str, value: str) -> float:
    """A duration flag in seconds; a value that is not a duration stops the command."""
    from engine.definition.durations import parse_duration

    seconds = parse_duration(value)
    if seconds is None:
        _fail(f"{flag}: {value!r} is not a duration such as 1h, 90s or 5m")
    return seconds


def _event_ttl_seconds(value: str) -> float:
    """The --event-ttl in seconds; a value that is not a duration stops the command."""
    return _duration_seconds("--event-ttl", value)


@app.command()
def apiserver(
    host: Annotated[str, typer.Option(help="Address to bind (loopback by default).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port; 0 picks a free one.")] = 6443,
    data_dir: Annotated[
        Path | None, typer.Option(help="Persist objects here; memory only when omitted.")
    ] = None,
    kubeconfig: Annotated[
        Path | None,
        typer.Option(help="Where to write the kubeconfig (default DATA_DIR/kubeconfig)."),
    ] = None,
    tls: Annotated[
        bool,
        typer.Option(
            help="Serve HTTPS with a generated CA (the default). Over plain HTTP every request "
            "still needs the token, and kubectl does not send one there: use --no-tls only "
            "with clients that do, such as the Python client."
        ),
    ] = True,
    audit_log_path: AuditLogOption = None,
    token_auth_file: TokenAuthFileOption = None,
    fault_plan: FaultPlanOption = None,
    event_ttl: EventTtlOption = "1h",
    compaction_interval: CompactionIntervalOption = "5m",
) -> None:
    """Serve the embedded Kubernetes-compatible API server until interrupted."""
    from engine.cluster.apiserver.endpoints.faults import FaultInjector, FaultPlanError
    from engine.cluster.apiserver.endpoints.serve import ServerOptions, serve_forever
    from engine.cluster.apiserver.storage.persistence import CorruptDataError

    faults = None
    if fault_plan is not None:
        try:
            faults = FaultInjector.from_file(fault_plan)
        except FaultPlanError as exc:
            _fail(f"--fault-plan: {exc}")
    options = ServerOptions(audit_log=audit_log_path,
                            token_auth_file=_checked_token_file(token_auth_file), faults=faults,
                            event_ttl=_event_ttl_seconds(event_ttl),
                            compaction_interval=_duration_seconds("--compaction-interval",
                                                                  compaction_interval))
    try:
        serve_forever(host=host, port=port, data_dir=data_dir, kubeconfig=kubeconfig, tls=tls,
                      options=options)
    except CorruptDataError as exc:
        _fail(str(exc))


@app.command("repair-data")
def repair_data(
    data_dir: Annotated[
        Path, typer.Option(help="The data directory of `jobmachine apiserver` or `up`.")
    ],
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Change nothing: say what would be kept and "
                           "moved aside, and exit 1 if anything would.")
    ] = False,
) -> None:
    """Make a data dir with damaged records startable: keep every good record of the snapshot
    and journal, move the other lines aside (FILE.rejected-STAMP, with line numbers)."""
    from engine.cluster.apiserver.storage.journal_repair import repair_data_dir
    from engine.cluster.apiserver.storage.persistence import CorruptDataError

    try:
        report = repair_data_dir(data_dir, dry_run=dry_run)
    except (OSError, CorruptDataError, RuntimeError) as exc:
        _fail(str(exc))
    for line in report.lines():
        typer.echo(line)
    if dry_run and report.changed:
        raise typer.Exit(code=1)


manifests_app = typer.Typer(
    help="Write the manifests jobmachine is deployed with.", no_args_is_help=True
)
app.add_typer(manifests_app, name="manifests")


@manifests_app.command("crds")
def manifests_crds(
    output: Annotated[
        Path, typer.Option("-o", "--output", help="Directory to write the CRDs into.")
    ] = Path("crds"),
    kinds: Annotated[
        Path, typer.Option(help="Folder (or file) of job kind descriptions.")
    ] = Path("kinds"),
    check: Annotated[
        bool, typer.Option("--check", help="Write nothing; exit 1 if the directory is stale.")
    ] = False,
) -> None:
    """Write the StateMachine CRD and one CRD per job kind described in --kinds."""
    from engine.api.manifests import stale_crds, write_crds
    from engine.definition import DefinitionError

    try:
        if check:
            stale = stale_crds(output, kinds)
            for name in stale:
                typer.echo(f"stale: {output / name}", err=True)
            if stale:
                raise typer.Exit(code=1)
            return
        written = write_crds(output, kinds)
    except DefinitionError as exc:
        _fail(str(exc))
    for path in written:
        typer.echo(str(path))


class Overlay(StrEnum):
    single = "single"
    ha = "ha"
    sharded = "sharded"


@manifests_app.command("install")
def manifests_install(
    overlay: Annotated[
        Overlay, typer.Option(help="single: one engine; ha: two with leader election; "
                              "sharded: three sharing six shards.")
    ] = Overlay.ha,
    service_monitor: Annotated[
        bool, typer.Option("--service-monitor", help="Add a ServiceMonitor (the Prometheus "
                           "Operator's CRDs must be installed).")
    ] = False,
    image: Annotated[
        str | None, typer.Option(help="The engine's image in the Deployment (default: "
                                 "deploy/'s jobmachine:0.1.0).")
    ] = None,
    kubeconfig: Annotated[
        Path | None, typer.Option(help="The cluster to install into (default: $KUBECONFIG, "
                                  "else ~/.kube/config).")
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option("-o", "--output", help="Install nothing: write one file per object into "
                     "this folder, numbered in apply order, or with `-o -` one YAML stream to "
                     "stdout."),
    ] = None,
) -> None:
    """Install jobmachine into a cluster: the CRDs, deploy/'s overlay (namespace, RBAC,
    Deployment, metrics Service, PodDisruptionBudget) and the shipped machines, after checking
    that the cluster's Kubernetes release is new enough. With -o, write them instead."""
    import yaml

    from engine.app.install_manifests import ManifestError, install_objects, object_file_name
    from engine.shipped import shipped_dir

    try:
        crds = sorted(shipped_dir("crds").glob("*.yaml"))
        machines = sorted(shipped_dir("machines").glob("*.yaml"))
        objects = install_objects(shipped_dir("deploy"), crds, overlay=overlay.value,
                                  service_monitor=service_monitor, machines=machines,
                                  image=image)
    except (ManifestError, FileNotFoundError) as exc:
        _fail(str(exc))
    if output is None:
        from engine.app.cluster_install import InstallError, install_into_cluster

        try:
            install_into_cluster(kubeconfig, objects, say=typer.echo,
                                 note=lambda line: typer.echo(f"note: {line}", err=True))
        except InstallError as exc:
            _fail(str(exc))
        return
    texts = [yaml.safe_dump(obj, sort_keys=False) for obj in objects]
    if str(output) == "-":
        typer.echo("---\n".join(texts), nl=False)
        return
    output.mkdir(parents=True, exist_ok=True)
    for number, (obj, text) in enumerate(zip(objects, texts, strict=True)):
        path = output / object_file_name(number, obj)
        path.write_text(text)
        typer.echo(str(path))


@app.command()
def crd(
    description: Annotated[Path, typer.Argument(help="A job kind description (kind: JobKind).")],
    output: Annotated[
        Path | None,
        typer.Option("-o", "--output", help="Write the CRD into this folder instead of stdout."),
    ] = None,
) -> None:
    """Make a job kind's CustomResourceDefinition from its short description."""
    from engine.api.manifests import described_kinds, kind_crd_text
    from engine.definition import DefinitionError

    try:
        described = described_kinds(description)
    except DefinitionError as exc:
        _fail(str(exc))
    if not described:
        _fail(f"{description}: no JobKind description found")
    for kind, source in described:
        text = kind_crd_text(kind, source)
        if output is None:
            typer.echo(("---\n" if len(described) > 1 else "") + text, nl=False)
            continue
        output.mkdir(parents=True, exist_ok=True)
        path = output / f"{kind.crd_name}.yaml"
        path.write_text(text)
        typer.echo(str(path))


class NodeMode(StrEnum):
    process = "process"
    simulate = "simulate"


NodeModeOption = Annotated[
    NodeMode, typer.Option(help="process: run containers' commands; simulate: no processes.")
]


class PodSecurityLevel(StrEnum):
    privileged = "privileged"
    baseline = "baseline"
    restricted = "restricted"


class LogFormat(StrEnum):
    text = "text"
    json = "json"


class GangSchedulerName(StrEnum):
    volcano = "volcano"
    scheduler_plugins = "scheduler-plugins"


UiAddressOption = Annotated[
    str, typer.Option(help="The address the web view listens on (0.0.0.0 to reach it from "
                      "other machines; every page asks for a token the API server accepts).")
]

GangSchedulerOption = Annotated[
    GangSchedulerName | None,
    typer.Option(help="The PodGroup API gang scheduled jobs use: volcano "
                 "(scheduling.volcano.sh, the default) or scheduler-plugins "
                 "(scheduling.x-k8s.io)."),
]
GangSchedulingOption = Annotated[
    bool,
    typer.Option("--gang-scheduling", help="Gang schedule every job, not only those whose "
                 "runPolicy has a schedulingPolicy."),
]


@app.command()
def run(
    kubeconfig: Annotated[
        Path | None, typer.Option(help="Cluster to run against (default: $KUBECONFIG).")
    ] = None,
    in_cluster: Annotated[
        bool, typer.Option("--in-cluster", help="Use the pod's service account (its token, "
                           "CA and namespace, and KUBERNETES_SERVICE_HOST/PORT).")
    ] = False,
    service_account_dir: Annotated[
        Path, typer.Option(help="Where --in-cluster reads the service-account files.")
    ] = DEFAULT_SERVICE_ACCOUNT_DIR,
    machines: Annotated[
        Path | None, typer.Option(help="Apply this folder's machine definitions as "
                                  "StateMachine objects first, with these credentials "
                                  "(default: none; the engine runs the StateMachine objects "
                                  "the cluster has).")
    ] = None,
    namespace: Annotated[
        str | None, typer.Option(help="Only run jobs in this namespace (default: all).")
    ] = None,
    workers: Annotated[
        int | None, typer.Option(min=1, help="Reconciles at once (default 4).")
    ] = None,
    leader_elect: Annotated[
        bool, typer.Option("--leader-elect", help="Act only while holding the leader Lease.")
    ] = False,
    shards: Annotated[
        int | None,
        typer.Option(min=1, max=1024, help="Split jobs into this many shards, shared out among "
                     "all replicas run with the same number (one Lease per shard).")
    ] = None,
    lease_namespace: Annotated[
        str, typer.Option(help="Namespace of the leader Lease or the shard Leases.")
    ] = "default",
    metrics_port: Annotated[
        int | None, typer.Option(help="Serve /metrics, /healthz and /readyz on this port.")
    ] = None,
    metrics_address: Annotated[
        str, typer.Option(help="The address the metrics port listens on; 0.0.0.0 in a pod, "
                          "so that probes and Prometheus reach it.")
    ] = "127.0.0.1",
    log_format: Annotated[
        LogFormat | None, typer.Option(help="text (default), or json for clusters.")
    ] = None,
    live: Annotated[
        bool, typer.Option("--live", help="Print one line per job state change and per "
                           "replica failure or restart, as `up` does.")
    ] = False,
    gang_scheduler_name: GangSchedulerOption = None,
    gang_scheduling: GangSchedulingOption = False,
    parent_pid: Annotated[
        int | None, typer.Option(hidden=True, help="Stop when this process is gone (`up`).")
    ] = None,
    ui_port: Annotated[
        int | None, typer.Option(min=0, max=65535, help="Serve the web view (jobs on their "
                                 "machines, live) on this port; 0 picks a free one.")
    ] = None,
    ui_address: UiAddressOption = "127.0.0.1",
) -> None:
    """Run the engine against a cluster until SIGINT or SIGTERM."""
    from engine.app.run import MachinesRefused, RunOptions, run_engine
    from engine.kube.in_cluster import InClusterError, pod_identity
    from engine.logs import configure_logging
    from engine.settings import ENV_PREFIX, EngineSettings

    if in_cluster and kubeconfig is not None:
        _fail("give either --kubeconfig or --in-cluster, not both")
    if leader_elect and shards is not None:
        _fail("give either --leader-elect or --shards, not both: with shards every replica "
              "works, on its share of the jobs")
    pod = None
    if in_cluster:
        try:
            pod = pod_identity(service_account_dir, os.environ)
        except InClusterError as exc:
            _fail(str(exc))
    # In a pod, the engine's own namespace is the pod's unless the environment names one.
    system_namespace = (pod.namespace if pod is not None
                        and ENV_PREFIX + "SYSTEM_NAMESPACE" not in os.environ else None)
    settings = EngineSettings.from_env(None, **_given(
        workers=workers, log_format=log_format, gang_scheduler_name=gang_scheduler_name,
        gang_scheduling=gang_scheduling or None, system_namespace=system_namespace))
    configure_logging(log_format=settings.log_format, level=settings.log_level)
    try:
        code = run_engine(RunOptions(
            kubeconfig=kubeconfig, in_cluster=pod, machines=machines, namespace=namespace,
            leader_elect=leader_elect, shards=shards, lease_namespace=lease_namespace,
            metrics_port=metrics_port, metrics_address=metrics_address, live=live,
            parent_pid=parent_pid, settings=settings, ui_port=ui_port, ui_address=ui_address,
        ))
    except MachinesRefused as exc:
        _fail(str(exc))
    raise typer.Exit(code=code)


@app.command()
def up(
    data_dir: Annotated[Path, typer.Option(help="Where objects, logs and the kubeconfig live.")] = (
        Path(".jobmachine")
    ),
    port: Annotated[int, typer.Option(help="API server port; 0 picks a free one.")] = 6443,
    node_mode: NodeModeOption = NodeMode.process,
    machines: Annotated[
        Path | None, typer.Option(help="Folder of machine definitions (default: shipped).")
    ] = None,
    workers: Annotated[
        int | None, typer.Option(min=1, help="Reconciles at once (default 4).")
    ] = None,
    restart_backoff: Annotated[
        float | None,
        typer.Option(help="Seconds the local node waits before restarting a crashed container "
                     "a second time, doubling each time (default 10, as the kubelet)."),
    ] = None,
    restart_backoff_max: Annotated[
        float | None,
        typer.Option(help="The longest such wait in seconds (default 300, as the kubelet)."),
    ] = None,
    gang_scheduler_name: GangSchedulerOption = None,
    gang_scheduling: GangSchedulingOption = False,
    node_capacity: Annotated[
        str | None,
        typer.Option(help="What the local node offers pods, e.g. cpu=8,memory=16Gi,"
                     "nvidia.com/gpu=2 (default: this machine's CPUs and memory, 110 pods, no "
                     "GPUs); pods that do not fit stay Pending."),
    ] = None,
    quiet: Annotated[
        bool,
        typer.Option("--quiet", "-q", help="Print no line per job state change, replica "
                     "failure or restart."),
    ] = False,
    audit_log_path: AuditLogOption = None,
    token_auth_file: TokenAuthFileOption = None,
    event_ttl: EventTtlOption = "1h",
    compaction_interval: CompactionIntervalOption = "5m",
    pod_security: Annotated[
        PodSecurityLevel,
        typer.Option("--pod-security", help="The Pod Security level the default namespace "
                     "enforces, as kube-apiserver's PodSecurity admission (privileged: none).",
                     case_sensitive=False),
    ] = PodSecurityLevel.baseline,
    engine: Annotated[
        bool,
        typer.Option("--engine/--no-engine", help="Run the engine too; --no-engine serves the "
                     "API server and node only, for an engine run elsewhere (e.g. the image)."),
    ] = True,
    ui_port: Annotated[
        int, typer.Option(min=0, max=65535, help="The web view's port (jobs on their machines, "
                          "live; its address with a login token is printed); 0 picks a free one.")
    ] = 0,
    ui_address: UiAddressOption = "127.0.0.1",
) -> None:
    """Run the API server (with the CRDs), a local node and the engine until Ctrl-C."""
    from dataclasses import replace

    from engine.app.up import UpOptions, local_settings, serve_until_interrupted
    from engine.cluster.apiserver.storage.persistence import CorruptDataError
    from engine.cluster.node import Capacity, RestartBackoff
    from engine.logs import configure_logging

    ttl = _event_ttl_seconds(event_ttl)
    settings = local_settings(None, **_given(
        workers=workers, gang_scheduler_name=gang_scheduler_name,
        gang_scheduling=gang_scheduling or None))
    try:
        capacity = Capacity.parse(node_capacity) if node_capacity is not None else None
        backoff = RestartBackoff.from_env()
        backoff = replace(
            backoff,
            initial_s=backoff.initial_s if restart_backoff is None else restart_backoff,
            max_s=backoff.max_s if restart_backoff_max is None else restart_backoff_max,
        )
    except ValueError as exc:
        _fail(str(exc))
    configure_logging(log_format=settings.log_format, level=settings.log_level)
    try:
        serve_until_interrupted(UpOptions(
            data_dir=data_dir.resolve(), port=port, node_mode=node_mode.value,
            machines=machines, settings=settings, restart_backoff=backoff,
            node_capacity=capacity, audit_log=audit_log_path,
            token_auth_file=_checked_token_file(token_auth_file), event_ttl=ttl,
            compaction_interval=_duration_seconds("--compaction-interval", compaction_interval),
            pod_security=pod_security.value, ui_port=ui_port, ui_address=ui_address,
        ), quiet=quiet, with_engine=engine)
    except CorruptDataError as exc:
        _fail(str(exc))


@app.command(hidden=True)
def node(
    url: Annotated[str, typer.Option(help="The embedded API server's address.")],
    logs_dir: Annotated[Path, typer.Option(help="Where containers' logs are written.")],
    state_dir: Annotated[Path, typer.Option(help="Where the node keeps its own state.")],
    ca_file: Annotated[
        Path | None, typer.Option(help="The CA that signed the server's certificate.")
    ] = None,
    mode: NodeModeOption = NodeMode.process,
    capacity: Annotated[
        str | None, typer.Option(help="What the node offers pods (as up's --node-capacity).")
    ] = None,
    ready_fd: Annotated[
        int | None, typer.Option(help="Write a line to this descriptor once registered.")
    ] = None,
    parent_pid: Annotated[
        int | None, typer.Option(help="Stop when this process is gone (`up`).")
    ] = None,
) -> None:
    """The local node `up` runs as its own process; reads its bearer token from stdin."""
    from engine.cluster.node import Capacity, RestartBackoff
    from engine.cluster.node.child import NodeSpec, serve_node

    token = sys.stdin.readline().strip()
    if not token:
        _fail("the node reads its bearer token from its standard input; none was given")
    try:
        spec = NodeSpec(url=url, ca_file=ca_file, logs_dir=logs_dir, state_dir=state_dir,
                        mode=mode.value, restart_backoff=RestartBackoff.from_env(),
                        capacity=Capacity.parse(capacity) if capacity is not None else None)
    except ValueError as exc:
        _fail(str(exc))
    serve_node(spec, token=token, ready_fd=ready_fd, parent_pid=parent_pid)


@app.command()
def demo(
    output: Annotated[
        Path, typer.Option("-o", "--output", help="Where the pictures are written.")
    ] = Path("demo-output"),
    node_mode: Annotated[
        NodeMode, typer.Option(help="process: run the examples' commands; simulate: no processes.")
    ] = NodeMode.process,
    examples: Annotated[
        Path | None, typer.Option(help="Folder of job manifests (default: shipped examples/).")
    ] = None,
    real: Annotated[
        bool, typer.Option("--real", help="Run examples/real: replicas that train for real and "
                                          "print their results (pip install -e '.\\[real]'; "
                                          "the MPIJob needs Open MPI's mpirun).")
    ] = False,
) -> None:
    """Run the examples on a throw-away local cluster; exit 0 if every job ended as expected."""
    from engine.app.demo import DemoError, DemoOptions, run_demo
    from engine.logs import configure_logging

    configure_logging(level="WARNING")
    try:
        ok = run_demo(DemoOptions(output=output, node_mode=node_mode.value, examples=examples,
                                  real=real))
    except DemoError as exc:
        _fail(str(exc))
    raise typer.Exit(code=0 if ok else 1)


if __name__ == "__main__":
    app()
