//! Which servers HTTPS trusts: the system's roots (as reqwest trusts them, through
//! rustls-platform-verifier) plus any `--ca-bundle`, read at the first certificate to check
//! rather than when a client is made. A run over plain HTTP never reads them (on Debian, 292
//! files: half the CPU of a short `parabyte ls`), a machine without them still talks plain
//! HTTP to a local store, and every client of one process shares one reading.

use std::sync::{Arc, OnceLock};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use rustls_platform_verifier::Verifier;

/// A certificate verifier whose roots are read when first needed.
#[derive(Debug)]
pub(crate) struct TrustedRoots {
    provider: Arc<CryptoProvider>,
    extra_roots: Vec<CertificateDer<'static>>,
    /// The verifier, or why the roots could not be read (said at each handshake).
    loaded: OnceLock<Result<Verifier, rustls::Error>>,
}

impl TrustedRoots {
    /// The system's roots and `extra_roots`. Without extra roots the process shares one.
    pub(crate) fn with(
        extra_roots: Vec<CertificateDer<'static>>,
        provider: Arc<CryptoProvider>,
    ) -> Arc<TrustedRoots> {
        if extra_roots.is_empty() {
            static SYSTEM: OnceLock<Arc<TrustedRoots>> = OnceLock::new();
            return SYSTEM
                .get_or_init(|| Arc::new(TrustedRoots::new(Vec::new(), provider)))
                .clone();
        }
        Arc::new(TrustedRoots::new(extra_roots, provider))
    }

    fn new(extra_roots: Vec<CertificateDer<'static>>, provider: Arc<CryptoProvider>) -> Self {
        TrustedRoots {
            provider,
            extra_roots,
            loaded: OnceLock::new(),
        }
    }

    /// Start reading the roots on a thread of their own, for a client that will shake
    /// hands: the first handshake then waits for them only if they are still not read when
    /// the server's certificate comes (reading them took 8.6 ms here, on the critical path
    /// of a run's first request).
    pub(crate) fn read_ahead(self: &Arc<Self>) {
        if self.loaded.get().is_some() {
            return;
        }
        let roots = self.clone();
        // Without a thread the first certificate reads them, as before.
        let _ = std::thread::Builder::new()
            .name("parabyte-roots".into())
            .spawn(move || drop(roots.verifier()));
    }

    fn verifier(&self) -> Result<&Verifier, rustls::Error> {
        let loaded = self.loaded.get_or_init(|| {
            let provider = self.provider.clone();
            if self.extra_roots.is_empty() {
                Verifier::new(provider)
            } else {
                Verifier::new_with_extra_roots(self.extra_roots.clone(), provider)
            }
            .map_err(|e| {
                rustls::Error::General(format!(
                    "cannot read the trusted certificates ({e}); install the system's CA \
                     certificates, or name a bundle with --ca-bundle or AWS_CA_BUNDLE"
                ))
            })
        });
        loaded.as_ref().map_err(Clone::clone)
    }
}

impl ServerCertVerifier for TrustedRoots {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        self.verifier()?.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        )
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.verifier()?.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.verifier()?.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        // Asked for the hello, before any certificate: the provider knows without the roots.
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn provider() -> Arc<CryptoProvider> {
        Arc::new(rustls::crypto::aws_lc_rs::default_provider())
    }

    #[test]
    fn roots_are_read_at_the_first_certificate_not_before() {
        let extra = CertificateDer::from(b"not a certificate".to_vec());
        let roots = TrustedRoots::with(vec![extra], provider());
        assert!(!roots.supported_verify_schemes().is_empty());
        assert!(roots.loaded.get().is_none(), "read before any certificate");
        let name = ServerName::try_from("example.com").unwrap();
        let answer = roots.verify_server_cert(
            &CertificateDer::from(b"garbage".to_vec()),
            &[],
            &name,
            &[],
            UnixTime::now(),
        );
        assert!(answer.is_err());
        assert!(
            roots.loaded.get().is_some(),
            "the first certificate reads them"
        );
    }

    #[test]
    fn roots_read_ahead_are_read_with_no_certificate_to_check() {
        let extra = CertificateDer::from(b"not a certificate".to_vec());
        let roots = TrustedRoots::with(vec![extra], provider());
        roots.read_ahead();
        // Nothing here asks for them: only the thread can have read them.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while roots.loaded.get().is_none() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert!(roots.loaded.get().is_some(), "not read ahead in 30 s");
    }

    #[test]
    fn clients_without_extra_roots_share_one_reading() {
        let first = TrustedRoots::with(Vec::new(), provider());
        let second = TrustedRoots::with(Vec::new(), provider());
        assert!(Arc::ptr_eq(&first, &second));
        let extra = CertificateDer::from(b"x".to_vec());
        assert!(!Arc::ptr_eq(
            &first,
            &TrustedRoots::with(vec![extra], provider())
        ));
    }
}
