"""A batch/v1 Job refused on create and update in kube-apiserver's words, without a server:
the generated selector and labels, the Indexed limits on both sides of each bound, managedBy,
the replacement and restart policies, the selector's match with the template, the pod
hostname of the last index; on update the immutable fields, with upstream's exceptions (an
elastic Indexed Job's completions, a suspended Job that never started rescheduled)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from engine.cluster.apiserver.validation.batch_jobs import validate_job

POD = {"restartPolicy": "Never", "dnsPolicy": "ClusterFirst",
       "containers": [{"name": "main", "image": "busybox", "imagePullPolicy": "IfNotPresent",
                       "terminationMessagePolicy": "File"}]}
GENERATED = {"batch.kubernetes.io/controller-uid": "u1", "batch.kubernetes.io/job-name": "pi",
             "controller-uid": "u1", "job-name": "pi"}
SELECTOR = {"matchLabels": {"batch.kubernetes.io/controller-uid": "u1"}}


def job(name: str = "pi", labels: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    """A Job as the server holds it after defaulting, with these spec fields on top."""
    return {
        "metadata": {"name": name, "uid": "u1"},
        "spec": {"selector": SELECTOR, "completions": 1, "parallelism": 1,
                 "template": {"metadata": {"labels": dict(GENERATED if labels is None
                                                          else labels)},
                              "spec": copy.deepcopy(POD)},
                 **spec},
    }


def said(obj: dict[str, Any], old: dict[str, Any] | None = None) -> list[str]:
    return [f"{c.field}: {c.message}" for c in validate_job(obj, old)]


INDEXED = {"completionMode": "Indexed", "completions": 3, "parallelism": 3}


def test_a_job_as_defaulting_leaves_it_passes() -> None:
    assert said(job()) == []
    assert said(job(**INDEXED, backoffLimitPerIndex=0, maxFailedIndexes=3,
                    managedBy="example.com/queue")) == []


class TestGeneratedSelector:
    def test_each_generated_label_must_be_there_legacy_first(self) -> None:
        assert said(job(labels={"controller-uid": "u1"})) == [
            "spec.template.metadata.labels[job-name]: Required value: must be 'pi'",
            "spec.template.metadata.labels[batch.kubernetes.io/controller-uid]: Required value: "
            "must be 'u1'",
            "spec.template.metadata.labels[batch.kubernetes.io/job-name]: Required value: must "
            "be 'pi'",
            'spec.template.metadata.labels: Invalid value: map[string]string{"controller-uid":'
            '"u1"}: `selector` does not match template `labels`',
        ]

    def test_a_wrong_label_shows_the_whole_label_map(self) -> None:
        assert said(job(labels={**GENERATED, "job-name": "other"})) == [
            'spec.template.metadata.labels[job-name]: Invalid value: map[string]string{'
            '"batch.kubernetes.io/controller-uid":"u1", "batch.kubernetes.io/job-name":"pi", '
            '"controller-uid":"u1", "job-name":"other"}: must be \'pi\'']

    def test_a_generated_selector_must_select_the_generated_labels(self) -> None:
        found = said(job(selector={"matchLabels": {"batch.kubernetes.io/controller-uid": "u2"}},
                         labels={**GENERATED, "batch.kubernetes.io/controller-uid": "u2"}))
        assert found[-1].startswith("spec.selector: Invalid value: ")
        assert found[-1].endswith(": `selector` not auto-generated")

    def test_a_manual_selector_is_judged_only_against_the_template(self) -> None:
        manual = job(manualSelector=True, selector={"matchLabels": {"app": "pi"}},
                     labels={"app": "pi"})
        assert said(manual) == []
        manual["spec"]["template"]["metadata"]["labels"] = {"app": "other"}
        assert said(manual) == [
            'spec.template.metadata.labels: Invalid value: map[string]string{"app":"other"}: '
            "`selector` does not match template `labels`"]

    def test_a_job_stored_before_the_prefixed_labels_keeps_validating_without_them(
        self
    ) -> None:
        legacy = {"controller-uid": "u1", "job-name": "pi"}
        old = job(labels=legacy, selector={"matchLabels": {"controller-uid": "u1"}})
        new = copy.deepcopy(old)
        new["spec"]["parallelism"] = 0
        assert said(new, old) == []
        assert len(said(job(labels=legacy,
                            selector={"matchLabels": {"controller-uid": "u1"}}))) == 2

    def test_without_a_selector_it_is_required_and_matches_nothing(self) -> None:
        bare = job()
        del bare["spec"]["selector"]
        assert said(bare) == [
            "spec.selector: Required value",
            'spec.template.metadata.labels: Invalid value: map[string]string{'
            '"batch.kubernetes.io/controller-uid":"u1", "batch.kubernetes.io/job-name":"pi", '
            '"controller-uid":"u1", "job-name":"pi"}: `selector` does not match template '
            "`labels`",
        ]


class TestIndexed:
    def test_completions_are_required(self) -> None:
        assert said(job(completionMode="Indexed", completions=None)) == [
            "spec.completions: Required value: when completion mode is Indexed"]

    def test_an_unknown_mode_is_unsupported(self) -> None:
        assert said(job(completionMode="Sometimes")) == [
            'spec.completionMode: Unsupported value: "Sometimes": supported values: '
            '"NonIndexed", "Indexed"']

    def test_parallelism_is_at_most_100000(self) -> None:
        assert said(job(**{**INDEXED, "parallelism": 100000})) == []
        assert said(job(**{**INDEXED, "parallelism": 100001})) == [
            "spec.parallelism: Invalid value: 100001: must be less than or equal to 100000 when "
            "completion mode is Indexed"]

    def test_max_failed_indexes_is_at_most_the_completions_and_100000(self) -> None:
        base = {**INDEXED, "backoffLimitPerIndex": 1}
        assert said(job(**base, maxFailedIndexes=4)) == [
            "spec.maxFailedIndexes: Invalid value: 4: must be less than or equal to completions"]
        big = {**base, "completions": 200000, "parallelism": 1}
        assert said(job(**big, maxFailedIndexes=100001)) == [
            "spec.maxFailedIndexes: Invalid value: 100001: must be less than or equal to 100000",
            "spec.maxFailedIndexes: Invalid value: 100001: must be less than or equal to 10000 "
            "when completions are above 100000 and used with backoff limit per index",
        ]

    def test_above_100000_completions_a_per_index_job_has_tighter_limits(self) -> None:
        at_limit = {**INDEXED, "completions": 100000, "parallelism": 20000,
                    "backoffLimitPerIndex": 1}
        assert said(job(**at_limit)) == []
        above = {**at_limit, "completions": 100001}
        assert said(job(**above)) == [
            "spec.maxFailedIndexes: Required value: must be specified when completions is above "
            "100000",
            "spec.parallelism: Invalid value: 20000: must be less than or equal to 10000 when "
            "completions are above 100000 and used with backoff limit per index",
        ]
        assert said(job(**{**above, "parallelism": 10000}, maxFailedIndexes=10000)) == []

    def test_per_index_fields_need_indexed_mode(self) -> None:
        assert said(job(backoffLimitPerIndex=1, maxFailedIndexes=1)) == [
            "spec.backoffLimitPerIndex: Invalid value: 1: requires indexed completion mode",
            "spec.maxFailedIndexes: Invalid value: 1: requires indexed completion mode",
        ]

    def test_the_last_index_must_give_a_dns_label_hostname(self) -> None:
        manual = {"manualSelector": True, "selector": {"matchLabels": {"app": "x"}},
                  "labels": {"app": "x"}}

        def named(name: str, completions: int) -> list[str]:
            return said(job(name, **manual, **{**INDEXED, "completions": completions,
                                                "parallelism": 1}))

        assert named("n" * 61, 10) == []
        assert named("n" * 61, 11) == [
            f'metadata.name: Invalid value: "{"n" * 61}": will not able to create pod with '
            f"invalid DNS label: {'n' * 61}-10"]
        assert named("n" * 62, 1) == [
            f'metadata.name: Invalid value: "{"n" * 62}": will not able to create pod with '
            f"invalid DNS label: {'n' * 62}-0"]
        assert named("n" * 62, 0) == []


class TestPolicies:
    def test_managed_by_is_a_domain_prefixed_path_of_at_most_63_bytes(self) -> None:
        assert said(job(managedBy="nodomain")) == [
            'spec.managedBy: Invalid value: "nodomain": must be a domain-prefixed path (such as '
            '"acme.io/foo")']
        fits = "example.com/" + "q" * 51
        assert said(job(managedBy=fits)) == []
        assert said(job(managedBy=fits + "q")) == [
            "spec.managedBy: Too long: may not be more than 63 bytes"]

    @pytest.mark.parametrize(("policy", "with_pfp", "why"), [
        ("Soon", False, 'supported values: "Failed", "TerminatingOrFailed"'),
        ("TerminatingOrFailed", True, 'supported values: "Failed"'),
    ])
    def test_the_replacement_policy(self, policy: str, with_pfp: bool, why: str) -> None:
        extra = ({"podFailurePolicy": {"rules": [{"action": "Ignore", "onPodConditions": [
            {"type": "DisruptionTarget", "status": "True"}]}]}} if with_pfp else {})
        assert said(job(podReplacementPolicy=policy, **extra)) == [
            f'spec.podReplacementPolicy: Unsupported value: "{policy}": {why}']

    @pytest.mark.parametrize(("restart", "line"), [
        ("Always", 'Required value: valid values: "OnFailure", "Never"'),
        ("Sometimes", 'Unsupported value: "Sometimes": supported values: "OnFailure", "Never"'),
    ])
    def test_a_jobs_pods_end(self, restart: str, line: str) -> None:
        body = job()
        body["spec"]["template"]["spec"]["restartPolicy"] = restart
        assert f"spec.template.spec.restartPolicy: {line}" in said(body)


class TestUpdate:
    def test_a_spec_error_is_listed_again_by_the_update(self) -> None:
        bad = job(parallelism=-1)
        assert said(bad, job()) == [
            "spec.parallelism: Invalid value: -1: must be greater than or equal to 0"] * 2

    def test_completions_are_immutable_but_for_an_elastic_indexed_job(self) -> None:
        assert said(job(completions=2), job()) == [
            "spec.completions: Invalid value: 2: field is immutable"]
        old = job(**INDEXED)
        assert said(job(**{**INDEXED, "completions": 4, "parallelism": 4}), old) == []
        assert said(job(**{**INDEXED, "completions": 4}), old) == [
            "spec.completions: Invalid value: 4: can only be modified in tandem with "
            "spec.parallelism"]

    @pytest.mark.parametrize(("name", "value", "shown"), [
        ("completionMode", "NonIndexed", '"NonIndexed"'),
        ("backoffLimitPerIndex", 2, "2"),
        ("managedBy", "example.com/other", '"example.com/other"'),
    ])
    def test_these_fields_are_immutable(self, name: str, value: Any, shown: str) -> None:
        old = job(**INDEXED, backoffLimitPerIndex=1, managedBy="example.com/queue")
        new = copy.deepcopy(old)
        new["spec"][name] = value
        assert f"spec.{name}: Invalid value: {shown}: field is immutable" in said(new, old)

    def test_the_template_is_immutable(self) -> None:
        new = job()
        new["spec"]["template"]["spec"]["nodeSelector"] = {"disk": "ssd"}
        (line,) = said(new, job())
        assert line.startswith("spec.template: Invalid value: ")
        assert line.endswith(": field is immutable")

    def test_a_suspended_job_that_never_started_may_be_rescheduled_only(self) -> None:
        old = job(suspend=True)
        moved = job(suspend=True)
        template = moved["spec"]["template"]
        template["spec"]["nodeSelector"] = {"disk": "ssd"}
        template["spec"]["tolerations"] = [{"key": "gpu", "operator": "Exists"}]
        template["metadata"]["annotations"] = {"queue": "a"}
        assert said(moved, old) == []
        started = {**old, "status": {"startTime": "2026-11-30T11:00:00Z"}}
        assert len(said(moved, started)) == 1
        template["spec"]["containers"][0]["image"] = "busybox:2"
        assert len(said(moved, old)) == 1
