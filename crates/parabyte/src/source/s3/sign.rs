//! SigV4 request signing (the aws-sigv4 crate) with credentials from the standard AWS chain
//! (aws-config), fetched once and refreshed shortly before they expire.

use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use aws_credential_types::provider::{ProvideCredentials, SharedCredentialsProvider};
use aws_credential_types::Credentials;
use aws_sigv4::http_request::{
    sign, PayloadChecksumKind, PercentEncodingMode, SignableBody, SignableRequest, SigningSettings,
    UriPathNormalizationMode,
};
use aws_sigv4::sign::v4;

use super::profile::where_credentials_were_looked_for;
use crate::error::{with_causes, Error, Result};

/// SHA-256 of an empty body, which every GET, HEAD and LIST signs.
const EMPTY_BODY_SHA256: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

/// What the signature says of a request's body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Payload {
    /// No body.
    Empty,
    /// A body the signature does not cover (`UNSIGNED-PAYLOAD`): hashing every uploaded
    /// byte with SHA-256 would cost more CPU than the upload; the CRC64NVME header each
    /// body carries is signed, and the store checks the body against it.
    Unsigned,
}

/// The parts of one request the signature covers.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SignedCall<'a> {
    pub(crate) method: &'a str,
    pub(crate) url: &'a str,
    /// Must include `host`.
    pub(crate) headers: &'a [(&'a str, &'a str)],
    pub(crate) payload: Payload,
}

/// Credentials closer than this to expiry are refreshed before use.
const REFRESH_MARGIN: Duration = Duration::from_secs(300);

#[derive(Debug)]
pub(crate) struct Signer {
    provider: SharedCredentialsProvider,
    /// The profile the chain reads (`None`: `default`), for the message when it finds nothing.
    profile: Option<String>,
    cached: Mutex<Option<Credentials>>,
    // Serialises refreshes so a thousand tasks do not all ask the chain at once.
    refreshing: tokio::sync::Mutex<()>,
}

impl Signer {
    pub(crate) fn new(provider: SharedCredentialsProvider, profile: Option<String>) -> Signer {
        Signer {
            provider,
            profile,
            cached: Mutex::new(None),
            refreshing: tokio::sync::Mutex::new(()),
        }
    }

    /// Current credentials, from the cache unless they are about to expire.
    pub(crate) async fn credentials(&self) -> Result<Credentials> {
        if let Some(fresh) = self.cached_if_fresh() {
            return Ok(fresh);
        }
        let _one_at_a_time = self.refreshing.lock().await;
        if let Some(fresh) = self.cached_if_fresh() {
            return Ok(fresh);
        }
        let credentials = match self.provider.provide_credentials().await {
            Ok(credentials) => credentials,
            Err(e) => {
                let looked = where_credentials_were_looked_for(self.profile.as_deref()).await;
                let last = with_causes(e.to_string(), &e);
                return Err(Error::NoCredentials(format!(
                    "{looked}; the chain said: {last}"
                )));
            }
        };
        *self.cached.lock().expect("credential cache poisoned") = Some(credentials.clone());
        Ok(credentials)
    }

    fn cached_if_fresh(&self) -> Option<Credentials> {
        let cached = self.cached.lock().expect("credential cache poisoned");
        cached
            .as_ref()
            .filter(|c| {
                c.expiry()
                    .is_none_or(|expiry| expiry > SystemTime::now() + REFRESH_MARGIN)
            })
            .cloned()
    }

    /// The headers (x-amz-date, x-amz-content-sha256, authorization, maybe x-amz-security-token)
    /// that sign `call` for `region`. The region is per request: a bucket may turn out to
    /// live in another one.
    pub(crate) fn sign(
        &self,
        credentials: &Credentials,
        region: &str,
        time: SystemTime,
        call: &SignedCall<'_>,
    ) -> Result<Vec<(&'static str, String)>> {
        let SignedCall {
            method,
            url,
            headers,
            payload,
        } = *call;
        let mut settings = SigningSettings::default();
        // S3 wants the path signed exactly as sent: no double encoding, no normalisation.
        settings.percent_encoding_mode = PercentEncodingMode::Single;
        settings.uri_path_normalization_mode = UriPathNormalizationMode::Disabled;
        settings.payload_checksum_kind = PayloadChecksumKind::XAmzSha256;
        let identity = credentials.clone().into();
        let params = v4::SigningParams::builder()
            .identity(&identity)
            .region(region)
            .name("s3")
            .time(time)
            .settings(settings)
            .build()
            .map_err(|e| Error::InvalidInput(format!("cannot sign request: {e}")))?
            .into();
        let request = SignableRequest::new(
            method,
            url,
            headers.iter().copied(),
            match payload {
                Payload::Empty => SignableBody::Precomputed(EMPTY_BODY_SHA256.to_owned()),
                Payload::Unsigned => SignableBody::UnsignedPayload,
            },
        )
        .and_then(|request| sign(request, &params))
        .map_err(|e| Error::InvalidInput(format!("cannot sign {method} request: {e}")))?;
        let (instructions, _signature) = request.into_parts();
        let (signing_headers, _query) = instructions.into_parts();
        Ok(signing_headers
            .into_iter()
            .map(|header| (header.name(), header.value().to_owned()))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The worked examples from AWS's S3 SigV4 documentation ("Signature Calculations for the
    /// Authorization Header: Transferring Payload in a Single Chunk"), with their published
    /// signatures.
    fn example_signer() -> (Signer, Credentials, SystemTime) {
        let credentials = Credentials::new(
            "AKIAIOSFODNN7EXAMPLE",
            "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            None,
            None,
            "test",
        );
        let signer = Signer::new(SharedCredentialsProvider::new(credentials.clone()), None);
        // 20130524T000000Z
        let time = SystemTime::UNIX_EPOCH + Duration::from_secs(1_369_353_600);
        (signer, credentials, time)
    }

    fn authorization<'a>(headers: &'a [(&'static str, String)]) -> &'a str {
        &headers
            .iter()
            .find(|(name, _)| *name == "authorization")
            .unwrap()
            .1
    }

    #[test]
    fn get_object_matches_the_published_signature() {
        let (signer, credentials, time) = example_signer();
        let headers = signer
            .sign(
                &credentials,
                "us-east-1",
                time,
                &SignedCall {
                    method: "GET",
                    url: "https://examplebucket.s3.amazonaws.com/test.txt",
                    headers: &[
                        ("host", "examplebucket.s3.amazonaws.com"),
                        ("range", "bytes=0-9"),
                    ],
                    payload: Payload::Empty,
                },
            )
            .unwrap();
        assert_eq!(
            authorization(&headers),
            "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, \
             SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, \
             Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"
        );
    }

    #[test]
    fn list_objects_matches_the_published_signature() {
        let (signer, credentials, time) = example_signer();
        let headers = signer
            .sign(
                &credentials,
                "us-east-1",
                time,
                &SignedCall {
                    method: "GET",
                    url: "https://examplebucket.s3.amazonaws.com/?max-keys=2&prefix=J",
                    headers: &[("host", "examplebucket.s3.amazonaws.com")],
                    payload: Payload::Empty,
                },
            )
            .unwrap();
        assert!(authorization(&headers).ends_with(
            "Signature=34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7"
        ));
    }

    #[tokio::test]
    async fn credentials_are_cached() {
        let (signer, credentials, _) = example_signer();
        assert_eq!(
            signer.credentials().await.unwrap().access_key_id(),
            credentials.access_key_id()
        );
        assert!(signer.cached_if_fresh().is_some());
    }
}
