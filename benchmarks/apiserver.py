"""Benchmark: the embedded API server under a concurrent client.

Starts `jobmachine apiserver --port 0` in its own process (HTTPS with its
generated CA, as by default, or plain HTTP with `--no-tls`; objects in memory,
or with `--persist` in a temporary data dir, so every acknowledged write is
fsynced) and loads it from this process with aiohttp: CONCURRENCY requests in
flight over keep-alive connections, with the bearer token. Measures creates,
gets, updates and patches per second (median of several rounds), the time of
one list of 10,000 pods (JSON and Table), and watch fan-out (20 watchers on
pods, then N writes, until every watcher has seen every event). For
reference, creates/s from 4 threads with the official `kubernetes` client.
Every request that does not answer as expected counts as an error.

Run: python benchmarks/apiserver.py [--persist] [--quick] [--no-tls]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import datetime
import functools
import os
import platform
import re
import signal
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import yaml
from kubernetes import client as k8s
from stopping import stop_cleanly_on_signals

ROOT = Path(__file__).resolve().parent.parent

CONCURRENCY = 32
WATCHERS = 20
OFFICIAL_THREADS = 4
TARGET_WRITES = 2_000  # small writes per second the issue asks for
PHASE_TIMEOUT = 300.0  # seconds; no phase may run longer
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
JSON_HEADERS = {"Content-Type": "application/json"}
MERGE_HEADERS = {"Content-Type": "application/merge-patch+json"}
STRATEGIC_HEADERS = {"Content-Type": "application/strategic-merge-patch+json"}


@dataclass(frozen=True)
class Sizes:
    rounds: int  # rounds per throughput figure
    ops: int  # requests per round
    list_pods: int
    list_repeats: int
    watch_writes: int
    official_per_thread: int


FULL = Sizes(rounds=5, ops=2_000, list_pods=10_000, list_repeats=7, watch_writes=2_000,
             official_per_thread=250)
QUICK = Sizes(rounds=2, ops=500, list_pods=2_000, list_repeats=3, watch_writes=500,
              official_per_thread=50)


@dataclass
class Results:
    """Figures in print order, and every failed request."""

    lines: list[str] = field(default_factory=list)
    errors: int = 0
    error_samples: list[str] = field(default_factory=list)

    def add(self, label: str, value: str) -> None:
        self.lines.append(f"{label:<44}{value}")
        print(self.lines[-1], flush=True)

    def fail(self, what: str) -> None:
        self.errors += 1
        if len(self.error_samples) < 10:
            self.error_samples.append(what)


@dataclass(frozen=True)
class Server:
    url: str
    token: str
    pid: int
    ca_file: Path | None

    def ssl_context(self) -> ssl.SSLContext | bool:
        """What aiohttp verifies the server with (True: the default, for plain HTTP)."""
        return ssl.create_default_context(cafile=self.ca_file) if self.ca_file else True


@contextmanager
def started_server(persist: bool, tls: bool) -> Iterator[Server]:
    """`jobmachine apiserver --port 0` in a child process, stopped with SIGTERM on exit."""
    with tempfile.TemporaryDirectory(prefix="jobmachine-bench-") as work:
        kubeconfig = Path(work) / "kubeconfig"
        command = [sys.executable, "-m", "engine.cli", "apiserver", "--port", "0",
                   "--kubeconfig", str(kubeconfig)]
        if persist:
            command += ["--data-dir", str(Path(work) / "data")]
        if not tls:
            command.append("--no-tls")
        with open(Path(work) / "server.log", "wb") as log:
            # The server's own temporary files go into `work` too, so they go with it.
            environment = {**os.environ, "TMPDIR": work}
            process = subprocess.Popen(command, cwd=ROOT, env=environment,
                                       stdout=subprocess.PIPE, stderr=log)
            try:
                url = _served_url(process)
                config = yaml.safe_load(kubeconfig.read_text())
                ca_data = config["clusters"][0]["cluster"].get("certificate-authority-data")
                ca_file = None
                if ca_data:
                    ca_file = Path(work) / "ca.crt"
                    ca_file.write_bytes(base64.b64decode(ca_data))
                yield Server(url, config["users"][0]["user"]["token"], process.pid, ca_file)
            finally:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(30)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait(10)


def _served_url(process: subprocess.Popen[bytes]) -> str:
    assert process.stdout is not None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = process.stdout.readline().decode()
        if not line:
            raise RuntimeError(f"the API server exited with {process.wait()} before serving")
        match = re.search(r"serving at (\S+)", line)
        if match:
            return match.group(1)
    raise RuntimeError("the API server did not start within 60 s")


@dataclass(frozen=True)
class Round:
    per_second: float
    server_cpu: float  # server CPU seconds per operation (all its threads)
    client_cpu: float  # this process's CPU seconds per operation


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of process `pid` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def drive(count: int, operation: Callable[[int], Awaitable[None]],
                server_pid: int) -> Round:
    """Run `operation(0..count-1)` with CONCURRENCY in flight."""
    indexes = iter(range(count))

    async def worker() -> None:
        for index in indexes:
            await operation(index)

    server_start, client_start = cpu_seconds(server_pid), time.process_time()
    start = time.perf_counter()
    await asyncio.wait_for(asyncio.gather(*(worker() for _ in range(CONCURRENCY))),
                           PHASE_TIMEOUT)
    elapsed = time.perf_counter() - start
    return Round(count / elapsed, (cpu_seconds(server_pid) - server_start) / count,
                 (time.process_time() - client_start) / count)


class Client:
    """Requests that check their answer; anything unexpected is counted, never raised."""

    def __init__(self, session: aiohttp.ClientSession, server: Server, results: Results) -> None:
        self.session = session
        self.url = server.url
        self.pid = server.pid
        self.results = results

    async def call(self, method: str, path: str, expect: int, *, body: Any = None,
                   headers: dict[str, str] | None = None) -> Any:
        data = orjson.dumps(body) if body is not None else None
        if data is not None:  # aiohttp would say application/octet-stream, which is a 415
            headers = {"Content-Type": "application/json", **(headers or {})}
        try:
            async with self.session.request(method, self.url + path, data=data,
                                            headers=headers) as response:
                raw = await response.read()
                if response.status != expect:
                    self.results.fail(f"{method} {path}: {response.status} {raw[:200]!r}")
                    return None
                return orjson.loads(raw)
        except (aiohttp.ClientError, TimeoutError) as exc:
            self.results.fail(f"{method} {path}: {type(exc).__name__}: {exc}")
            return None


def configmap(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": {"app": "bench"}}, "data": {"key": "value"}}


def pod(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": {"app": "bench"}},
            "spec": {"containers": [{"name": "main", "image": "busybox:1.36",
                                     "command": ["sleep", "3600"]}]}}


def rate(rounds: list[Round]) -> str:
    each = ", ".join(f"{r.per_second:.0f}" for r in rounds)
    server = statistics.median(r.server_cpu for r in rounds) * 1e6
    client = statistics.median(r.client_cpu for r in rounds) * 1e6
    return (f"{statistics.median(r.per_second for r in rounds):6.0f} /s  server CPU "
            f"{server:4.0f} µs/op, client {client:4.0f} µs/op  (rounds: {each})")


async def throughput(client: Client, sizes: Sizes, results: Results) -> None:
    """Creates, gets, updates and patches of configmaps and pods, round by round."""
    cms, pods = "/api/v1/namespaces/bench/configmaps", "/api/v1/namespaces/bench/pods"
    versions: dict[str, str] = {}
    figures: dict[str, list[Round]] = {}

    def remember(answer: Any) -> None:
        if answer is not None:
            versions[answer["metadata"]["name"]] = answer["metadata"]["resourceVersion"]

    async def create_cm(r: int, i: int) -> None:
        remember(await client.call("POST", cms, 201, body=configmap(f"cm-{r}-{i}")))

    async def create_pod(r: int, i: int) -> None:
        await client.call("POST", pods, 201, body=pod(f"pod-{r}-{i}"))

    async def get_cm(r: int, i: int) -> None:
        await client.call("GET", f"{cms}/cm-{r}-{i}", 200)

    async def update_cm(r: int, i: int) -> None:
        name = f"cm-{r}-{i}"
        body = configmap(name)
        body["metadata"]["resourceVersion"] = versions.get(name, "")
        body["data"]["key"] = "updated"
        remember(await client.call("PUT", f"{cms}/{name}", 200, body=body))

    async def merge_patch_cm(r: int, i: int) -> None:
        body = {"metadata": {"labels": {"patched": "yes"}}}
        await client.call("PATCH", f"{cms}/cm-{r}-{i}", 200, body=body, headers=MERGE_HEADERS)

    async def strategic_patch_pod(r: int, i: int) -> None:
        body = {"metadata": {"annotations": {"patched": "yes"}}}
        await client.call("PATCH", f"{pods}/pod-{r}-{i}", 200, body=body,
                          headers=STRATEGIC_HEADERS)

    phases: list[tuple[str, Callable[[int, int], Awaitable[None]]]] = [
        ("create configmap", create_cm), ("create pod", create_pod), ("get configmap", get_cm),
        ("update configmap (PUT)", update_cm), ("merge patch configmap", merge_patch_cm),
        ("strategic merge patch pod", strategic_patch_pod),
    ]
    for r in range(sizes.rounds):
        for label, operation in phases:
            measured = await drive(sizes.ops, functools.partial(operation, r), client.pid)
            figures.setdefault(label, []).append(measured)
    for label, _ in phases:
        results.add(label, rate(figures[label]))
    writes = [statistics.median(r.per_second for r in figures[label])
              for label, _ in phases if "get" not in label]
    results.add("writes: slowest median / target",
                f"{min(writes):8.0f} /s   ({min(writes) / TARGET_WRITES:.2f} x {TARGET_WRITES}/s)")


async def listing(client: Client, sizes: Sizes, results: Results) -> None:
    """One namespace of `list_pods` pods, listed whole (JSON, Table) and in pages of 500."""
    path = "/api/v1/namespaces/listing/pods"
    await drive(sizes.list_pods,
                lambda i: client.call("POST", path, 201, body=pod(f"list-{i}")), client.pid)
    for label, headers, limit in (("list pods, JSON", None, None),
                                  ("list pods, Table", {"Accept": TABLE}, None),
                                  ("list pods, JSON, pages of 500", None, 500)):
        times = []
        for _ in range(sizes.list_repeats):
            start = time.perf_counter()
            count = await _list_all(client, path, headers, limit)
            times.append(time.perf_counter() - start)
            if count != sizes.list_pods:
                results.fail(f"{label}: {count} items, expected {sizes.list_pods}")
        results.add(f"{label} ({sizes.list_pods})",
                    f"{statistics.median(times) * 1000:8.0f} ms per list "
                    f"(min {min(times) * 1000:.0f}, max {max(times) * 1000:.0f})")


async def _list_all(client: Client, path: str, headers: dict[str, str] | None,
                    limit: int | None) -> int:
    count, token = 0, ""
    for _ in range(10_000):
        query = f"?limit={limit}&continue={token}" if limit else ""
        answer = await client.call("GET", path + query, 200, headers=headers)
        if answer is None:
            return count
        count += len(answer.get("rows" if headers else "items", ()))
        token = answer["metadata"].get("continue", "")
        if not token:
            break
    return count


_NAME = re.compile(rb'"name":"(wp-\d+)"')


async def fan_out(client: Client, server: Server, sizes: Sizes, results: Results) -> None:
    """WATCHERS watches on one namespace's pods, then `watch_writes` pod creates in it."""
    path = "/api/v1/namespaces/watching/pods"
    listed = await client.call("GET", path, 200)
    if listed is None:
        return
    since = listed["metadata"]["resourceVersion"]
    total = sizes.watch_writes
    sent: dict[bytes, float] = {}
    lags: list[float] = []
    last_seen: list[float] = []
    connector = aiohttp.TCPConnector(limit=0, ssl=server.ssl_context())
    headers = {"Authorization": f"Bearer {server.token}"}
    async with aiohttp.ClientSession(connector=connector, headers=headers) as watch_session:
        responses = [
            await watch_session.get(f"{client.url}{path}?watch=1&resourceVersion={since}",
                                    timeout=aiohttp.ClientTimeout(total=None,
                                                                  sock_read=PHASE_TIMEOUT))
            for _ in range(WATCHERS)
        ]
        received: list[dict[bytes, float]] = [{} for _ in range(WATCHERS)]

        async def follow(index: int, response: aiohttp.ClientResponse) -> None:
            seen = received[index]
            async for line in response.content:
                now = time.perf_counter()
                match = _NAME.search(line)
                if not line.startswith(b'{"type":"ADDED"') or match is None:
                    results.fail(f"watcher {index}: unexpected event {line[:120]!r}")
                    continue
                seen[match.group(1)] = now
                if len(seen) == total:
                    last_seen.append(now)
                    return

        async def write(i: int) -> None:
            name = f"wp-{i}"
            sent[name.encode()] = time.perf_counter()
            await client.call("POST", path, 201, body=pod(name))

        followers = [asyncio.create_task(follow(i, r)) for i, r in enumerate(responses)]
        start = time.perf_counter()
        await drive(total, write, client.pid)
        last_ack = time.perf_counter()
        try:
            await asyncio.wait_for(asyncio.gather(*followers), PHASE_TIMEOUT)
        except TimeoutError:
            results.fail(f"watchers saw {[len(s) for s in received]} of {total} events")
        for response in responses:
            response.close()
    for seen in received:
        lags.extend(seen[name] - sent[name] for name in seen)
    if len(last_seen) < WATCHERS or not lags:
        return
    elapsed = max(last_seen) - start
    results.add(f"watch fan-out ({WATCHERS} watchers, {total} writes)",
                f"{WATCHERS * total / elapsed:8.0f} events/s delivered, all seen after "
                f"{elapsed:.2f} s ({total / (last_ack - start):.0f} writes/s)")
    drain = (max(last_seen) - last_ack) * 1000
    results.add("watch lag (write sent -> watcher has it)",
                f"median {statistics.median(lags) * 1000:.1f} ms, max {max(lags) * 1000:.1f} ms; "
                f"last event {drain:+.0f} ms after the last write's answer")


