"""The sandbox's own certificate authority, serving and client certificates, and kubeconfigs.

One CA signs everything. The API server's serving certificate names 127.0.0.1 and the in-cluster names of the
``kubernetes`` Service (Python's ``ssl`` checks IP SANs, so the IP must be there). Each component gets a client
certificate of its own, so audit lines and RBAC denials name who did what; like kwokctl, the control-plane
components are in ``system:masters``. The ServiceAccount signing key is RSA (RS256 is what every token consumer
expects); the TLS keys are ECDSA P-256, which is quick to generate and accepted by every Kubernetes component.

Keys are written 0600. Nothing here listens or connects.
"""

from __future__ import annotations

import base64
import datetime as dt
import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

_VALIDITY = dt.timedelta(days=3650)
_ADMIN_GROUP = "system:masters"

# Client identities: file stem -> (common name, organisation).
CLIENTS: dict[str, tuple[str, str]] = {
    "admin": ("raykube-admin", _ADMIN_GROUP),
    "kube-controller-manager": ("system:kube-controller-manager", _ADMIN_GROUP),
    "kube-scheduler": ("system:kube-scheduler", _ADMIN_GROUP),
    "kwok": ("kwok-controller", _ADMIN_GROUP),
    "provisioner": ("raykube-sandbox-provisioner", _ADMIN_GROUP),
    "process-runtime": ("raykube-process-runtime", _ADMIN_GROUP),
    "cert-manager": ("cert-manager", _ADMIN_GROUP),
}


@dataclass(frozen=True)
class Pki:
    directory: Path

    @property
    def ca_cert(self) -> Path:
        return self.directory / "ca.crt"

    @property
    def ca_key(self) -> Path:
        return self.directory / "ca.key"

    @property
    def serving_cert(self) -> Path:
        return self.directory / "serving.crt"

    @property
    def serving_key(self) -> Path:
        return self.directory / "serving.key"

    @property
    def sa_key(self) -> Path:
        return self.directory / "sa.key"

    @property
    def sa_pub(self) -> Path:
        return self.directory / "sa.pub"

    def client_cert(self, name: str) -> Path:
        return self.directory / f"{name}.crt"

    def client_key(self, name: str) -> Path:
        return self.directory / f"{name}.key"


def _name(common_name: str, organisation: str | None = None) -> x509.Name:
    attributes = [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
    if organisation:
        attributes.insert(0, x509.NameAttribute(NameOID.ORGANIZATION_NAME, organisation))
    return x509.Name(attributes)


def _write_key(path: Path, key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey) -> None:
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    path.touch(mode=0o600)
    path.write_bytes(pem)


def _write_cert(path: Path, cert: x509.Certificate) -> None:
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))


def _sign(
    subject: x509.Name,
    public_key: ec.EllipticCurvePublicKey,
    issuer: x509.Certificate | None,
    issuer_key: ec.EllipticCurvePrivateKey,
    extensions: list[tuple[x509.ExtensionType, bool]],
) -> x509.Certificate:
    now = dt.datetime.now(dt.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer.subject if issuer else subject)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))  # tolerate small clock skew between processes
        .not_valid_after(now + _VALIDITY)
    )
    for extension, critical in extensions:
        builder = builder.add_extension(extension, critical=critical)
    return builder.sign(issuer_key, hashes.SHA256())


def _leaf_usage(eku: x509.ObjectIdentifier) -> list[tuple[x509.ExtensionType, bool]]:
    return [
        (x509.BasicConstraints(ca=False, path_length=None), True),
        (
            x509.KeyUsage(
                digital_signature=True,
                key_encipherment=False,
                content_commitment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=False,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            True,
        ),
        (x509.ExtendedKeyUsage([eku]), False),
    ]


def serving_sans(service_ip: str) -> list[x509.GeneralName]:
    dns = [
        "localhost",
        "kubernetes",
        "kubernetes.default",
        "kubernetes.default.svc",
        "kubernetes.default.svc.cluster.local",
    ]
    return [
        *(x509.DNSName(d) for d in dns),
        x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
        x509.IPAddress(ipaddress.ip_address(service_ip)),
    ]


def ensure_pki(directory: Path, service_ip: str) -> Pki:
    """Create the CA and every certificate once; later calls reuse them (kubeconfigs stay valid across restarts)."""
    pki = Pki(directory)
    if pki.ca_cert.exists() and all(pki.client_cert(n).exists() for n in CLIENTS) and pki.sa_pub.exists():
        return pki
    directory.mkdir(parents=True, exist_ok=True)
    directory.chmod(0o700)

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_cert = _sign(
        _name("raykube-sandbox-ca"),
        ca_key.public_key(),
        None,
        ca_key,
        [
            (x509.BasicConstraints(ca=True, path_length=None), True),
            (
                x509.KeyUsage(
                    digital_signature=True,
                    key_encipherment=False,
                    content_commitment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=True,
                    crl_sign=True,
                    encipher_only=False,
                    decipher_only=False,
                ),
                True,
            ),
            (x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), False),
        ],
    )
    _write_key(pki.ca_key, ca_key)
    _write_cert(pki.ca_cert, ca_cert)

    serving_key = ec.generate_private_key(ec.SECP256R1())
    serving = _sign(
        _name("kube-apiserver"),
        serving_key.public_key(),
        ca_cert,
        ca_key,
        [
            *_leaf_usage(ExtendedKeyUsageOID.SERVER_AUTH),
            (x509.SubjectAlternativeName(serving_sans(service_ip)), False),
        ],
    )
    _write_key(pki.serving_key, serving_key)
    _write_cert(pki.serving_cert, serving)

    for stem, (common_name, organisation) in CLIENTS.items():
        key = ec.generate_private_key(ec.SECP256R1())
        cert = _sign(
            _name(common_name, organisation),
            key.public_key(),
            ca_cert,
            ca_key,
            _leaf_usage(ExtendedKeyUsageOID.CLIENT_AUTH),
        )
        _write_key(pki.client_key(stem), key)
        _write_cert(pki.client_cert(stem), cert)

    sa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    _write_key(pki.sa_key, sa_key)
    pki.sa_pub.write_bytes(
        sa_key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    return pki


def kubeconfig(pki: Pki, server: str, user: str, cluster_name: str) -> dict[str, object]:
    """A kubeconfig for ``user`` (a key of :data:`CLIENTS`) with every credential embedded."""

    def b64(path: Path) -> str:
        return base64.b64encode(path.read_bytes()).decode()

    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": cluster_name,
                "cluster": {"server": server, "certificate-authority-data": b64(pki.ca_cert)},
            }
        ],
        "users": [
            {
                "name": f"{cluster_name}-{user}",
                "user": {
                    "client-certificate-data": b64(pki.client_cert(user)),
                    "client-key-data": b64(pki.client_key(user)),
                },
            }
        ],
        "contexts": [{"name": cluster_name, "context": {"cluster": cluster_name, "user": f"{cluster_name}-{user}"}}],
        "current-context": cluster_name,
    }


def write_kubeconfig(path: Path, config: Mapping[str, object]) -> Path:
    path.touch(mode=0o600)
    path.write_text(yaml.safe_dump(dict(config), sort_keys=False))
    return path
