"""A private certificate authority and the API server's certificate.

kubectl and the official client verify the server they talk to; a CA of our
own, written once per directory and embedded in the kubeconfig, lets them do so
without touching the machine's trust store. Existing files are reused while
they are valid, so kubeconfigs written earlier keep working.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import ssl
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

DEFAULT_HOSTS: tuple[str, ...] = ("localhost", "127.0.0.1", "::1")
_CA_LIFETIME = datetime.timedelta(days=3650)
_SERVER_LIFETIME = datetime.timedelta(days=825)
# A certificate this close to expiry is replaced rather than reused.
_RENEW_BEFORE = datetime.timedelta(days=1)

IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


@dataclass(frozen=True)
class TlsFiles:
    """Where the CA certificate and the server's certificate and key are."""

    ca_cert: Path
    server_cert: Path
    server_key: Path


def create_ca_and_server_cert(directory: Path, hosts: Iterable[str] = ()) -> TlsFiles:
    """Write (or reuse) a CA and a server certificate valid for localhost and `hosts`."""
    directory.mkdir(parents=True, exist_ok=True)
    files = TlsFiles(directory / "ca.crt", directory / "server.crt", directory / "server.key")
    ca_key_path = directory / "ca.key"
    names = _unique([*DEFAULT_HOSTS, *hosts])
    if not _usable_ca(files.ca_cert, ca_key_path):
        ca_key = ec.generate_private_key(ec.SECP256R1())
        _write_key(ca_key_path, ca_key)
        _write_cert(files.ca_cert, _ca_certificate(ca_key))
    ca_cert = x509.load_pem_x509_certificate(files.ca_cert.read_bytes())
    if not _usable_server_cert(files, ca_cert, names):
        ca_key = _load_key(ca_key_path)
        server_key = ec.generate_private_key(ec.SECP256R1())
        _write_key(files.server_key, server_key)
        _write_cert(files.server_cert, _server_certificate(server_key, ca_cert, ca_key, names))
    return files


def ssl_context(files: TlsFiles) -> ssl.SSLContext:
    """A server-side TLS context presenting the server certificate."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(files.server_cert, files.server_key)
    return context


def _unique(names: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(name for name in names if name))


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def _ca_certificate(key: ec.EllipticCurvePrivateKey) -> x509.Certificate:
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "jobmachine-ca")])
    start = _now() - datetime.timedelta(minutes=5)
    public = key.public_key()
    return (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(public)
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(start + _CA_LIFETIME)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_key_usage(cert_sign=True), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(public), critical=False)
        .sign(key, hashes.SHA256())
    )


def _server_certificate(
    key: ec.EllipticCurvePrivateKey,
    ca_cert: x509.Certificate,
    ca_key: ec.EllipticCurvePrivateKey,
    names: list[str],
) -> x509.Certificate:
    start = _now() - datetime.timedelta(minutes=5)
    end = min(start + _SERVER_LIFETIME, ca_cert.not_valid_after_utc)
    ca_ski = ca_cert.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value
    return (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "jobmachine-apiserver")]))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_key_usage(cert_sign=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName(_general_names(names)), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ca_ski), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )


def _key_usage(*, cert_sign: bool) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=cert_sign,
        crl_sign=cert_sign,
        encipher_only=False,
        decipher_only=False,
    )


def _ip(name: str) -> IpAddress | None:
    try:
        return ipaddress.ip_address(name)
    except ValueError:
        return None


def _general_names(names: list[str]) -> list[x509.GeneralName]:
    result: list[x509.GeneralName] = []
    for name in names:
        address = _ip(name)
        result.append(x509.IPAddress(address) if address else x509.DNSName(name))
    return result


def _usable_ca(cert_path: Path, key_path: Path) -> bool:
    if not (cert_path.exists() and key_path.exists()):
        return False
    cert = x509.load_pem_x509_certificate(cert_path.read_bytes())
    key = _load_key(key_path)
    return _fresh(cert) and cert.public_key() == key.public_key()


def _usable_server_cert(files: TlsFiles, ca_cert: x509.Certificate, names: list[str]) -> bool:
    if not (files.server_cert.exists() and files.server_key.exists()):
        return False
    cert = x509.load_pem_x509_certificate(files.server_cert.read_bytes())
    try:
        cert.verify_directly_issued_by(ca_cert)
    except (InvalidSignature, ValueError, TypeError):
        return False
    key = _load_key(files.server_key)
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    covered = {
        *san.get_values_for_type(x509.DNSName),
        *map(str, san.get_values_for_type(x509.IPAddress)),
    }
    wanted = {str(_ip(name) or name) for name in names}
    return _fresh(cert) and cert.public_key() == key.public_key() and wanted <= covered


def _fresh(cert: x509.Certificate) -> bool:
    now = _now()
    return cert.not_valid_before_utc <= now < cert.not_valid_after_utc - _RENEW_BEFORE


def _load_key(path: Path) -> ec.EllipticCurvePrivateKey:
    key = serialization.load_pem_private_key(path.read_bytes(), password=None)
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        raise ValueError(f"{path} does not hold an EC private key")
    return key


def _write_key(path: Path, key: ec.EllipticCurvePrivateKey) -> None:
    data = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    path.unlink(missing_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "wb") as stream:
        stream.write(data)


def _write_cert(path: Path, cert: x509.Certificate) -> None:
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
