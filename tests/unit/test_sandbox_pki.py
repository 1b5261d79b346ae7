from __future__ import annotations

import ipaddress
import stat
from pathlib import Path

import yaml
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from raykube.sandbox.pki import CLIENTS, ensure_pki, kubeconfig, write_kubeconfig


def _load(path: Path) -> x509.Certificate:
    return x509.load_pem_x509_certificate(path.read_bytes())


def test_every_certificate_is_signed_by_the_sandbox_ca(tmp_path: Path) -> None:
    pki = ensure_pki(tmp_path / "pki", "10.96.0.1")
    ca = _load(pki.ca_cert)
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    public_key = ca.public_key()
    assert isinstance(public_key, ec.EllipticCurvePublicKey)
    for path in [pki.serving_cert, *(pki.client_cert(n) for n in CLIENTS)]:
        cert = _load(path)
        cert.verify_directly_issued_by(ca)


def test_serving_certificate_names_loopback_and_the_kubernetes_service(tmp_path: Path) -> None:
    pki = ensure_pki(tmp_path / "pki", "10.96.0.1")
    cert = _load(pki.serving_cert)
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert ipaddress.ip_address("127.0.0.1") in sans.get_values_for_type(x509.IPAddress)
    assert ipaddress.ip_address("10.96.0.1") in sans.get_values_for_type(x509.IPAddress)
    assert "kubernetes.default.svc.cluster.local" in sans.get_values_for_type(x509.DNSName)
    eku = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert ExtendedKeyUsageOID.SERVER_AUTH in eku


def test_client_certificates_carry_their_identity(tmp_path: Path) -> None:
    pki = ensure_pki(tmp_path / "pki", "10.96.0.1")
    admin = _load(pki.client_cert("admin"))
    assert admin.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)[0].value == "system:masters"
    assert ExtendedKeyUsageOID.CLIENT_AUTH in admin.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value


def test_keys_are_private_and_the_pki_is_reused(tmp_path: Path) -> None:
    pki = ensure_pki(tmp_path / "pki", "10.96.0.1")
    for key in (tmp_path / "pki").glob("*.key"):
        assert stat.S_IMODE(key.stat().st_mode) == 0o600, key
    before = pki.ca_cert.read_bytes()
    ensure_pki(tmp_path / "pki", "10.96.0.1")
    assert pki.ca_cert.read_bytes() == before


def test_kubeconfig_embeds_credentials_and_is_private(tmp_path: Path) -> None:
    pki = ensure_pki(tmp_path / "pki", "10.96.0.1")
    path = write_kubeconfig(tmp_path / "kubeconfig", kubeconfig(pki, "https://127.0.0.1:1", "admin", "raykube-t"))
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    loaded = yaml.safe_load(path.read_text())
    assert loaded["clusters"][0]["cluster"]["server"] == "https://127.0.0.1:1"
    assert loaded["users"][0]["user"]["client-key-data"]
    assert loaded["current-context"] == "raykube-t"
