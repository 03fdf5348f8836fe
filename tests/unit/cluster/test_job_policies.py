"""A Job's podFailurePolicy and successPolicy refused in kube-apiserver's words, without a
server: the field each cause names, its reason and its message (pkg/apis/batch/validation),
at every limit (20 rules, 255 exit codes, 20 condition patterns, 64 KiB of indexes) on both
sides. A kubectl user reads these exact lines; the integration tests pin a few of them
through the server, these pin every rule in milliseconds."""

from __future__ import annotations

from typing import Any

from engine.cluster.apiserver.errors import Cause
from engine.cluster.apiserver.validation.job_policies import (
    pod_failure_policy_causes,
    success_policy_causes,
)

PFP = "spec.podFailurePolicy"
RULE0 = f"{PFP}.rules[0]"
SP = "spec.successPolicy"
TEMPLATE = {"spec": {"containers": [{"name": "main"}], "initContainers": [{"name": "setup"}]}}


def pfp(*rules: dict[str, Any], **spec: Any) -> list[str]:
    """The causes of a JobSpec with these rules, as `field: message` lines."""
    body = {"template": TEMPLATE, "podFailurePolicy": {"rules": list(rules)}, **spec}
    return lines(pod_failure_policy_causes(body, PFP))


def lines(causes: list[Cause]) -> list[str]:
    return [f"{cause.field}: {cause.message}" for cause in causes]


def too_long(causes: list[Cause]) -> list[tuple[str, str]]:
    """Each Too long cause: its field and the limit its message ends with."""
    return [(c.field, " ".join(c.message.split()[-2:])) for c in causes
            if c.reason == "FieldValueTooLong" and c.message.startswith("Too long: ")]


def exit_codes(values: list[int] | None, operator: str | None = "In", action: str = "FailJob",
               **extra: Any) -> dict[str, Any]:
    requirement: dict[str, Any] = {**extra}
    if operator is not None:
        requirement["operator"] = operator
    if values is not None:
        requirement["values"] = values
    return {"action": action, "onExitCodes": requirement}


def conditions(*patterns: dict[str, Any], action: str = "Ignore") -> dict[str, Any]:
    return {"action": action, "onPodConditions": list(patterns)}


DISRUPTED = {"type": "DisruptionTarget", "status": "True"}


class TestPodFailurePolicyRules:
    def test_a_policy_of_every_valid_shape_passes(self) -> None:
        assert pfp(
            conditions(DISRUPTED),
            exit_codes([0], "NotIn", action="Count"),
            exit_codes([1, 2, 137], containerName="main"),
            exit_codes([3], containerName="setup", action="Ignore"),
            conditions({"type": "example.com/Evicted", "status": "Unknown"},
                       {"type": "Ready", "status": "False"}),
        ) == []

    def test_twenty_rules_pass_and_the_twenty_first_is_too_many(self) -> None:
        assert pfp(*[exit_codes([1])] * 20) == []
        causes = pod_failure_policy_causes(
            {"template": TEMPLATE, "podFailurePolicy": {"rules": [exit_codes([1])] * 21}}, PFP)
        assert causes == [Cause(f"{PFP}.rules", "Too many: 21: must have at most 20 items",
                                "FieldValueTooMany")]

    def test_a_rule_without_action_lists_the_actions_in_sorted_order(self) -> None:
        causes = pod_failure_policy_causes(
            {"template": TEMPLATE, "podFailurePolicy": {"rules": [
                {"onExitCodes": {"operator": "In", "values": [1]}}]}}, PFP)
        assert causes == [Cause(
            f"{RULE0}.action", 'Required value: valid values: ["Count" "FailIndex" "FailJob" '
            '"Ignore"]', "FieldValueRequired")]

    def test_an_unknown_action_is_unsupported(self) -> None:
        causes = pod_failure_policy_causes(
            {"template": TEMPLATE, "podFailurePolicy": {"rules": [exit_codes([1],
                                                                              action="Stop")]}},
            PFP)
        assert causes == [Cause(
            f"{RULE0}.action", 'Unsupported value: "Stop": supported values: "Count", '
            '"FailIndex", "FailJob", "Ignore"', "FieldValueNotSupported")]

    def test_fail_index_needs_a_per_index_backoff_limit_and_zero_is_one(self) -> None:
        assert pfp(exit_codes([1], action="FailIndex")) == [
            f'{RULE0}.action: Invalid value: "FailIndex": requires the backoffLimitPerIndex '
            "to be set"]
        assert pfp(exit_codes([1], action="FailIndex"), backoffLimitPerIndex=0) == []

    def test_a_rule_needs_exactly_one_of_exit_codes_and_conditions(self) -> None:
        assert pfp({"action": "Ignore"}) == [
            f"{RULE0}: Invalid value: specifying one of OnExitCodes and OnPodConditions is "
            "required"]
        assert pfp({"action": "Ignore", "onPodConditions": []}) == [
            f"{RULE0}: Invalid value: specifying one of OnExitCodes and OnPodConditions is "
            "required"]
        assert pfp({**exit_codes([1]), "onPodConditions": [DISRUPTED]}) == [
            f"{RULE0}: Invalid value: specifying both OnExitCodes and OnPodConditions is not "
            "supported"]
        assert pfp({**exit_codes([1]), "onPodConditions": []}) == []

    def test_each_rule_is_judged_at_its_own_index(self) -> None:
        assert pfp(conditions(DISRUPTED), {"action": "Ignore"}, exit_codes([0])) == [
            f"{PFP}.rules[1]: Invalid value: specifying one of OnExitCodes and OnPodConditions "
            "is required",
            f"{PFP}.rules[2].onExitCodes.values[0]: Invalid value: 0: must not be 0 for the In "
            "operator",
        ]