def official_client(server: Server, sizes: Sizes, results: Results) -> None:
    """Configmap creates from OFFICIAL_THREADS threads with the `kubernetes` client."""
    def work(thread: int, round_: int) -> None:
        configuration = k8s.Configuration(host=server.url,
                                          api_key={"authorization": f"Bearer {server.token}"})
        if server.ca_file is not None:
            configuration.ssl_ca_cert = str(server.ca_file)
        with k8s.ApiClient(configuration) as api_client:
            api = k8s.CoreV1Api(api_client)
            for i in range(sizes.official_per_thread):
                try:
                    body = k8s.V1ConfigMap(
                        metadata=k8s.V1ObjectMeta(name=f"cm-{round_}-{thread}-{i}",
                                                  labels={"app": "bench"}),
                        data={"key": "value"})
                    api.create_namespaced_config_map("official", body)
                except k8s.ApiException as exc:
                    results.fail(f"official client: {exc.status} {exc.reason}")

    figures = []
    count = OFFICIAL_THREADS * sizes.official_per_thread
    for round_ in range(sizes.rounds):
        server_start, client_start = cpu_seconds(server.pid), time.process_time()
        start = time.perf_counter()
        with ThreadPoolExecutor(OFFICIAL_THREADS) as pool:
            list(pool.map(functools.partial(work, round_=round_), range(OFFICIAL_THREADS)))
        figures.append(Round(count / (time.perf_counter() - start),
                             (cpu_seconds(server.pid) - server_start) / count,
                             (time.process_time() - client_start) / count))
    results.add(f"official client, {OFFICIAL_THREADS} threads: create configmap", rate(figures))


