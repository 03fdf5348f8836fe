"""Fixtures of the cluster unit tests: a store driven by hand (`store_support.py`)."""

from __future__ import annotations

import pytest

from engine.cluster.apiserver.core import Core
from tests.unit.cluster.store_support import ManualReactor, make_core


@pytest.fixture
def reactor() -> ManualReactor:
    """A reactor whose tasks run only when a test says so, with a clock it moves."""
    return ManualReactor()


@pytest.fixture
def core(reactor: ManualReactor) -> Core:
    """The API server's store, registry and controllers on `reactor`."""
    return make_core(reactor)