class TestOnExitCodes:
    def test_the_operator_is_required_and_must_be_in_or_not_in(self) -> None:
        assert pfp(exit_codes([1], None)) == [
            f'{RULE0}.onExitCodes.operator: Required value: valid values: ["In" "NotIn"]']
        assert pfp(exit_codes([1], "Within")) == [
            f'{RULE0}.onExitCodes.operator: Unsupported value: "Within": supported values: '
            '"In", "NotIn"']

    def test_the_container_must_be_a_container_or_init_container_of_the_template(self) -> None:
        assert pfp(exit_codes([1], containerName="sidecar")) == [
            f'{RULE0}.onExitCodes.containerName: Invalid value: "sidecar": must be one of the '
            "container or initContainer names in the pod template"]
        assert pfp(exit_codes([1], containerName="setup")) == []

    def test_values_are_required_and_printed_as_go_prints_the_slice(self) -> None:
        assert pfp(exit_codes(None)) == [
            f"{RULE0}.onExitCodes.values: Invalid value: []int32(nil): at least one value is "
            "required"]
        assert pfp(exit_codes([])) == [
            f"{RULE0}.onExitCodes.values: Invalid value: []int32{{}}: at least one value is "
            "required"]

    def test_255_values_pass_and_the_256th_is_too_many(self) -> None:
        assert pfp(exit_codes(list(range(1, 256)))) == []
        assert pfp(exit_codes(list(range(1, 257)))) == [
            f"{RULE0}.onExitCodes.values: Too many: 256: must have at most 255 items"]

    def test_zero_is_refused_for_in_only(self) -> None:
        assert pfp(exit_codes([0, 1])) == [
            f"{RULE0}.onExitCodes.values[0]: Invalid value: 0: must not be 0 for the In "
            "operator"]
        assert pfp(exit_codes([0, 1], "NotIn")) == []

    def test_a_repeated_value_is_a_duplicate_at_its_second_place(self) -> None:
        assert pfp(exit_codes([1, 2, 2])) == [f"{RULE0}.onExitCodes.values[2]: Duplicate value: 2"]

    def test_values_must_be_ordered_and_the_whole_list_is_shown(self) -> None:
        assert pfp(exit_codes([3, 1], "NotIn")) == [
            f"{RULE0}.onExitCodes.values: Invalid value: []int32{{3, 1}}: must be ordered"]
        assert pfp(exit_codes([2, 1, 2])) == [
            f"{RULE0}.onExitCodes.values[2]: Duplicate value: 2",
            f"{RULE0}.onExitCodes.values: Invalid value: []int32{{2, 1, 2}}: must be ordered",
        ]


class TestOnPodConditions:
    def test_twenty_patterns_pass_and_the_twenty_first_is_too_many(self) -> None:
        assert pfp(conditions(*[DISRUPTED] * 20)) == []
        assert pfp(conditions(*[DISRUPTED] * 21)) == [
            f"{RULE0}.onPodConditions: Too many: 21: must have at most 20 items"]

    def test_the_type_must_be_a_qualified_name(self) -> None:
        (line,) = pfp(conditions({"type": "bad type", "status": "True"}))
        assert line.startswith(f'{RULE0}.onPodConditions[0].type: Invalid value: "bad type": '
                               "name part must consist of alphanumeric characters")

    def test_the_status_must_be_a_condition_status(self) -> None:
        assert pfp(conditions(DISRUPTED, {"type": "Ready", "status": "Maybe"})) == [
            f'{RULE0}.onPodConditions[1].status: Unsupported value: "Maybe": supported values: '
            '"False", "True", "Unknown"']


