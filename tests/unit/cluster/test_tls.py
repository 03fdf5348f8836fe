"""The private CA and server certificate: valid for the right names, reused, private keys 0600."""

from __future__ import annotations

import asyncio
import ssl
import stat
from pathlib import Path

from cryptography import x509

from engine.cluster.apiserver.endpoints.tls import TlsFiles, create_ca_and_server_cert, ssl_context


def _names(files: TlsFiles) -> tuple[set[str], set[str]]:
    cert = x509.load_pem_x509_certificate(files.server_cert.read_bytes())
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    ips = {str(ip) for ip in san.get_values_for_type(x509.IPAddress)}
    return set(san.get_values_for_type(x509.DNSName)), ips


def test_server_cert_covers_localhost_and_extra_hosts(tmp_path: Path) -> None:
    files = create_ca_and_server_cert(tmp_path, ["jobmachine.local", "10.1.2.3"])
    dns, ips = _names(files)
    assert dns == {"localhost", "jobmachine.local"}
    assert ips == {"127.0.0.1", "::1", "10.1.2.3"}
    server = x509.load_pem_x509_certificate(files.server_cert.read_bytes())
    ca = x509.load_pem_x509_certificate(files.ca_cert.read_bytes())
    server.verify_directly_issued_by(ca)
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca


def test_private_keys_are_owner_only(tmp_path: Path) -> None:
    files = create_ca_and_server_cert(tmp_path, [])
    for key in (files.server_key, tmp_path / "ca.key"):
        assert stat.S_IMODE(key.stat().st_mode) == 0o600


def test_existing_files_are_reused(tmp_path: Path) -> None:
    first = create_ca_and_server_cert(tmp_path, ["a.example"])
    before = (first.ca_cert.read_bytes(), first.server_cert.read_bytes())
    second = create_ca_and_server_cert(tmp_path, ["a.example"])
    assert (second.ca_cert.read_bytes(), second.server_cert.read_bytes()) == before


def test_new_host_reissues_the_server_cert_under_the_same_ca(tmp_path: Path) -> None:
    first = create_ca_and_server_cert(tmp_path, [])
    ca_before = first.ca_cert.read_bytes()
    server_before = first.server_cert.read_bytes()
    second = create_ca_and_server_cert(tmp_path, ["192.168.7.7"])
    assert second.ca_cert.read_bytes() == ca_before
    assert second.server_cert.read_bytes() != server_before
    assert "192.168.7.7" in _names(second)[1]


def test_server_cert_signed_by_another_ca_is_replaced(tmp_path: Path) -> None:
    ours = create_ca_and_server_cert(tmp_path / "ours", [])
    other = create_ca_and_server_cert(tmp_path / "other", [])
    ours.server_cert.write_bytes(other.server_cert.read_bytes())
    ours.server_key.write_bytes(other.server_key.read_bytes())
    repaired = create_ca_and_server_cert(tmp_path / "ours", [])
    server = x509.load_pem_x509_certificate(repaired.server_cert.read_bytes())
    server.verify_directly_issued_by(x509.load_pem_x509_certificate(repaired.ca_cert.read_bytes()))


async def _handshake(files: TlsFiles) -> str:
    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"ok")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0, ssl=ssl_context(files))
    port = server.sockets[0].getsockname()[1]
    client = ssl.create_default_context(cafile=str(files.ca_cert))
    async with server:
        reader, writer = await asyncio.open_connection(
            "127.0.0.1", port, ssl=client, server_hostname="127.0.0.1"
        )
        data = await reader.read()
        writer.close()
    return data.decode()


def test_a_client_trusting_only_the_ca_verifies_the_server(tmp_path: Path) -> None:
    files = create_ca_and_server_cert(tmp_path, [])
    assert asyncio.run(_handshake(files)) == "ok"