async def measure(server: Server, sizes: Sizes, results: Results) -> None:
    connector = aiohttp.TCPConnector(limit=CONCURRENCY, ssl=server.ssl_context())
    headers = {"Authorization": f"Bearer {server.token}"}
    timeout = aiohttp.ClientTimeout(total=60)
    async with aiohttp.ClientSession(connector=connector, headers=headers,
                                     timeout=timeout) as session:
        client = Client(session, server, results)
        for namespace in ("bench", "listing", "watching", "official"):
            await client.call("POST", "/api/v1/namespaces", 201,
                              body={"metadata": {"name": namespace}})
        await throughput(client, sizes, results)
        await listing(client, sizes, results)
        await fan_out(client, server, sizes, results)


def main() -> None:
    stop_cleanly_on_signals()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--persist", action="store_true",
                        help="keep objects in a data dir (every write fsynced)")
    parser.add_argument("--quick", action="store_true", help="fewer and smaller rounds")
    parser.add_argument("--no-tls", dest="tls", action="store_false",
                        help="serve plain HTTP instead of HTTPS")
    args = parser.parse_args()
    sizes = QUICK if args.quick else FULL
    mode = "persistent (--data-dir, fsync per acknowledged write)" if args.persist else "memory"
    print(f"{datetime.datetime.now().astimezone():%Y-%m-%d %H:%M %Z}; {os.cpu_count()} cores; "
          f"Python {platform.python_version()}; aiohttp {aiohttp.__version__}", flush=True)
    protocol = "HTTPS" if args.tls else "plain HTTP"
    print(f"server: jobmachine apiserver, {protocol}, {mode}; "
          f"client: aiohttp, {CONCURRENCY} in flight; "
          f"{sizes.rounds} rounds of {sizes.ops} requests per figure (median)", flush=True)
    results = Results()
    with started_server(args.persist, args.tls) as server:
        asyncio.run(measure(server, sizes, results))
        official_client(server, sizes, results)
    print(f"errors: {results.errors}")
    for sample in results.error_samples:
        print(f"  {sample}")
    sys.exit(1 if results.errors else 0)


if __name__ == "__main__":
    main()
