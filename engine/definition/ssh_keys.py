"""The CEL function `sshKeyPair`: a new SSH key pair, as Kubeflow Trainer's MPI plugin makes one.

Trainer gives every MPI TrainJob a Secret `<trainjob>-mpi-ssh-auth` whose key pair lets
the launcher reach the nodes by `mpirun` over SSH: an ECDSA key on the P-521 curve, the
private half as SEC 1 PEM (`EC PRIVATE KEY`), the public half in OpenSSH's
authorized_keys form with its newline. Each call gives a different pair, so a machine
uses it only in an object made once and never rewritten (`spec.objects[].update: Never`).
"""

from __future__ import annotations

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec


def ssh_key_pair() -> dict[str, str]:
    """`sshKeyPair()`: `{'privateKey': PEM, 'publicKey': 'ecdsa-sha2-nistp521 AAAA...\\n'}`."""
    key = ec.generate_private_key(ec.SECP521R1())
    private = key.private_bytes(serialization.Encoding.PEM,
                                serialization.PrivateFormat.TraditionalOpenSSL,
                                serialization.NoEncryption())
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH,
                                           serialization.PublicFormat.OpenSSH)
    return {"privateKey": private.decode(), "publicKey": public.decode() + "\n"}
