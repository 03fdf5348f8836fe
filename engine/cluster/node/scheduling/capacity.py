"""What the local node offers: this machine's CPUs, memory, root file system (as
ephemeral-storage, which a kubelet measures on its root directory's file system) and 110
pods (the kubelet's default) unless told otherwise, e.g. `cpu=8,memory=16Gi,nvidia.com/gpu=2`.

Allocatable equals capacity: the local node reserves nothing for itself.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

from engine.cluster.quantities import parse_quantity

MAX_PODS = 110
# A resource name as Kubernetes writes one: an optional DNS-subdomain prefix and a name.
_RESOURCE_NAME = re.compile(
    r"^(?:[a-z0-9]([-a-z0-9]*[a-z0-9])?(?:\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
)


def _memory_kib() -> int:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 1024


@dataclass(frozen=True)
class Capacity:
    """The node's resources as the Node object shows them (`written`) and as amounts."""

    written: Mapping[str, str]

    @property
    def amounts(self) -> dict[str, Decimal]:
        return {name: parse_quantity(value) for name, value in self.written.items()}

    @classmethod
    def of_this_machine(cls, overrides: Mapping[str, str] | None = None) -> Capacity:
        """This machine's CPUs, memory and disk and 110 pods, with `overrides` on top."""
        written = {"cpu": str(os.cpu_count() or 1), "memory": f"{_memory_kib()}Ki",
                   "ephemeral-storage": f"{shutil.disk_usage('/').total // 1024}Ki",
                   "pods": str(MAX_PODS)}
        return cls({**written, **(overrides or {})})

    @classmethod
    def parse(cls, text: str) -> Capacity:
        """`name=quantity,...` over this machine's defaults; ValueError saying what is wrong."""
        overrides: dict[str, str] = {}
        for item in (part.strip() for part in text.split(",")):
            if not item:
                continue
            name, equals, value = item.partition("=")
            name, value = name.strip(), value.strip()
            if not equals or not name or not value:
                raise ValueError(f"node capacity {item!r}: write name=quantity, "
                                 f"e.g. cpu=8,memory=16Gi,nvidia.com/gpu=2")
            if not _RESOURCE_NAME.match(name):
                raise ValueError(f"node capacity {item!r}: {name!r} is not a resource name")
            try:
                amount = parse_quantity(value)
            except ValueError as exc:
                raise ValueError(f"node capacity {item!r}: {exc}") from None
            if amount < 0:
                raise ValueError(f"node capacity {item!r}: a capacity cannot be negative")
            overrides[name] = value
        return cls.of_this_machine(overrides)