def sp(*rules: dict[str, Any], completions: int | None = 5) -> list[str]:
    """The causes of an Indexed JobSpec's success policy with these rules."""
    spec: dict[str, Any] = {"completionMode": "Indexed", "successPolicy": {"rules": list(rules)}}
    if completions is not None:
        spec["completions"] = completions
    return lines(success_policy_causes(spec, SP))


class TestSuccessPolicy:
    def test_counts_and_index_lists_within_the_completions_pass(self) -> None:
        assert sp({"succeededCount": 5}, {"succeededIndexes": "0,2-4"},
                  {"succeededIndexes": "1-3", "succeededCount": 3}) == []

    def test_a_policy_needs_a_rule(self) -> None:
        expected = [f"{SP}.rules: Required value: at least one rules must be specified when the "
                    "successPolicy is specified"]
        assert sp() == expected
        assert lines(success_policy_causes({"completions": 1, "successPolicy": {}}, SP)) == \
            expected

    def test_twenty_rules_pass_and_the_twenty_first_is_too_many(self) -> None:
        assert sp(*[{"succeededCount": 1}] * 20) == []
        assert sp(*[{"succeededCount": 1}] * 21) == [
            f"{SP}.rules: Too many: 21: must have at most 20 items"]

    def test_a_rule_needs_a_count_or_an_index_list(self) -> None:
        assert sp({"succeededCount": 1}, {}) == [
            f"{SP}.rules[1]: Required value: at least one of succeededCount or succeededIndexes "
            "must be specified"]

    def test_the_count_is_at_most_the_completions(self) -> None:
        assert sp({"succeededCount": 6}) == [
            f"{SP}.rules[0].succeededCount: Invalid value: 6: must be less than or equal to 5 "
            "(the number of specified completions)"]
        assert sp({"succeededCount": -1}) == [
            f"{SP}.rules[0].succeededCount: Invalid value: -1: must be greater than or equal to 0"]

    def test_the_count_is_at_most_the_number_of_listed_indexes(self) -> None:
        assert sp({"succeededIndexes": "0,2", "succeededCount": 2}) == []
        assert sp({"succeededIndexes": "0,2", "succeededCount": 3}) == [
            f"{SP}.rules[0].succeededCount: Invalid value: 3: must be less than or equal to 2 "
            "(the number of indexes in the specified succeededIndexes field)"]

    def test_an_index_list_that_does_not_parse_says_why_and_counts_no_index(self) -> None:
        assert sp({"succeededIndexes": "1,5", "succeededCount": 1}) == [
            f'{SP}.rules[0].succeededIndexes: Invalid value: "1,5": error parsing '
            'succeededIndexes: too large index: "5"',
            f"{SP}.rules[0].succeededCount: Invalid value: 1: must be less than or equal to 0 "
            "(the number of indexes in the specified succeededIndexes field)",
        ]
        assert sp({"succeededIndexes": "0-1-2"}) == [
            f'{SP}.rules[0].succeededIndexes: Invalid value: "0-1-2": error parsing '
            'succeededIndexes: the fragment "0-1-2" violates the requirement that an index '
            "interval can have at most two parts separated by '-'"]

    def test_an_index_list_of_64_kib_passes_the_length_check_and_one_byte_more_does_not(
        self
    ) -> None:
        limit = 64 * 1024
        text = ",".join(str(i) for i in range(20000))[:limit]
        completions = 20000
        assert len(text) == limit
        assert not [c for c in success_policy_causes(
            {"completions": completions, "successPolicy": {"rules": [
                {"succeededIndexes": text}]}}, SP) if c.reason == "FieldValueTooLong"]
        longer = success_policy_causes(
            {"completions": completions, "successPolicy": {"rules": [
                {"succeededIndexes": text + "9"}]}}, SP)
        assert too_long(longer) == [(f"{SP}.rules[0].succeededIndexes", "65536 bytes")]

    def test_the_length_limit_counts_bytes_not_characters(self) -> None:
        text = "\u00e9" * (32 * 1024 + 1)  # 32769 characters, 65538 bytes
        causes = success_policy_causes(
            {"completions": 5, "successPolicy": {"rules": [{"succeededIndexes": text}]}}, SP)
        assert too_long(causes) == [(f"{SP}.rules[0].succeededIndexes", "65536 bytes")]

    def test_too_long_is_worded_as_the_served_release_words_it(self) -> None:
        causes = success_policy_causes(
            {"completions": 5, "successPolicy": {"rules": [
                {"succeededIndexes": "0" * (64 * 1024 + 1)}]}}, SP)
        assert [c.message for c in causes if c.reason == "FieldValueTooLong"] == [
            "Too long: may not be more than 65536 bytes"]

    def test_without_completions_only_the_rules_shape_is_judged(self) -> None:
        # Indexed requires completions and says so elsewhere; nothing here compares with it.
        assert sp({"succeededIndexes": "7"}, {"succeededCount": 9}, completions=None) == []
