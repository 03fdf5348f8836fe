"""Fault plans and the seeded injector: replayable decisions, shares, matching, parsing."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.cluster.apiserver.endpoints.faults import (
    FaultInjector,
    FaultPlan,
    FaultPlanError,
    FaultRule,
    plan_to_json,
)
from engine.cluster.apiserver.endpoints.request_info import RequestInfo


def _info(verb: str = "create", resource: str = "pods", subresource: str = "") -> RequestInfo:
    return RequestInfo(verb=verb, path="/api/v1/namespaces/default/pods", resource_request=True,
                       api_version="v1", namespace="default", resource=resource,
                       subresource=subresource)


def _requests(n: int) -> list[RequestInfo]:
    kinds = [("create", "pods"), ("get", "pods"), ("update", "configmaps"), ("list", "jobs")]
    return [_info(*kinds[i % len(kinds)]) for i in range(n)]


PLAN = FaultPlan((
    FaultRule("throttle", share=0.2, verbs=("create", "update")),
    FaultRule("unavailable", share=0.1),
), seed=7)


def _labels(injector: FaultInjector, requests: list[RequestInfo]) -> list[str | None]:
    out = []
    for info in requests:
        decision = injector.decide(info)
        out.append(decision.label if decision else None)
    return out


def test_same_seed_and_order_give_the_same_faults() -> None:
    requests = _requests(500)
    first = _labels(FaultInjector(PLAN), requests)
    assert first == _labels(FaultInjector(PLAN), requests)
    other = FaultPlan(PLAN.rules, seed=8)
    assert first != _labels(FaultInjector(other), requests)


def test_set_plan_restarts_the_sequence_from_the_seed() -> None:
    requests = _requests(200)
    injector = FaultInjector(PLAN)
    first = _labels(injector, requests)
    injector.set_plan(PLAN)
    assert _labels(injector, requests) == first


def test_shares_are_respected() -> None:
    injector = FaultInjector(FaultPlan((FaultRule("error", share=0.25),
                                        FaultRule("conflict", share=0.5)), seed=1))
    n = 4000
    labels = _labels(injector, [_info()] * n)
    # rule 0 hits 25%; rule 1 gets half of the remaining 75%
    assert abs(labels.count("0:error") / n - 0.25) < 0.03
    assert abs(labels.count("1:conflict") / n - 0.375) < 0.03
    assert injector.report()["injected"] == {"0:error": labels.count("0:error"),
                                             "1:conflict": labels.count("1:conflict")}
    assert injector.report()["decisions"] == n


def test_disabled_injector_decides_nothing() -> None:
    injector = FaultInjector(FaultPlan((FaultRule("error"),)), enabled=False)
    assert injector.decide(_info()) is None
    injector.enabled = True
    assert injector.decide(_info()) is not None


def test_rules_match_by_verb_and_resource() -> None:
    rule = FaultRule("error", verbs=("create",), resources=("pods", "jobs/status"))
    assert rule.matches(_info("create", "pods"))
    assert not rule.matches(_info("get", "pods"))
    assert not rule.matches(_info("create", "configmaps"))
    assert rule.matches(_info("create", "jobs", "status"))
    assert not rule.matches(_info("create", "jobs"))
    assert rule.matches(_info("create", "pods", "status"))  # a plural covers its subresources
    assert not rule.matches(RequestInfo(verb="get", path="/version"))
    cut = FaultRule("cut-watch", after_events=1)
    assert cut.matches(_info("watch")) and not cut.matches(_info("list"))
    assert FaultRule("delay", seconds=0.1).matches(_info("deletecollection", "secrets"))


def test_spared_users_never_get_the_fault() -> None:
    rule = FaultRule("error", spare_users=("chaos-observer",))
    assert rule.matches(_info(), "jobmachine-engine") and rule.matches(_info())
    assert not rule.matches(_info(), "chaos-observer")
    injector = FaultInjector(FaultPlan((rule,), seed=1))
    assert injector.decide(_info(), "chaos-observer") is None
    assert injector.decide(_info(), "kubernetes-admin") is not None
    spec = {"rules": [{"action": "error", "spare_users": "chaos-observer"}]}
    assert FaultPlan.from_dict(spec).rules[0].spare_users == ("chaos-observer",)


def test_plan_from_yaml_and_json(tmp_path: Path) -> None:
    path = tmp_path / "plan.yaml"
    path.write_text(
        "seed: 3\n"
        "rules:\n"
        "  - {action: throttle, verbs: [create], resources: pods, share: 0.5, retry_after: 2}\n"
        "  - {name: slow, action: delay, seconds: 0.25}\n"
        "  - {action: cut-watch, after_events: 3}\n"
        "  - {action: drop, stage: mid-body, share: 0.1}\n")
    plan = FaultPlan.load(path)
    assert plan.seed == 3
    assert plan.rules[0] == FaultRule("throttle", share=0.5, verbs=("create",),
                                      resources=("pods",), retry_after=2)
    assert plan.rules[1].name == "slow" and plan.rules[1].seconds == 0.25
    assert plan.rules[2].verbs == ("watch",)
    json_path = tmp_path / "plan.json"
    json_path.write_text('{"seed": 3, "rules": [{"action": "error", "share": 0.5}]}')
    assert FaultPlan.load(json_path).rules == (FaultRule("error", share=0.5),)


@pytest.mark.parametrize(("spec", "message"), [
    ({"rules": [{"action": "explode"}]}, "rules[0].action: 'explode' is not one of"),
    ({"rules": [{"share": 0.5}]}, "rules[0].action: required"),
    ({"rules": [{}, {"action": "error", "share": 1.5}]}, "rules[0].action: required"),
    ({"rules": [{"action": "error", "share": 1.5}]}, "rules[0].share: must be a number"),
    ({"rules": [{"action": "error", "verbs": ["fetch"]}]}, "rules[0].verbs: unknown verb"),
    ({"rules": [{"action": "error", "resources": [1]}]}, "rules[0].resources: must be a list"),
    ({"rules": [{"action": "delay"}]}, "rules[0].seconds:"),
    ({"rules": [{"action": "throttle", "retry_after": -1}]}, "rules[0].retry_after:"),
    ({"rules": [{"action": "drop", "stage": "later"}]}, "rules[0].stage:"),
    ({"rules": [{"action": "cut-watch"}]}, "rules[0].after_events:"),
    ({"rules": [{"action": "error", "color": "red"}]}, "rules[0].color: unknown field"),
    ({"rules": [{"action": "error", "spare_users": [""]}]}, "rules[0].spare_users:"),
    ({"seed": "x", "rules": []}, "seed: must be an integer"),
    ({"rule": []}, "unknown field 'rule'"),
    ({"rules": {}}, "rules: must be a list"),
    ([1], "must be a mapping"),
])
def test_plan_errors_name_the_field(spec: object, message: str) -> None:
    with pytest.raises(FaultPlanError) as caught:
        FaultPlan.from_dict(spec)
    assert message in str(caught.value)


def test_load_errors_name_the_file(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("rules: [{action: error, share: 2}]\n")
    with pytest.raises(FaultPlanError, match=r"bad\.yaml: rules\[0\]\.share"):
        FaultPlan.load(path)
    path.write_text("rules: [\n")
    with pytest.raises(FaultPlanError, match="not JSON or YAML"):
        FaultPlan.load(path)
    with pytest.raises(FaultPlanError, match=r"missing\.yaml"):
        FaultPlan.load(tmp_path / "missing.yaml")


def test_a_plan_written_as_json_reads_back(tmp_path: Path) -> None:
    plan = FaultPlan((FaultRule("cut-watch", share=0.5, after_events=2, verbs=("watch",)),
                      FaultRule("drop", stage="after", resources=("pods",), name="lost",
                                spare_users=("observer",))), 9)
    path = tmp_path / "replay.json"
    path.write_bytes(plan_to_json(plan))
    assert FaultPlan.load(path) == plan
