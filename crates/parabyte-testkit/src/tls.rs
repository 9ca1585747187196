//! A private certificate authority per HTTPS test server, and the rustls settings that trust it.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime};

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;
use rustls::{ClientConfig, RootCertStore};

use crate::error::{Error, Result};

/// The names a client may use for a test server; nothing else is ever in its certificate.
const SERVER_NAMES: [&str; 2] = ["127.0.0.1", "localhost"];
/// Some clocks lag a little; and no test or testbed run comes near the end.
const VALID_BEFORE_NOW: Duration = Duration::from_secs(24 * 60 * 60);
const VALID_AFTER_NOW: Duration = Duration::from_secs(365 * 24 * 60 * 60);

/// The PEM files one HTTPS server needs, written into its directory: a fresh CA that exists
/// nowhere else (its key is never written), and a server certificate it signed.
#[derive(Debug)]
pub(crate) struct ServerCerts {
    /// The CA certificate: what a client passes as `--ca-bundle` or `AWS_CA_BUNDLE`.
    pub(crate) ca_path: PathBuf,
    pub(crate) ca_pem: String,
    /// The server's certificate and private key, for the server's own TLS options.
    pub(crate) cert_path: PathBuf,
    pub(crate) key_path: PathBuf,
}

impl ServerCerts {
    pub(crate) fn issue(dir: &Path) -> Result<ServerCerts> {
        let (ca_pem, server_pem, server_key_pem) = issue_pems().map_err(|e| {
            Error::Certificate(format!("could not generate the test certificates: {e}"))
        })?;
        let certs = ServerCerts {
            ca_path: dir.join("ca.pem"),
            ca_pem,
            cert_path: dir.join("server.pem"),
            key_path: dir.join("server-key.pem"),
        };
        std::fs::write(&certs.ca_path, &certs.ca_pem)?;
        std::fs::write(&certs.cert_path, server_pem)?;
        std::fs::write(&certs.key_path, server_key_pem)?;
        Ok(certs)
    }
}

/// The CA certificate, the server certificate and the server's key, all PEM.
fn issue_pems() -> std::result::Result<(String, String, String), rcgen::Error> {
    let now = SystemTime::now();
    let validity = |params: &mut CertificateParams| {
        params.not_before = (now - VALID_BEFORE_NOW).into();
        params.not_after = (now + VALID_AFTER_NOW).into();
    };

    let mut ca_params = CertificateParams::default();
    validity(&mut ca_params);
    ca_params.distinguished_name = rcgen::DistinguishedName::new();
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "parabyte-testkit private CA");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    ca_params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let ca_key = KeyPair::generate()?;
    let ca_cert = ca_params.self_signed(&ca_key)?;
    let issuer = Issuer::new(ca_params, ca_key);

    let mut server_params = CertificateParams::new(SERVER_NAMES.map(str::to_owned).to_vec())?;
    validity(&mut server_params);
    server_params.distinguished_name = rcgen::DistinguishedName::new();
    server_params
        .distinguished_name
        .push(DnType::CommonName, "parabyte-testkit server");
    server_params.use_authority_key_identifier_extension = true;
    server_params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    server_params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let server_key = KeyPair::generate()?;
    let server_cert = server_params.signed_by(&server_key, &issuer)?;

    Ok((ca_cert.pem(), server_cert.pem(), server_key.serialize_pem()))
}

/// Client settings that trust exactly the certificates in `ca_pem` (one or a bundle).
pub(crate) fn trusting(ca_pem: &[u8]) -> Result<ClientConfig> {
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(ca_pem) {
        let cert =
            cert.map_err(|e| Error::Certificate(format!("the CA PEM does not parse: {e}")))?;
        roots
            .add(cert)
            .map_err(|e| Error::Certificate(format!("the CA PEM holds a bad certificate: {e}")))?;
    }
    if roots.is_empty() {
        return Err(Error::Certificate(
            "the CA PEM holds no certificate (expected -----BEGIN CERTIFICATE-----)".to_owned(),
        ));
    }
    Ok(client_config(roots))
}

/// Client settings that trust what the system trusts, as any client does by default; a test
/// server's certificate is not among it.
pub(crate) fn system_roots() -> ClientConfig {
    // Reading the system's roots takes a moment, and admin clients are made often.
    static CONFIG: OnceLock<ClientConfig> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let mut roots = RootCertStore::empty();
            roots.add_parsable_certificates(rustls_native_certs::load_native_certs().certs);
            client_config(roots)
        })
        .clone()
}

fn client_config(roots: RootCertStore) -> ClientConfig {
    // Explicit, because rustls cannot pick a default once another crate enables `ring` too.
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("aws-lc-rs supports the default protocol versions")
        .with_root_certificates(roots)
        .with_no_client_auth()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issues_a_ca_and_a_server_certificate_that_parse() {
        let dir = tempfile::tempdir().unwrap();
        let certs = ServerCerts::issue(dir.path()).unwrap();
        let server_pem = std::fs::read(&certs.cert_path).unwrap();
        let key_pem = std::fs::read_to_string(&certs.key_path).unwrap();
        assert_eq!(
            std::fs::read_to_string(&certs.ca_path).unwrap(),
            certs.ca_pem
        );
        assert!(key_pem.contains("PRIVATE KEY"), "{key_pem}");
        assert_eq!(CertificateDer::pem_slice_iter(&server_pem).count(), 1);
        trusting(certs.ca_pem.as_bytes()).unwrap();
    }

    #[test]
    fn each_server_gets_its_own_ca() {
        let (first, ..) = issue_pems().unwrap();
        let (second, ..) = issue_pems().unwrap();
        assert_ne!(first, second);
    }

    #[test]
    fn a_pem_without_certificates_is_refused() {
        let message = trusting(b"not a certificate").unwrap_err().to_string();
        assert!(message.contains("no certificate"), "{message}");
    }
}
