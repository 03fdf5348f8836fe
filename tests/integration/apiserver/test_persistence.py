"""Persistence: every acknowledged write survives `kill -9` of `jobmachine apiserver`."""

from __future__ import annotations

from pathlib import Path

from tests.integration.apiserver.conftest import pod
from tests.integration.apiserver.server_process import apiserver_process
from tests.polling import eventually


def test_objects_and_counter_survive_kill_9(tmp_path: Path) -> None:
    with apiserver_process(tmp_path, kill=True) as core:
        core.create_namespace({"metadata": {"name": "kept"}})
        created = [
            core.create_namespaced_config_map(
                "kept", {"metadata": {"name": f"c{i}"}, "data": {"i": str(i)}}
            )
            for i in range(50)
        ]
        core.delete_namespaced_config_map("c7", "kept")
        last = core.patch_namespaced_config_map("c8", "kept", {"data": {"i": "changed"}})
        uid = created[0].metadata.uid
    assert (tmp_path / "token").stat().st_mode & 0o777 == 0o600
    with apiserver_process(tmp_path, kill=True) as core:
        names = {c.metadata.name for c in core.list_namespaced_config_map("kept").items}
        assert names == {f"c{i}" for i in range(50)} - {"c7"} | {"kube-root-ca.crt"}
        assert core.read_namespaced_config_map("c0", "kept").metadata.uid == uid
        restored = core.read_namespaced_config_map("c8", "kept")
        assert restored.data == {"i": "changed"}
        assert restored.metadata.resource_version == last.metadata.resource_version
        after = core.create_namespaced_config_map("kept", {"metadata": {"name": "new"}})
        assert int(after.metadata.resource_version) > int(last.metadata.resource_version)


def test_garbage_collection_resumes_after_restart(tmp_path: Path) -> None:
    with apiserver_process(tmp_path, kill=True) as core:
        owner = core.create_namespaced_config_map("default", {"metadata": {"name": "owner"}})
        ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner.metadata.uid}
        core.create_namespaced_config_map(
            "default", {"metadata": {"name": "child", "ownerReferences": [ref]}}
        )
        held = {"metadata": {"name": "held", "finalizers": ["example.com/hold"]}}
        core.create_namespaced_config_map("default", held)
        core.delete_namespaced_config_map("held", "default")
        core.create_namespaced_pod(
            "default", pod("bound", nodeName="n1", terminationGracePeriodSeconds=2)
        )
        core.delete_namespaced_pod("bound", "default")
    # Remove the owner behind the server's back: only a start-up scan can notice.
    journal = (tmp_path / "journal.jsonl").read_text().splitlines()
    kept = [line for line in journal if '"n":"owner"' not in line and '"name":"owner"' not in line]
    (tmp_path / "journal.jsonl").write_text("\n".join(kept) + "\n")
    with apiserver_process(tmp_path, kill=True) as core:
        names = lambda: {c.metadata.name for c in core.list_namespaced_config_map("default").items}  # noqa: E731
        eventually(lambda: "child" not in names())
        assert core.read_namespaced_config_map("held", "default").metadata.deletion_timestamp
        eventually(lambda: core.list_namespaced_pod("default").items == [], timeout=15)


def test_a_torn_last_record_is_ignored(tmp_path: Path) -> None:
    with apiserver_process(tmp_path, kill=True) as core:
        core.create_namespaced_config_map("default", {"metadata": {"name": "c"}})
    with open(tmp_path / "journal.jsonl", "ab") as journal:
        journal.write(b'{"rv":99,"op":"put","g":"","r":"configmaps","o":{"metad')
    with apiserver_process(tmp_path, kill=True) as core:
        names = [c.metadata.name for c in core.list_namespaced_config_map("default").items]
        assert names == ["c", "kube-root-ca.crt"]


def test_stored_objects_are_readable_by_the_owner_only(tmp_path: Path) -> None:
    data_dir = tmp_path / "cluster"
    with apiserver_process(data_dir, kill=True) as core:
        core.create_namespaced_config_map("default", {"metadata": {"name": "secretish"}})
    assert data_dir.stat().st_mode & 0o777 == 0o700
    stored = [p for p in data_dir.iterdir() if p.suffix == ".jsonl"]
    assert stored, "the server wrote no journal or snapshot"
    assert {p.name: p.stat().st_mode & 0o777 for p in stored} == {p.name: 0o600 for p in stored}


def _size(path: Path) -> int:
    """The file's size in bytes; 0 before it is first written."""
    return path.stat().st_size if path.exists() else 0


def test_the_journal_is_compacted_while_the_server_runs(tmp_path: Path) -> None:
    """Objects created and deleted leave no trace on disk once a compaction has run, and a
    restart finds what is live. (Without compaction the journal would hold their 200
    writes of over 1 KB each, so the bound below fails; compactions may run at any time
    during the writes, so their size before is not asserted.)"""
    data_dir = tmp_path / "data"
    with apiserver_process(data_dir, "--compaction-interval", "1s") as core:
        for index in range(100):
            core.create_namespaced_config_map("default", {
                "metadata": {"name": f"gone-{index}"}, "data": {"payload": "x" * 1000}})
        for index in range(100):
            core.delete_namespaced_config_map(f"gone-{index}", "default")
        core.create_namespaced_config_map("default", {"metadata": {"name": "kept"}})
        # A compaction during the deletes leaves a small journal (the deletes) beside a
        # snapshot that still holds the objects: wait for one that ran after them.
        eventually(lambda: _size(data_dir / "journal.jsonl") < 10_000
                   and _size(data_dir / "snapshot.jsonl") < 100_000, timeout=60)
    with apiserver_process(data_dir) as core:
        names = {c.metadata.name for c in core.list_namespaced_config_map("default").items}
        assert "kept" in names and not any(name.startswith("gone-") for name in names)
