"""Every step table decides as the engine does, with the job's replica steps remembered from
its earlier passes, and checks that this changes no decision (`reconcile_memo`)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.scenarios.reconcile_memo import RememberingDecide, remembering


@pytest.fixture(autouse=True)
def remembered_steps(monkeypatch: pytest.MonkeyPatch) -> Iterator[RememberingDecide]:
    with remembering(monkeypatch) as checked:
        yield checked
