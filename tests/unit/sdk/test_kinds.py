"""Which resource serves a kind: the answer `JobClient` builds every request on."""

from __future__ import annotations

import re

import pytest

from engine.sdk.errors import InvalidJobError, UnknownKindError
from engine.sdk.kinds import Kinds
from tests.kinds import MACHINEJOBS, PYTORCHJOBS

KINDS = Kinds({"PyTorchJob": PYTORCHJOBS, "MachineJob": MACHINEJOBS})


def test_a_governed_kind_gives_its_resource() -> None:
    assert KINDS.resource("PyTorchJob") == PYTORCHJOBS


def test_a_kind_no_machine_governs_is_named_with_the_kinds_that_are() -> None:
    with pytest.raises(UnknownKindError) as raised:
        KINDS.resource("ShardedJob")

    assert str(raised.value) == ("no machine on the cluster governs the kind 'ShardedJob'; "
                                 "governed kinds: MachineJob, PyTorchJob")
    assert raised.value.kind == "ShardedJob"
    assert isinstance(raised.value, LookupError)


def test_a_lookup_without_a_kind_searches_every_governed_kind() -> None:
    assert KINDS.searched(None) == {"PyTorchJob": PYTORCHJOBS, "MachineJob": MACHINEJOBS}
    assert KINDS.searched("MachineJob") == {"MachineJob": MACHINEJOBS}
    with pytest.raises(UnknownKindError):
        KINDS.searched("TFJob")


def test_a_document_is_created_in_the_resource_of_its_kind_and_api_version() -> None:
    job = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "x"}}

    assert KINDS.of_document(job) == PYTORCHJOBS
    with pytest.raises(InvalidJobError, match=re.escape(
            "PyTorchJob is governed as kubeflow.org/v1, but the document says apiVersion "
            "'kubeflow.org/v2'")):
        KINDS.of_document({**job, "apiVersion": "kubeflow.org/v2"})
    with pytest.raises(InvalidJobError, match="no kind"):
        KINDS.of_document({"apiVersion": "v1"})
