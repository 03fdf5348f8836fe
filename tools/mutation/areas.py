"""The areas the mutation report scores, each with the code it mutates and the fast tests it runs.

One table, so that adding a module to the report is one line here. Test selections are the
fast tiers (unit and scenario tests); mutmut then runs, for each mutant, only the tests of
the selection that executed the mutated function.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from fnmatch import fnmatch
from typing import Literal

Kind = Literal["python", "cel"]

# The tests that load the shipped machines and drive them without a cluster: scenario tables,
# the decision core's unit tests over every kind, and the simulation examples (batch/v1 too).
MACHINE_TESTS: tuple[str, ...] = (
    "tests/scenarios",
    "tests/unit/controller/test_decide.py",
    "tests/unit/controller/test_decide_policies.py",
    "tests/unit/controller/test_decide_settled.py",
    "tests/unit/controller/test_kubeflow_restarts.py",
    "tests/unit/controller/test_native_status.py",
    "tests/unit/controller/test_built_in_kinds.py",
    "tests/unit/controller/test_failure_rules.py",
    "tests/unit/simulation",
)


# The decision core's own tests, not all of tests/unit/controller: mutmut runs a test twice
# in one process (once to learn what it covers), which the runtime's tests do not all take
# (Hypothesis refuses a test method run from two instances; test_machine_registry's first
# test fails after other tests have run), and they do not test the decision core.
DECISION_TESTS: tuple[str, ...] = (
    *(
        f"tests/unit/controller/test_{name}.py"
        for name in (
            "claims",
            "decide",
            "decide_policies",
            "decide_settled",
            "decide_held_replays",
            "decide_conditions",
            "decide_timers",
            "decide_counts",
            "decide_in_place_ends",
            "decide_last_failure",
            "decide_errors",
            "decide_planned_once",
            "decide_replica_variables",
            "decide_timeout_on_entry",
            "decide_backoff",
            "reconcile_memo",
            "decide_memo_visits",
            "decide_defaults",
            "decide_rounds",
            "decide_unsettled",
            "decide_stale_replicas",
            "decide_parallelism_lowered",
            "decide_memo_inputs",
            "release_tracking",
            "release_tracking_passes",
            "actions_existing_objects",
            "actions_stale_children",
            "actions_creates",
            "actions_deletions",
            "actions_delete_expectations",
            "actions_surplus",
            "actions_child_fields",
            "actions_planned",
            "actions_services",
            "actions_create_expectations",
            "actions_create_waits",
            "actions_pod_values",
            "actions_stale_pool_members",
            "actions_template_errors",
            "rendered_once",
            "release_tracking_at_once",
            "slow_start_batches",
            "unfinished_replicas",
            "kubeflow_exit_zero",
            "record",
            "expectations",
            "expectations_edges",
            "cleanup",
            "kubeflow_restarts",
            "failure_rules",
            "native_status",
            "built_in_kinds",
            "job_events",
            "events",
            "events_refused",
            "notices",
            "objects",
            "observe",
            "pools",
            "variables",
            "jobspec",
            "refused",
            "manifests",
            "interchangeable_pods",
        )
    ),
    "tests/scenarios",
    "tests/unit/simulation",
)


@dataclass(frozen=True)
class Area:
    """A part of the code with its own score: what is mutated and which tests may kill it."""

    name: str
    kind: Kind
    sources: tuple[str, ...]  # files or globs, relative to the repository's root
    tests: tuple[str, ...]  # pytest paths, relative to the repository's root
    goal: float  # the share of non-equivalent mutants the issue asks to kill
    summary: str
    # Tests left out (pytest --deselect): ones that fail when run out of file order in a
    # process that already ran the selection, as mutmut's forked runs do.
    deselect: tuple[str, ...] = ()


AREAS: tuple[Area, ...] = (
    Area(
        name="definition",
        kind="python",
        sources=("engine/definition/*.py",),
        # The scenario tables step every shipped machine; the simulations (decision-core's)
        # add little here and make each surviving mutant of a template cost half a minute.
        tests=("tests/unit/definition", "tests/scenarios"),
        goal=0.95,
        summary="the machine language: loading, checks, CEL, stepping",
    ),
    Area(
        name="decision-core",
        kind="python",
        sources=(
            "engine/controller/reconcile/decide.py",
            "engine/controller/reconcile/record.py",
            "engine/controller/reconcile/cleanup.py",
            "engine/controller/reconcile/actions.py",
            "engine/controller/reconcile/claims.py",
            "engine/controller/runtime/expectations.py",
        ),
        tests=DECISION_TESTS,
        goal=0.95,
        summary="decide, record, cleanup, actions, claims, expectations",
    ),
    Area(
        name="machine-guards",
        kind="cel",
        sources=("machines/*.yaml",),
        tests=MACHINE_TESTS,
        goal=0.90,
        summary="numbers and comparison operators in the shipped machines' `when:` guards",
    ),
    Area(
        name="scheduling",
        kind="python",
        sources=("engine/cluster/node/scheduling/*.py",),
        tests=("tests/unit/cluster/node/scheduling",),
        goal=0.90,
        summary="the local node's scheduler: requests, fit, capacity, gangs",
    ),
    Area(
        name="apiserver",
        kind="python",
        sources=(
            "engine/cluster/apiserver/registry/store.py",
            "engine/cluster/apiserver/registry/selectors.py",
            "engine/cluster/apiserver/registry/label_syntax.py",
            "engine/cluster/apiserver/patch/patch.py",
            "engine/cluster/apiserver/patch/strategic_merge.py",
            "engine/cluster/apiserver/patch/merge_keys.py",
            "engine/cluster/apiserver/auth/rbac.py",
            "engine/cluster/apiserver/auth/authorization.py",
        ),
        tests=("tests/unit/cluster",),
        goal=0.90,
        summary="the API server's store, selectors, patching and RBAC",
    ),
)

# What runs when no area is named: the language, the decision core and the guards.
DEFAULT_AREAS: tuple[str, ...] = ("definition", "decision-core", "machine-guards")


def narrowed(area: Area, files: Sequence[str]) -> Area | None:
    """`area` with only those of `files` (paths or globs) that lie in it; None if none do."""
    inside = tuple(s for s in area.sources if any(fnmatch(s, f) for f in files))
    inside += tuple(
        f for f in files if any(fnmatch(f, s) for s in area.sources) and f not in inside
    )
    return replace(area, sources=inside) if inside else None


def area_named(name: str) -> Area:
    for area in AREAS:
        if area.name == name:
            return area
    known = ", ".join(a.name for a in AREAS)
    raise KeyError(f"no mutation area {name!r} (known: {known})")
