"""batch/v1 CronJobs over HTTP, through the official client, answered as kube-apiserver answers.

Defaults (the CronJob's, and only pod template defaults inside its job template),
schedule and time zone validation with robfig/cron's and upstream's words, the
52-character name, the job template's rules, the status subresource, list and
watch, the Table, and a DELETE that collects the CronJob's Jobs (background:
unlike a Job, a batch/v1 CronJob does not orphan by default). No controller
runs: nothing here creates a Job on schedule.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes import client

from engine.cluster.apiserver.endpoints.serve import RunningApiServer
from tests.integration.apiserver.conftest import raw, status_of
from tests.polling import eventually

CRONJOBS = "/apis/batch/v1/namespaces/default/cronjobs"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"


@pytest.fixture
def batch(api: client.ApiClient) -> client.BatchV1Api:
    return client.BatchV1Api(api)


def cronjob(name: str = "nightly", schedule: str = "0 3 * * *", restart: str = "OnFailure",
            job_spec: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    template = {"spec": {"restartPolicy": restart,
                         "containers": [{"name": "main", "image": "busybox:1.36"}]}}
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": name},
        "spec": {"schedule": schedule,
                 "jobTemplate": {"spec": {"template": template, **(job_spec or {})}},
                 **spec},
    }


def refused(server: RunningApiServer, body: dict[str, Any]) -> dict[str, Any]:
    response = raw(server, "POST", CRONJOBS, body)
    assert response.status == 422, response.body
    status: dict[str, Any] = response.json()
    return status


class TestDefaults:
    def test_create_fills_in_the_cronjob_defaults(self, batch: client.BatchV1Api) -> None:
        made = batch.create_namespaced_cron_job("default", cronjob())
        spec = made.spec
        assert (spec.concurrency_policy, spec.suspend) == ("Allow", False)
        assert (spec.successful_jobs_history_limit, spec.failed_jobs_history_limit) == (3, 1)
        assert spec.time_zone is None and spec.starting_deadline_seconds is None
        assert made.metadata.generation == 1

    def test_the_job_template_gets_pod_template_defaults_only(
        self, server: RunningApiServer
    ) -> None:
        answer = raw(server, "POST", CRONJOBS, cronjob()).json()
        assert answer["status"] == {}
        template = answer["spec"]["jobTemplate"]
        job_spec = template["spec"]
        # SetDefaults_Job takes a Job: the template's JobSpec stays as written...
        for field in ("completions", "parallelism", "backoffLimit", "completionMode",
                      "suspend", "manualSelector", "podReplacementPolicy", "selector"):
            assert field not in job_spec, field
        # ...but its pod template is defaulted, and nothing is generated into it.
        pod_spec = job_spec["template"]["spec"]
        assert (pod_spec["dnsPolicy"], pod_spec["terminationGracePeriodSeconds"]) == (
            "ClusterFirst", 30)
        assert job_spec["template"]["metadata"] == {"creationTimestamp": None}
        assert template["metadata"] == {"creationTimestamp": None}

    def test_explicit_zero_values(self, server: RunningApiServer) -> None:
        body = cronjob(concurrencyPolicy="", suspend=False, successfulJobsHistoryLimit=0,
                       failedJobsHistoryLimit=0, startingDeadlineSeconds=0)
        response = raw(server, "POST", CRONJOBS, body)
        assert response.status == 201
        spec = response.json()["spec"]
        assert spec["concurrencyPolicy"] == "Allow"  # a Go value field: "" is unset
        assert (spec["successfulJobsHistoryLimit"], spec["failedJobsHistoryLimit"]) == (0, 0)
        assert (spec["suspend"], spec["startingDeadlineSeconds"]) == (False, 0)

    def test_a_pod_condition_pattern_in_the_template_gets_its_status(
        self, batch: client.BatchV1Api
    ) -> None:
        policy = {"rules": [{"action": "Ignore", "onPodConditions": [{"type": "Evicted"}]}]}
        made = batch.create_namespaced_cron_job(
            "default", cronjob(restart="Never", job_spec={"podFailurePolicy": policy}))
        rule = made.spec.job_template.spec.pod_failure_policy.rules[0]
        assert rule.on_pod_conditions[0].status == "True"


SCHEDULES: list[tuple[str, str]] = [
    ("61 * * * *", "end of range (61) above maximum (59): 61"),
    ("* * *", "expected exactly 5 fields, found 3: [* * *]"),
    ("0 0 * * 7", "end of range (7) above maximum (6): 7"),
    ("x * * * *", 'failed to parse int from x: strconv.Atoi: parsing "x": invalid syntax'),
    ("*/0 * * * *", "step of range should be a positive number: */0"),
    ("5-1 * * * *", "beginning of range (5) beyond end of range (1): 5-1"),
    ("0 0 0 * *", "beginning of range (0) below minimum (1): 0"),
    ("@fortnightly", "unrecognized descriptor: @fortnightly"),
    ("@every 1d", 'failed to parse duration @every 1d: time: unknown unit "d" in duration "1d"'),
]


@pytest.mark.parametrize(("schedule", "problem"), SCHEDULES, ids=[s for s, _ in SCHEDULES])
def test_a_schedule_that_does_not_parse_is_refused_with_the_parsers_words(
    server: RunningApiServer, schedule: str, problem: str
) -> None:
    status = refused(server, cronjob("bad", schedule))
    assert status["message"] == (
        f'CronJob.batch "bad" is invalid: spec.schedule: Invalid value: "{schedule}": {problem}')


@pytest.mark.parametrize("schedule", ["*/5 * * * *", "0 9 * JAN-MAR mon-fri", "@weekly",
                                      "@every 90m", "0,30 8-18/2 1-15 * ?"])
def test_schedules_that_parse(batch: client.BatchV1Api, schedule: str) -> None:
    made = batch.create_namespaced_cron_job("default", cronjob("ok", schedule))
    assert made.spec.schedule == schedule


ZONES: list[tuple[str, str]] = [
    ("", "timeZone must be nil or non-empty string"),
    ("Local", "timeZone must be an explicit time zone as defined in "
              "https://www.iana.org/time-zones"),
    ("Mars/Olympus_Mons", "unknown time zone Mars/Olympus_Mons"),
    ("../etc/passwd", "unknown time zone ../etc/passwd"),
]


@pytest.mark.parametrize(("zone", "problem"), ZONES, ids=[z or "empty" for z, _ in ZONES])
def test_a_time_zone_must_be_an_explicit_iana_zone(
    server: RunningApiServer, zone: str, problem: str
) -> None:
    status = refused(server, cronjob("bad", timeZone=zone))
    assert status["message"] == (
        f'CronJob.batch "bad" is invalid: spec.timeZone: Invalid value: "{zone}": {problem}')


class TestValidation:
    def test_a_known_time_zone_is_kept(self, batch: client.BatchV1Api) -> None:
        made = batch.create_namespaced_cron_job("default", cronjob(timeZone="Europe/Berlin"))
        assert made.spec.time_zone == "Europe/Berlin"

    def test_a_missing_schedule_is_required(self, server: RunningApiServer) -> None:
        status = refused(server, cronjob("bad", schedule=""))
        assert status["message"] == 'CronJob.batch "bad" is invalid: spec.schedule: Required value'

    def test_a_zone_inside_the_schedule_is_refused_on_create(
        self, server: RunningApiServer
    ) -> None:
        status = refused(server, cronjob("bad", "TZ=UTC 0 3 * * *"))
        assert status["message"] == (
            'CronJob.batch "bad" is invalid: spec.schedule: Invalid value: "TZ=UTC 0 3 * * *": '
            "cannot use TZ or CRON_TZ in schedule, use timeZone field instead")
        unknown = refused(server, cronjob("bad", "CRON_TZ=Nowhere 0 3 * * *"))
        assert [c["message"] for c in unknown["details"]["causes"]] == [
            'Invalid value: "CRON_TZ=Nowhere 0 3 * * *": provided bad location Nowhere: unknown '
            "time zone Nowhere",
            'Invalid value: "CRON_TZ=Nowhere 0 3 * * *": cannot use TZ or CRON_TZ in schedule, '
            "use timeZone field instead",
        ]

    def test_a_name_leaves_room_for_the_job_suffix(
        self, server: RunningApiServer, batch: client.BatchV1Api
    ) -> None:
        batch.create_namespaced_cron_job("default", cronjob("a" * 52))
        name = "b" * 53
        status = refused(server, cronjob(name))
        assert status["message"] == (
            f'CronJob.batch "{name}" is invalid: metadata.name: Invalid value: "{name}": must be '
            "no more than 52 characters")

    def test_the_job_template_follows_the_job_rules(self, server: RunningApiServer) -> None:
        status = refused(server, cronjob("bad", restart="Always", job_spec={"completions": -1}))
        assert [(c["field"], c["message"]) for c in status["details"]["causes"]] == [
            ("spec.jobTemplate.spec.completions",
             "Invalid value: -1: must be greater than or equal to 0"),
            ("spec.jobTemplate.spec.template.spec.restartPolicy",
             'Required value: valid values: "OnFailure", "Never"'),
        ]

    def test_the_job_template_selector_is_always_generated(
        self, server: RunningApiServer
    ) -> None:
        selector = {"matchLabels": {"app": "etl"}}
        status = refused(server, cronjob("bad", job_spec={"selector": selector}))
        assert status["message"] == (
            'CronJob.batch "bad" is invalid: spec.jobTemplate.spec.selector: Invalid value: '
            'v1.LabelSelector{MatchLabels:map[string]string{"app":"etl"}, '
            "MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: `selector` will be "
            "auto-generated")
        manual = refused(server, cronjob("bad", job_spec={"manualSelector": True}))
        assert manual["message"] == (
            'CronJob.batch "bad" is invalid: spec.jobTemplate.spec.manualSelector: Unsupported '
            'value: true: supported values: "nil", "false"')

    def test_policies_and_limits(self, server: RunningApiServer) -> None:
        status = refused(server, cronjob("bad", concurrencyPolicy="Sometimes",
                                         startingDeadlineSeconds=-1, failedJobsHistoryLimit=-1))
        assert [(c["field"], c["message"]) for c in status["details"]["causes"]] == [
            ("spec.startingDeadlineSeconds",
             "Invalid value: -1: must be greater than or equal to 0"),
            ("spec.concurrencyPolicy", 'Unsupported value: "Sometimes": supported values: '
                                       '"Allow", "Forbid", "Replace"'),
            ("spec.failedJobsHistoryLimit",
             "Invalid value: -1: must be greater than or equal to 0"),
        ]

    def test_an_update_is_validated_too(self, batch: client.BatchV1Api) -> None:
        batch.create_namespaced_cron_job("default", cronjob())
        with pytest.raises(client.ApiException) as caught:
            batch.patch_namespaced_cron_job("nightly", "default",
                                            {"spec": {"schedule": "0 25 * * *"}})
        assert status_of(caught.value)["message"] == (
            'CronJob.batch "nightly" is invalid: spec.schedule: Invalid value: "0 25 * * *": '
            "end of range (25) above maximum (23): 25")
        updated = batch.patch_namespaced_cron_job("nightly", "default", {"spec": {
            "schedule": "@hourly", "suspend": True}})
        assert (updated.spec.schedule, updated.metadata.generation) == ("@hourly", 2)

    def test_a_non_dns_label_name_is_warned_about(self, server: RunningApiServer) -> None:
        response = raw(server, "POST", CRONJOBS, cronjob("nightly.report"))
        assert response.status == 201
        (warning,) = response.headers.get_all("Warning")
        assert "metadata.name: this is used in Pod names and hostnames" in warning


class TestStatusAndReading:
    def test_a_status_write_keeps_the_spec(self, batch: client.BatchV1Api) -> None:
        made = batch.create_namespaced_cron_job("default", cronjob())
        body = dict(batch.api_client.sanitize_for_serialization(made))
        body["spec"]["schedule"] = "@hourly"
        body["status"] = {"lastScheduleTime": "2026-01-01T03:00:00Z",
                          "active": [{"kind": "Job", "name": "nightly-29000000",
                                      "namespace": "default", "apiVersion": "batch/v1"}]}
        written = batch.replace_namespaced_cron_job_status("nightly", "default", body)
        assert written.spec.schedule == "0 3 * * *"
        assert [ref.name for ref in written.status.active] == ["nightly-29000000"]
        assert written.metadata.generation == 1

    def test_list_and_watch(self, server: RunningApiServer, batch: client.BatchV1Api) -> None:
        start = batch.create_namespaced_cron_job("default", cronjob("a")).metadata
        batch.create_namespaced_cron_job("default", cronjob("b"))
        batch.patch_namespaced_cron_job("a", "default", {"spec": {"suspend": True}})
        assert [c.metadata.name for c in batch.list_namespaced_cron_job("default").items] == [
            "a", "b"]
        response = raw(server, "GET", f"{CRONJOBS}?watch=true&timeoutSeconds=1"
                                      f"&resourceVersion={start.resource_version}")
        events = [json.loads(line) for line in response.body.splitlines() if line]
        assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
            ("ADDED", "b"), ("MODIFIED", "a")]

    def test_the_table_has_upstreams_columns_and_cells(
        self, server: RunningApiServer, batch: client.BatchV1Api
    ) -> None:
        batch.create_namespaced_cron_job("default", cronjob("zoned", timeZone="Asia/Tokyo"))
        batch.create_namespaced_cron_job("default", cronjob("plain", "*/5 * * * *"))
        table = raw(server, "GET", CRONJOBS, headers={"Accept": TABLE}).json()
        columns = [(c["name"], c["type"], c["priority"]) for c in table["columnDefinitions"]]
        assert columns == [
            ("Name", "string", 0), ("Schedule", "string", 0), ("Timezone", "string", 0),
            ("Suspend", "boolean", 0), ("Active", "integer", 0), ("Last Schedule", "string", 0),
            ("Age", "string", 0), ("Containers", "string", 1), ("Images", "string", 1),
            ("Selector", "string", 1),
        ]
        rows = {row["cells"][0]: row["cells"] for row in table["rows"]}
        assert rows["zoned"][1:6] == ["0 3 * * *", "Asia/Tokyo", "False", 0, "<none>"]
        assert rows["plain"][2] == "<none>"
        assert rows["plain"][7:] == ["main", "busybox:1.36", "<none>"]


class TestDeletion:
    def test_a_delete_without_a_policy_collects_the_jobs_in_the_background(
        self, batch: client.BatchV1Api
    ) -> None:
        owner = batch.create_namespaced_cron_job("default", cronjob())
        ref = {"apiVersion": "batch/v1", "kind": "CronJob", "name": "nightly",
               "uid": owner.metadata.uid, "controller": True, "blockOwnerDeletion": True}
        job = {"metadata": {"name": "nightly-29000000", "ownerReferences": [ref]},
               "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [
                   {"name": "main", "image": "busybox:1.36"}]}}}}
        batch.create_namespaced_job("default", job)
        batch.delete_namespaced_cron_job("nightly", "default")
        assert not batch.list_namespaced_cron_job("default").items  # no orphan finalizer
        eventually(lambda: not batch.list_namespaced_job("default").items)
