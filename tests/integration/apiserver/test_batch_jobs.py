"""batch/v1 Jobs over HTTP, through the official client, answered as kube-apiserver answers.

Defaults (explicit zero values too), the generated selector and labels, the
validation rules with upstream's paths and words, immutability on update, the
status subresource and its transition rules, list and watch, the
`status.successful` field selector, the Table, warnings, and a DELETE that
orphans the Job's pods unless told otherwise. No controller runs: nothing here
starts a pod.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from kubernetes import client

from engine.cluster.apiserver.endpoints.serve import RunningApiServer
from tests.integration.apiserver.conftest import pod, raw, status_of
from tests.polling import eventually

JOBS = "/apis/batch/v1/namespaces/default/jobs"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"
MAX_INT32 = 2147483647
GENERATED = ("batch.kubernetes.io/controller-uid", "batch.kubernetes.io/job-name",
             "controller-uid", "job-name")


@pytest.fixture
def batch(api: client.ApiClient) -> client.BatchV1Api:
    return client.BatchV1Api(api)


def job(name: str = "work", restart: str = "Never", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "template": {
                "spec": {
                    "restartPolicy": restart,
                    "containers": [{"name": "main", "image": "busybox:1.36"}],
                }
            },
            **spec,
        },
    }


def refused(call: Any) -> tuple[int, dict[str, Any]]:
    with pytest.raises(client.ApiException) as caught:
        call()
    return caught.value.status, status_of(caught.value)


def created(batch: client.BatchV1Api, body: dict[str, Any]) -> dict[str, Any]:
    """The stored Job as JSON (the client's models drop what they do not know)."""
    made = batch.create_namespaced_job("default", body)
    return dict(batch.api_client.sanitize_for_serialization(made))


class TestDefaults:
    def test_create_fills_in_the_defaults_the_selector_and_the_four_labels(
        self, batch: client.BatchV1Api
    ) -> None:
        made = created(batch, job())
        spec, uid = made["spec"], made["metadata"]["uid"]
        assert {key: spec[key] for key in (
            "completions", "parallelism", "backoffLimit", "completionMode", "suspend",
            "podReplacementPolicy", "manualSelector")} == {
            "completions": 1, "parallelism": 1, "backoffLimit": 6,
            "completionMode": "NonIndexed", "suspend": False,
            "podReplacementPolicy": "TerminatingOrFailed", "manualSelector": False,
        }
        assert spec["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
        labels = dict.fromkeys(GENERATED[::2], uid) | dict.fromkeys(GENERATED[1::2], "work")
        assert spec["template"]["metadata"]["labels"] == labels
        assert made["metadata"]["labels"] == labels  # a Job without labels takes the template's
        assert made["metadata"]["generation"] == 1

    def test_the_template_gets_pod_template_defaults_not_pod_only_ones(
        self, server: RunningApiServer
    ) -> None:
        body = job()
        body["spec"]["template"]["spec"]["containers"][0]["resources"] = {"limits": {"cpu": "1"}}
        answer = raw(server, "POST", JOBS, body).json()
        assert answer["status"] == {}  # Go writes the zero JobStatus
        stored = answer["spec"]["template"]
        assert stored["metadata"]["creationTimestamp"] is None
        pod_spec = stored["spec"]
        assert (pod_spec["dnsPolicy"], pod_spec["schedulerName"]) == (
            "ClusterFirst", "default-scheduler")
        assert pod_spec["terminationGracePeriodSeconds"] == 30
        assert pod_spec["containers"][0]["terminationMessagePolicy"] == "File"
        assert pod_spec["containers"][0]["imagePullPolicy"] == "IfNotPresent"
        # SetDefaults_Pod's own defaults are for pods, not templates.
        assert "enableServiceLinks" not in pod_spec
        assert "requests" not in pod_spec["containers"][0]["resources"]

    def test_a_work_queue_keeps_completions_unset(self, batch: client.BatchV1Api) -> None:
        spec = created(batch, job(parallelism=3))["spec"]
        assert "completions" not in spec and spec["parallelism"] == 3

    def test_completions_alone_defaults_parallelism_to_one(self, batch: client.BatchV1Api) -> None:
        spec = created(batch, job(completions=4))["spec"]
        assert (spec["completions"], spec["parallelism"]) == (4, 1)

    def test_backoff_limit_per_index_makes_the_global_limit_max_int32(
        self, batch: client.BatchV1Api
    ) -> None:
        spec = created(batch, job(completionMode="Indexed", completions=3,
                                  backoffLimitPerIndex=1))["spec"]
        assert spec["backoffLimit"] == MAX_INT32

    def test_a_pod_failure_policy_defaults_replacement_and_pattern_status(
        self, batch: client.BatchV1Api
    ) -> None:
        policy = {"rules": [{"action": "Ignore",
                             "onPodConditions": [{"type": "DisruptionTarget"}]}]}
        spec = created(batch, job(podFailurePolicy=policy))["spec"]
        assert spec["podReplacementPolicy"] == "Failed"
        assert spec["podFailurePolicy"]["rules"][0]["onPodConditions"] == [
            {"type": "DisruptionTarget", "status": "True"}]

    def test_explicit_zero_values_are_values(self, server: RunningApiServer) -> None:
        zeros = {"completions": 0, "parallelism": 0, "backoffLimit": 0, "suspend": False,
                 "manualSelector": False, "activeDeadlineSeconds": 0,
                 "ttlSecondsAfterFinished": 0}
        response = raw(server, "POST", JOBS, job(**zeros))
        assert response.status == 201
        spec = response.json()["spec"]
        assert {key: spec[key] for key in zeros} == zeros
        assert spec["selector"]["matchLabels"]  # manualSelector false still generates

    def test_an_explicit_empty_completion_mode_is_refused(self, server: RunningApiServer) -> None:
        response = raw(server, "POST", JOBS, job("empty", completionMode=""))
        assert response.status == 422
        assert response.json()["message"] == (
            'Job.batch "empty" is invalid: spec.completionMode: Unsupported value: "": '
            'supported values: "NonIndexed", "Indexed"')

    def test_labels_the_user_set_are_kept_beside_the_generated_ones(
        self, batch: client.BatchV1Api
    ) -> None:
        body = job()
        body["spec"]["template"]["metadata"] = {"labels": {"app": "etl"}}
        made = created(batch, body)
        assert made["spec"]["template"]["metadata"]["labels"]["app"] == "etl"
        assert set(made["metadata"]["labels"]) == {"app", *GENERATED}
        own = job("own")
        own["metadata"]["labels"] = {"team": "data"}
        assert created(batch, own)["metadata"]["labels"] == {"team": "data"}

    def test_a_manual_selector_is_left_as_given(self, batch: client.BatchV1Api) -> None:
        body = job(manualSelector=True, selector={"matchLabels": {"app": "etl"}})
        body["spec"]["template"]["metadata"] = {"labels": {"app": "etl"}}
        spec = created(batch, body)["spec"]
        assert spec["selector"] == {"matchLabels": {"app": "etl"}}
        assert spec["template"]["metadata"]["labels"] == {"app": "etl"}


def _pfp(*rules: dict[str, Any]) -> dict[str, Any]:
    return {"podFailurePolicy": {"rules": list(rules)}}


def _exit_codes(values: list[int], operator: str = "In", **extra: Any) -> dict[str, Any]:
    return {"action": "FailJob", "onExitCodes": {"operator": operator, "values": values, **extra}}


_INDEXED = {"completionMode": "Indexed", "completions": 3}
_RULE0 = "spec.podFailurePolicy.rules[0]"
INVALID: list[tuple[str, dict[str, Any], str]] = [
    ("negative parallelism", {"parallelism": -1},
     "spec.parallelism: Invalid value: -1: must be greater than or equal to 0"),
    ("negative backoff limit", {"backoffLimit": -2},
     "spec.backoffLimit: Invalid value: -2: must be greater than or equal to 0"),
    ("restart policy Always", {"restart": "Always"},
     'spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"'),
    ("unknown completion mode", {"completionMode": "Sometimes"},
     'spec.completionMode: Unsupported value: "Sometimes": supported values: "NonIndexed", '
     '"Indexed"'),
    ("indexed without completions", {"completionMode": "Indexed", "parallelism": 2},
     "spec.completions: Required value: when completion mode is Indexed"),
    ("indexed parallelism too high", {**_INDEXED, "parallelism": 100001},
     "spec.parallelism: Invalid value: 100001: must be less than or equal to 100000 when "
     "completion mode is Indexed"),
    ("per-index limit on a NonIndexed job", {"backoffLimitPerIndex": 1},
     "spec.backoffLimitPerIndex: Invalid value: 1: requires indexed completion mode"),
    ("max failed indexes alone", {**_INDEXED, "maxFailedIndexes": 1},
     "spec.backoffLimitPerIndex: Required value: when maxFailedIndexes is specified"),
    ("max failed indexes above completions",
     {**_INDEXED, "backoffLimitPerIndex": 1, "maxFailedIndexes": 4},
     "spec.maxFailedIndexes: Invalid value: 4: must be less than or equal to completions"),
    ("pod failure policy with OnFailure", {"restart": "OnFailure", **_pfp(_exit_codes([1]))},
     'spec.template.spec.restartPolicy: Invalid value: "OnFailure": only "Never" is supported '
     "when podFailurePolicy is specified"),
    ("rule without action", _pfp({"onExitCodes": {"operator": "In", "values": [1]}}),
     f'{_RULE0}.action: Required value: valid values: ["Count" "FailIndex" "FailJob" "Ignore"]'),
    ("FailIndex without per-index limit", _pfp({**_exit_codes([1]), "action": "FailIndex"}),
     f'{_RULE0}.action: Invalid value: "FailIndex": requires the backoffLimitPerIndex to be set'),
    ("both exit codes and conditions",
     _pfp({**_exit_codes([1]), "onPodConditions": [{"type": "DisruptionTarget"}]}),
     f"{_RULE0}: Invalid value: specifying both OnExitCodes and OnPodConditions is not "
     "supported"),
    ("neither exit codes nor conditions", _pfp({"action": "Ignore"}),
     f"{_RULE0}: Invalid value: specifying one of OnExitCodes and OnPodConditions is required"),
    ("unknown container", _pfp(_exit_codes([1], containerName="sidecar")),
     f'{_RULE0}.onExitCodes.containerName: Invalid value: "sidecar": must be one of the '
     "container or initContainer names in the pod template"),
    ("exit code 0 with In", _pfp(_exit_codes([0])),
     f"{_RULE0}.onExitCodes.values[0]: Invalid value: 0: must not be 0 for the In operator"),
    ("unordered exit codes", _pfp(_exit_codes([3, 1], "NotIn")),
     f"{_RULE0}.onExitCodes.values: Invalid value: []int32{{3, 1}}: must be ordered"),
    ("duplicate exit codes", _pfp(_exit_codes([1, 1])),
     f"{_RULE0}.onExitCodes.values[1]: Duplicate value: 1"),
    ("unknown operator", _pfp(_exit_codes([1], "Within")),
     f'{_RULE0}.onExitCodes.operator: Unsupported value: "Within": supported values: "In", '
     '"NotIn"'),
    ("unknown condition status",
     _pfp({"action": "Ignore", "onPodConditions": [{"type": "Ready", "status": "Maybe"}]}),
     f'{_RULE0}.onPodConditions[0].status: Unsupported value: "Maybe": supported values: '
     '"False", "True", "Unknown"'),
    ("too many rules", _pfp(*[_exit_codes([1])] * 21),
     "spec.podFailurePolicy.rules: Too many: 21: must have at most 20 items"),
    ("success policy without rules", {**_INDEXED, "successPolicy": {"rules": []}},
     "spec.successPolicy.rules: Required value: at least one rules must be specified when the "
     "successPolicy is specified"),
    ("success rule with neither field", {**_INDEXED, "successPolicy": {"rules": [{}]}},
     "spec.successPolicy.rules[0]: Required value: at least one of succeededCount or "
     "succeededIndexes must be specified"),
    ("bad succeeded indexes",
     {**_INDEXED, "successPolicy": {"rules": [{"succeededIndexes": "0-1-2"}]}},
     'spec.successPolicy.rules[0].succeededIndexes: Invalid value: "0-1-2": error parsing '
     'succeededIndexes: the fragment "0-1-2" violates the requirement that an index interval '
     "can have at most two parts separated by '-'"),
    ("succeeded count above completions",
     {**_INDEXED, "successPolicy": {"rules": [{"succeededCount": 5}]}},
     "spec.successPolicy.rules[0].succeededCount: Invalid value: 5: must be less than or equal "
     "to 3 (the number of specified completions)"),
    ("replacement policy with a pod failure policy",
     {"podReplacementPolicy": "TerminatingOrFailed", **_pfp(_exit_codes([1]))},
     'spec.podReplacementPolicy: Unsupported value: "TerminatingOrFailed": supported values: '
     '"Failed"'),
    ("unknown replacement policy", {"podReplacementPolicy": "Soon"},
     'spec.podReplacementPolicy: Unsupported value: "Soon": supported values: "Failed", '
     '"TerminatingOrFailed"'),
    ("managedBy without a domain", {"managedBy": "nodomain"},
     'spec.managedBy: Invalid value: "nodomain": must be a domain-prefixed path (such as '
     '"acme.io/foo")'),
    ("manual selector not matching the template",
     {"manualSelector": True, "selector": {"matchLabels": {"app": "other"}}},
     "spec.template.metadata.labels: Invalid value: map[string]string(nil): `selector` does not "
     "match template `labels`"),
    ("negative deadline", {"activeDeadlineSeconds": -5},
     "spec.activeDeadlineSeconds: Invalid value: -5: must be greater than or equal to 0"),
]


@pytest.mark.parametrize(("spec", "message"), [case[1:] for case in INVALID],
                         ids=[case[0] for case in INVALID])
def test_invalid_jobs_are_refused_with_upstreams_words(
    server: RunningApiServer, spec: dict[str, Any], message: str
) -> None:
    """Sent as plain JSON: the official client's own models refuse some of these first."""
    spec = dict(spec)
    response = raw(server, "POST", JOBS, job("bad", spec.pop("restart", "Never"), **spec))
    status = response.json()
    assert response.status == 422 and status["reason"] == "Invalid"
    assert status["message"] == f'Job.batch "bad" is invalid: {message}'
    assert status["details"] == {"name": "bad", "group": "batch", "kind": "Job",
                                 "causes": status["details"]["causes"]}
    path, _, detail = message.partition(": ")
    assert status["details"]["causes"][0]["field"] == path
    assert status["details"]["causes"][0]["message"] == detail


class TestMoreRules:
    def test_an_indexed_job_whose_last_pod_name_is_no_dns_label(
        self, batch: client.BatchV1Api
    ) -> None:
        name = "a" * 62
        _, status = refused(lambda: batch.create_namespaced_job(
            "default", job(name, completionMode="Indexed", completions=10)))
        assert status["message"] == (
            f'Job.batch "{name}" is invalid: metadata.name: Invalid value: "{name}": will not '
            f"able to create pod with invalid DNS label: {name}-9")

    def test_a_manual_selector_is_required(self, batch: client.BatchV1Api) -> None:
        _, status = refused(lambda: batch.create_namespaced_job("default", job(
            "bad", manualSelector=True)))
        assert [(c["field"], c["message"]) for c in status["details"]["causes"]] == [
            ("spec.selector", "Required value"),
            ("spec.template.metadata.labels", "Invalid value: map[string]string(nil): "
                                              "`selector` does not match template `labels`"),
        ]

    def test_a_generated_label_the_user_set_wrong_is_refused(
        self, batch: client.BatchV1Api
    ) -> None:
        body = job("bad")
        body["spec"]["template"]["metadata"] = {"labels": {"job-name": "other"}}
        _, status = refused(lambda: batch.create_namespaced_job("default", body))
        (cause,) = status["details"]["causes"]
        assert cause["field"] == "spec.template.metadata.labels[job-name]"
        assert cause["message"].startswith('Invalid value: map[string]string{"batch.kubernetes')
        assert cause["message"].endswith("\"job-name\":\"other\"}: must be 'bad'")

    def test_the_template_is_validated_as_a_pod_spec(self, batch: client.BatchV1Api) -> None:
        body = job("bad")
        body["spec"]["template"]["spec"]["containers"] = [{"name": "Main"}]
        _, status = refused(lambda: batch.create_namespaced_job("default", body))
        fields = [c["field"] for c in status["details"]["causes"]]
        assert fields == ["spec.template.spec.containers[0].name",
                          "spec.template.spec.containers[0].image"]

    def test_a_string_where_a_count_belongs_is_a_decoding_error(
        self, server: RunningApiServer
    ) -> None:
        response = raw(server, "POST", JOBS, job(completions="3"))
        assert response.status == 400
        assert response.json()["message"] == (
            'Job in version "v1" cannot be handled as a Job: json: cannot unmarshal string into '
            "Go struct field JobSpec.spec.completions of type int32")

    def test_an_unknown_field_is_refused_under_strict_validation(
        self, server: RunningApiServer
    ) -> None:
        response = raw(server, "POST", f"{JOBS}?fieldValidation=Strict", job(completion=3))
        assert response.status == 400
        assert response.json()["message"].endswith(
            'strict decoding error: unknown field "spec.completion"')

    def test_warnings_on_create(self, server: RunningApiServer) -> None:
        dotted = raw(server, "POST", JOBS, job("nightly.report"))
        assert dotted.status == 201
        (warning,) = dotted.headers.get_all("Warning")
        assert warning.startswith('299 - "metadata.name: this is used in Pod names and '
                                  "hostnames, which can result in surprising behavior; a DNS "
                                  "label is recommended: [a lowercase RFC 1123 label must")
        big = raw(server, "POST", JOBS, job("big", completionMode="Indexed", completions=200000,
                                           parallelism=20000))
        assert big.status == 201
        assert big.headers.get_all("Warning") == [
            '299 - "spec: In Indexed Jobs with a number of completions higher than 10^5 and a '
            "parallelism higher than 10^4, Kubernetes might not be able to track "
            'completedIndexes when a big number of indexes fail"']
        assert raw(server, "POST", JOBS, job("plain")).headers.get_all("Warning") is None


class TestUpdates:
    def _update(self, batch: client.BatchV1Api, name: str, change: Any) -> Any:
        stored = dict(batch.api_client.sanitize_for_serialization(
            batch.read_namespaced_job(name, "default")))
        changed = copy.deepcopy(stored)
        change(changed["spec"])
        return batch.replace_namespaced_job(name, "default", changed)

    def test_completions_and_completion_mode_are_immutable(
        self, batch: client.BatchV1Api
    ) -> None:
        batch.create_namespaced_job("default", job("fixed"))
        _, status = refused(lambda: self._update(
            batch, "fixed", lambda spec: spec.update(completions=3)))
        assert status["message"] == (
            'Job.batch "fixed" is invalid: spec.completions: Invalid value: 3: field is immutable')
        _, status = refused(lambda: self._update(
            batch, "fixed", lambda spec: spec.update(completionMode="Indexed")))
        assert ('spec.completionMode: Invalid value: "Indexed": field is immutable'
                in status["message"])

    def test_the_template_is_immutable(self, batch: client.BatchV1Api) -> None:
        batch.create_namespaced_job("default", job("fixed"))

        def new_image(spec: dict[str, Any]) -> None:
            spec["template"]["spec"]["containers"][0]["image"] = "busybox:1.37"

        _, status = refused(lambda: self._update(batch, "fixed", new_image))
        (cause,) = status["details"]["causes"]
        assert cause["field"] == "spec.template"
        assert cause["message"].endswith(": field is immutable")

    def test_parallelism_suspend_and_limits_may_change(self, batch: client.BatchV1Api) -> None:
        batch.create_namespaced_job("default", job("elastic"))
        updated = self._update(batch, "elastic", lambda spec: spec.update(
            parallelism=0, suspend=True, backoffLimit=2, activeDeadlineSeconds=60))
        assert (updated.spec.parallelism, updated.spec.suspend) == (0, True)
        assert updated.metadata.generation == 2

    def test_an_indexed_job_scales_completions_with_parallelism(
        self, batch: client.BatchV1Api
    ) -> None:
        batch.create_namespaced_job("default", job(
            "indexed", completionMode="Indexed", completions=3, parallelism=3))
        updated = self._update(batch, "indexed",
                               lambda spec: spec.update(completions=5, parallelism=5))
        assert updated.spec.completions == 5
        _, status = refused(lambda: self._update(
            batch, "indexed", lambda spec: spec.update(completions=6)))
        assert status["message"] == (
            'Job.batch "indexed" is invalid: spec.completions: Invalid value: 6: can only be '
            "modified in tandem with spec.parallelism")

    def test_a_suspended_job_that_never_started_may_move_its_pods(
        self, batch: client.BatchV1Api
    ) -> None:
        batch.create_namespaced_job("default", job("waiting", suspend=True))

        def schedule(spec: dict[str, Any]) -> None:
            spec["template"]["spec"]["nodeSelector"] = {"disk": "ssd"}
            spec["template"]["metadata"]["annotations"] = {"queue": "a"}

        updated = self._update(batch, "waiting", schedule)
        assert updated.spec.template.spec.node_selector == {"disk": "ssd"}
        batch.create_namespaced_job("default", job("running"))
        _, status = refused(lambda: self._update(batch, "running", schedule))
        assert [c["field"] for c in status["details"]["causes"]] == ["spec.template"]

    def test_the_selector_is_immutable(self, batch: client.BatchV1Api) -> None:
        batch.create_namespaced_job("default", job("fixed"))

        def widen(spec: dict[str, Any]) -> None:
            spec["selector"]["matchLabels"]["job-name"] = "fixed"

        _, status = refused(lambda: self._update(batch, "fixed", widen))
        fields = [c["field"] for c in status["details"]["causes"]]
        assert fields == ["spec.selector"]
        assert status["details"]["causes"][0]["message"].startswith(
            'Invalid value: v1.LabelSelector{MatchLabels:map[string]string{'
            '"batch.kubernetes.io/controller-uid":')


class TestStatus:
    def test_a_status_write_keeps_the_spec(self, batch: client.BatchV1Api) -> None:
        made = created(batch, job("tracked"))
        made["spec"]["parallelism"] = 9
        made["status"] = {"active": 1, "ready": 0, "startTime": "2026-01-01T00:00:00Z"}
        written = batch.replace_namespaced_job_status("tracked", "default", made)
        assert (written.status.active, written.spec.parallelism) == (1, 1)
        assert written.metadata.generation == 1
        stored = batch.read_namespaced_job("tracked", "default")
        plain = dict(batch.api_client.sanitize_for_serialization(stored))
        plain["status"] = {"active": 5}
        replaced = batch.replace_namespaced_job("tracked", "default", plain)
        assert replaced.status.active == 1  # the main resource cannot write status

    def test_patching_the_status(self, batch: client.BatchV1Api) -> None:
        batch.create_namespaced_job("default", job("patched"))
        patched = batch.patch_namespaced_job_status(
            "patched", "default", {"status": {"succeeded": 1}})
        assert patched.status.succeeded == 1

    def test_the_failed_counter_never_decreases(self, batch: client.BatchV1Api) -> None:
        batch.create_namespaced_job("default", job("counted"))
        batch.patch_namespaced_job_status("counted", "default", {"status": {"failed": 2}})
        _, status = refused(lambda: batch.patch_namespaced_job_status(
            "counted", "default", {"status": {"failed": 1}}))
        assert status["message"] == (
            'Job.batch "counted" is invalid: status.failed: Invalid value: 1: cannot decrease the '
            "failed counter")

    def test_complete_needs_its_interim_condition_and_times(
        self, batch: client.BatchV1Api
    ) -> None:
        batch.create_namespaced_job("default", job("done"))
        complete = {"type": "Complete", "status": "True"}
        _, status = refused(lambda: batch.patch_namespaced_job_status(
            "done", "default", {"status": {"conditions": [complete]}}))
        assert [(c["field"], c["message"]) for c in status["details"]["causes"]] == [
            ("status.completionTime", "Required value: completionTime is required for Complete "
                                      "jobs"),
            ("status.conditions", "Invalid value: cannot set Complete=True condition without the "
                                  "SuccessCriteriaMet=true condition"),
            ("status.startTime", "Required value: startTime is required for finished job"),
        ]
        met = {"type": "SuccessCriteriaMet", "status": "True"}
        done = batch.patch_namespaced_job_status("done", "default", {"status": {
            "conditions": [met, complete], "succeeded": 1,
            "startTime": "2026-01-01T00:00:00Z", "completionTime": "2026-01-01T00:01:05Z"}})
        assert [c.type for c in done.status.conditions] == ["SuccessCriteriaMet", "Complete"]
        undone = dict(batch.api_client.sanitize_for_serialization(done))
        undone["status"]["conditions"] = [met]
        _, status = refused(lambda: batch.replace_namespaced_job_status("done", "default", undone))
        assert ("status.conditions: Invalid value: cannot disable the terminal Complete=True "
                "condition") in status["message"]

    def test_failed_needs_failure_target(self, batch: client.BatchV1Api) -> None:
        batch.create_namespaced_job("default", job("lost"))
        failed = {"type": "Failed", "status": "True"}
        _, status = refused(lambda: batch.patch_namespaced_job_status(
            "lost", "default",
            {"status": {"conditions": [failed], "startTime": "2026-01-01T00:00:00Z"}}))
        assert status["message"] == (
            'Job.batch "lost" is invalid: status.conditions: Invalid value: cannot set '
            "Failed=True condition without the FailureTarget=true condition")


    def test_the_start_time_moves_only_while_suspended_or_on_resume(
        self, batch: client.BatchV1Api
    ) -> None:
        """Upstream's rule as fixed in 1.34.2 (kubernetes#134769): a running Job's startTime
        is fixed, but the resume (Suspended True -> False) resets it."""
        batch.create_namespaced_job("default", job("timed"))
        batch.patch_namespaced_job_status("timed", "default", {"status": {"startTime": _START}})
        _, status = refused(lambda: batch.patch_namespaced_job_status(
            "timed", "default", {"status": {"startTime": "2026-01-01T00:05:00Z"}}))
        assert status["message"] == (
            'Job.batch "timed" is invalid: status.startTime: Required value: startTime cannot be '
            "removed for unsuspended job")
        suspended = {"type": "Suspended", "status": "True", "reason": "JobSuspended"}
        batch.patch_namespaced_job_status("timed", "default",
                                          {"status": {"conditions": [suspended]}})
        resumed = {**suspended, "status": "False", "reason": "JobResumed"}
        moved = batch.patch_namespaced_job_status("timed", "default", {"status": {
            "conditions": [resumed], "startTime": "2026-01-01T00:05:00Z"}})
        assert moved.status.start_time.minute == 5

_START = "2026-01-01T00:00:00Z"
_TARGET = {"type": "FailureTarget", "status": "True"}
STATUS_RULES: list[tuple[str, dict[str, Any], dict[str, Any], str]] = [
    ("negative active", {}, {"active": -1},
     "status.active: Invalid value: -1: must be greater than or equal to 0"),
    ("more ready than active", {}, {"active": 1, "ready": 2},
     "status.ready: Invalid value: 2: cannot set more ready pods than active"),
    ("empty uncounted uid", {}, {"uncountedTerminatedPods": {"failed": [""]}},
     'status.uncountedTerminatedPods.failed[0]: Invalid value: "": must not be empty'),
    ("uncounted uid twice", {}, {"uncountedTerminatedPods": {"succeeded": ["a"], "failed": ["a"]}},
     'status.uncountedTerminatedPods.failed[0]: Duplicate value: "a"'),
    ("completed indexes of a NonIndexed job", {}, {"completedIndexes": "0"},
     'status.completedIndexes: Invalid value: "0": cannot set non-empty completedIndexes when '
     "non-indexed completion mode"),
    ("failed indexes without a per-index limit", {}, {"failedIndexes": ""},
     'status.failedIndexes: Invalid value: "": cannot set non-null failedIndexes when '
     "backoffLimitPerIndex is null"),
    ("completed index beyond completions", {"completionMode": "Indexed", "completions": 3},
     {"completedIndexes": "1,3"},
     'status.completedIndexes: Invalid value: "1,3": error parsing completedIndexes: too large '
     'index: "3"'),
    ("failed and completed overlap",
     {"completionMode": "Indexed", "completions": 6, "backoffLimitPerIndex": 1},
     {"completedIndexes": "0,2-4", "failedIndexes": "1,3"},
     'status.failedIndexes: Invalid value: "1,3": failedIndexes and completedIndexes overlap at '
     "index: 3"),
    ("a finished job with active pods", {},
     {"conditions": [_TARGET, {"type": "Failed", "status": "True"}], "active": 1,
      "startTime": _START},
     "status.active: Invalid value: 1: active>0 is invalid for finished job"),
    ("completion time without Complete", {}, {"completionTime": _START, "startTime": _START},
     "status.completionTime: Invalid value: 2026-01-01 00:00:00 +0000 UTC: cannot set "
     "completionTime when there is no Complete=True condition"),
]


@pytest.mark.parametrize(("spec", "status", "message"), [c[1:] for c in STATUS_RULES],
                         ids=[c[0] for c in STATUS_RULES])
def test_status_rules(server: RunningApiServer, spec: dict[str, Any], status: dict[str, Any],
                      message: str) -> None:
    assert raw(server, "POST", JOBS, job("tracked", **spec)).status == 201
    response = raw(server, "PATCH", f"{JOBS}/tracked/status", {"status": status},
                   headers={"Content-Type": "application/merge-patch+json"})
    assert response.status == 422, response.body
    assert response.json()["message"] == f'Job.batch "tracked" is invalid: {message}'


class TestReading:
    def test_list_and_watch(self, server: RunningApiServer, batch: client.BatchV1Api) -> None:
        start = batch.create_namespaced_job("default", job("one")).metadata.resource_version
        batch.create_namespaced_job("default", job("two"))
        batch.patch_namespaced_job_status("one", "default", {"status": {"active": 1}})
        batch.delete_namespaced_job("two", "default", propagation_policy="Background")
        listed = batch.list_namespaced_job("default")
        assert [j.metadata.name for j in listed.items] == ["one"]
        assert listed.kind == "JobList" and listed.api_version == "batch/v1"
        everywhere = batch.list_job_for_all_namespaces()
        assert [j.metadata.name for j in everywhere.items] == ["one"]
        response = raw(server, "GET", f"{JOBS}?watch=true&resourceVersion={start}"
                                      "&timeoutSeconds=1")
        events = [json.loads(line) for line in response.body.splitlines() if line]
        assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
            ("ADDED", "two"), ("MODIFIED", "one"), ("DELETED", "two")]

    def test_the_status_successful_field_selector(self, batch: client.BatchV1Api) -> None:
        for name in ("a", "b", "c"):
            batch.create_namespaced_job("default", job(name))
        batch.patch_namespaced_job_status("b", "default", {"status": {"succeeded": 1}})

        def names(selector: str) -> list[str]:
            found = batch.list_namespaced_job("default", field_selector=selector).items
            return [j.metadata.name for j in found]

        assert names("status.successful=1") == ["b"]
        assert names("status.successful=0") == ["a", "c"]
        assert names("status.successful!=0,metadata.name=b") == ["b"]
        code, status = refused(lambda: names("spec.parallelism=1"))
        assert code == 400
        assert status["message"] == 'field label not supported: spec.parallelism'

    def test_the_table_has_upstreams_columns_and_cells(
        self, server: RunningApiServer, batch: client.BatchV1Api
    ) -> None:
        batch.create_namespaced_job("default", job("queue", parallelism=3))
        batch.create_namespaced_job("default", job("finished", completions=2))
        batch.patch_namespaced_job_status("finished", "default", {"status": {
            "conditions": [{"type": "SuccessCriteriaMet", "status": "True"},
                           {"type": "Complete", "status": "True"}],
            "succeeded": 2, "startTime": "2026-01-01T00:00:00Z",
            "completionTime": "2026-01-01T00:02:05Z"}})
        batch.create_namespaced_job("default", job("paused", suspend=True))
        batch.patch_namespaced_job_status("paused", "default", {"status": {
            "conditions": [{"type": "Suspended", "status": "True"}]}})
        table = raw(server, "GET", JOBS, headers={"Accept": TABLE}).json()
        columns = [(c["name"], c["priority"]) for c in table["columnDefinitions"]]
        assert columns == [("Name", 0), ("Status", 0), ("Completions", 0), ("Duration", 0),
                           ("Age", 0), ("Containers", 1), ("Images", 1), ("Selector", 1)]
        rows = {row["cells"][0]: row["cells"] for row in table["rows"]}
        assert rows["finished"][1:4] == ["Complete", "2/2", "2m5s"]
        assert rows["queue"][1:4] == ["Running", "0/1 of 3", ""]
        assert rows["paused"][1:3] == ["Suspended", "0/1"]
        uid = batch.read_namespaced_job("queue", "default").metadata.uid
        assert rows["queue"][5:] == ["main", "busybox:1.36",
                                     f"batch.kubernetes.io/controller-uid={uid}"]


class TestDeletion:
    def _owned_pod(self, core: client.CoreV1Api, owner: Any, name: str) -> None:
        ref = {"apiVersion": "batch/v1", "kind": "Job", "name": owner.metadata.name,
               "uid": owner.metadata.uid, "controller": True, "blockOwnerDeletion": True}
        body = pod(name)
        body["metadata"]["ownerReferences"] = [ref]
        core.create_namespaced_pod("default", body)

    def test_a_delete_without_a_policy_orphans_the_pods(
        self, batch: client.BatchV1Api, core: client.CoreV1Api
    ) -> None:
        owner = batch.create_namespaced_job("default", job("parent"))
        self._owned_pod(core, owner, "parent-abcde")
        answer = batch.delete_namespaced_job("parent", "default")  # the Job, as JSON
        assert answer["metadata"]["finalizers"] == ["orphan"]
        assert answer["metadata"]["deletionTimestamp"]
        eventually(lambda: not batch.list_namespaced_job("default").items)
        survivor = core.read_namespaced_pod("parent-abcde", "default")
        assert survivor.metadata.owner_references is None

    def test_background_propagation_collects_the_pods(
        self, batch: client.BatchV1Api, core: client.CoreV1Api
    ) -> None:
        owner = batch.create_namespaced_job("default", job("parent"))
        self._owned_pod(core, owner, "parent-fghij")
        batch.delete_namespaced_job("parent", "default", propagation_policy="Background")
        eventually(lambda: not core.list_namespaced_pod("default").items)


class TestServed:
    def test_discovery(self, server: RunningApiServer) -> None:
        resources = raw(server, "GET", "/apis/batch/v1").json()["resources"]
        by_name = {r["name"]: r for r in resources}
        assert set(by_name) == {"jobs", "jobs/status", "cronjobs", "cronjobs/status"}
        jobs = by_name["jobs"]
        assert (jobs["kind"], jobs["namespaced"], jobs["categories"]) == ("Job", True, ["all"])
        assert "shortNames" not in jobs
        assert jobs["verbs"] == ["create", "delete", "deletecollection", "get", "list", "patch",
                                 "update", "watch"]
        assert by_name["cronjobs"]["shortNames"] == ["cj"]
        assert by_name["jobs/status"]["verbs"] == ["get", "patch", "update"]
        group = raw(server, "GET", "/apis/batch").json()
        assert group["preferredVersion"] == {"groupVersion": "batch/v1", "version": "v1"}

    def test_openapi_describes_the_job_spec(self, server: RunningApiServer) -> None:
        document = raw(server, "GET", "/openapi/v3/apis/batch/v1").json()
        job_schema = document["components"]["schemas"]["io.k8s.api.batch.v1.Job"]
        spec = job_schema["properties"]["spec"]
        assert spec["properties"]["completions"]["type"] == "integer"
        assert spec["properties"]["completionMode"]["enum"] == ["Indexed", "NonIndexed"]
        assert spec["required"] == ["template"]
        assert job_schema["x-kubernetes-group-version-kind"] == [
            {"group": "batch", "version": "v1", "kind": "Job"}]
