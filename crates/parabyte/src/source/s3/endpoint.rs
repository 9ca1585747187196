//! Turning a bucket and key into a URL: path-style for custom endpoints, virtual-hosted
//! for AWS, and S3's own rules for percent-encoding.

use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};

use crate::error::{Error, Result};
use crate::location::{has_userinfo, redact};

/// Everything but RFC 3986 unreserved characters is encoded (what SigV4 expects)...
const QUERY_VALUE: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');
/// ...and in paths the `/` between segments stays as it is.
const KEY_PATH: &AsciiSet = &QUERY_VALUE.remove(b'/');

/// The base of every request URL.
#[derive(Debug, Clone)]
pub(crate) struct Endpoint {
    scheme: String,
    /// `host` or `host:port`, exactly as the Host header must carry it.
    authority: String,
    path_style: bool,
    /// AWS's own endpoints: the host names the region, so a bucket in another region is
    /// reached at that region's host (derived here, never taken from an answer).
    regional: bool,
}

/// A URL plus the Host header that goes with it (SigV4 signs the Host header).
#[derive(Debug)]
pub(crate) struct Target {
    pub url: String,
    pub host: String,
}

impl Endpoint {
    /// A custom endpoint such as `http://127.0.0.1:7070`: always path-style, because
    /// S3-compatible servers rarely have wildcard DNS for buckets.
    pub(crate) fn custom(url: &str) -> Result<Endpoint> {
        if has_userinfo(url) {
            // Echoing even part of it could print a password into a CI log.
            return Err(Error::InvalidInput(
                "the endpoint URL (--endpoint-url or AWS_ENDPOINT_URL) carries a user name or \
                 password, which parabyte neither sends nor prints; give only scheme, host and \
                 port, and credentials through the AWS chain (AWS_ACCESS_KEY_ID, a profile)"
                    .into(),
            ));
        }
        let invalid = |why: &str| {
            Error::InvalidInput(format!(
                "endpoint URL '{}' {why}; write it like http://127.0.0.1:9000 or https://s3.example.com",
                redact(url)
            ))
        };
        let (scheme, rest) = url
            .split_once("://")
            .ok_or_else(|| invalid("has no scheme"))?;
        if scheme != "http" && scheme != "https" {
            return Err(invalid("must start with http:// or https://"));
        }
        let authority = rest.trim_end_matches('/');
        if authority.is_empty() || authority.contains(['/', '?', '#', '@']) {
            return Err(invalid("must be only scheme, host and port"));
        }
        let default_port = if scheme == "http" { ":80" } else { ":443" };
        Ok(Endpoint {
            scheme: scheme.to_owned(),
            authority: authority
                .strip_suffix(default_port)
                .unwrap_or(authority)
                .to_owned(),
            path_style: true,
            regional: false,
        })
    }

    /// AWS itself: virtual-hosted addressing unless asked otherwise.
    pub(crate) fn aws(region: &str, path_style: bool) -> Endpoint {
        Endpoint {
            scheme: "https".to_owned(),
            authority: format!("s3.{region}.amazonaws.com"),
            path_style,
            regional: true,
        }
    }

    /// Where a bucket in `region` is reached: AWS's host for that region, or this same
    /// custom endpoint (only the signing region changes there).
    pub(crate) fn for_region(&self, region: &str) -> Endpoint {
        if self.regional {
            Endpoint::aws(region, self.path_style)
        } else {
            self.clone()
        }
    }

    /// The URL of the service itself (ListBuckets), with an already-encoded query.
    pub(crate) fn service_target(&self, query: &str) -> Target {
        let separator = if query.is_empty() { "" } else { "?" };
        Target {
            url: format!("{}://{}/{separator}{query}", self.scheme, self.authority),
            host: self.authority.clone(),
        }
    }

    /// The URL for a key (empty key: the bucket itself) with an already-encoded query.
    ///
    /// S3 keys are opaque, but URLs are not: the URL layer of every HTTP client (WHATWG URL
    /// rules, the `url` crate under reqwest) removes `.` and `..` path segments, `%2E`
    /// spellings included, so such a key cannot be sent verbatim. It is refused here,
    /// before any request, rather than silently fetching another object. Every other
    /// character is percent-encoded, which no URL layer changes.
    pub(crate) fn target(&self, bucket: &str, key: &str, query: &str) -> Result<Target> {
        if let Some(segment) = key
            .split('/')
            .find(|segment| matches!(*segment, "." | ".."))
        {
            return Err(Error::UnrequestableKey {
                key: key.to_owned(),
                segment: segment.to_owned(),
            });
        }
        let key = utf8_percent_encode(key, KEY_PATH);
        let separator = if query.is_empty() { "" } else { "?" };
        // Dotted bucket names break the wildcard TLS certificate of virtual-hosted style.
        Ok(if self.path_style || bucket.contains('.') {
            Target {
                url: format!(
                    "{}://{}/{bucket}/{key}{separator}{query}",
                    self.scheme, self.authority
                ),
                host: self.authority.clone(),
            }
        } else {
            let host = format!("{bucket}.{}", self.authority);
            Target {
                url: format!("{}://{host}/{key}{separator}{query}", self.scheme),
                host,
            }
        })
    }

    /// Whether requests go over TLS.
    pub(crate) fn is_https(&self) -> bool {
        self.scheme == "https"
    }

    /// Where requests go, for messages (no credentials ever live here).
    pub(crate) fn describe(&self) -> String {
        format!("{}://{}", self.scheme, self.authority)
    }
}

/// `x-amz-copy-source`: `/bucket/key`, the key percent-encoded as in a path.
pub(crate) fn copy_source(bucket: &str, key: &str) -> String {
    format!("/{bucket}/{}", utf8_percent_encode(key, KEY_PATH))
}

/// Encode one query-string value the way SigV4 canonicalises it.
pub(crate) fn encode_query_value(value: &str) -> String {
    utf8_percent_encode(value, QUERY_VALUE).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn custom_endpoints_are_path_style() {
        let endpoint = Endpoint::custom("http://127.0.0.1:7070/").unwrap();
        let target = endpoint.target("bucket", "dir/a b+c%d/ü.txt", "").unwrap();
        assert_eq!(
            target.url,
            "http://127.0.0.1:7070/bucket/dir/a%20b%2Bc%25d/%C3%BC.txt"
        );
        assert_eq!(target.host, "127.0.0.1:7070");
    }

    #[test]
    fn default_ports_are_dropped_from_the_host_header() {
        let endpoint = Endpoint::custom("https://s3.example.com:443").unwrap();
        assert_eq!(
            endpoint.target("b", "k", "").unwrap().host,
            "s3.example.com"
        );
    }

    #[test]
    fn aws_uses_virtual_hosts_except_for_dotted_buckets() {
        let endpoint = Endpoint::aws("eu-west-1", false);
        let target = endpoint.target("bucket", "k", "list-type=2").unwrap();
        assert_eq!(
            target.url,
            "https://bucket.s3.eu-west-1.amazonaws.com/k?list-type=2"
        );
        let target = endpoint.target("my.bucket", "k", "").unwrap();
        assert_eq!(target.url, "https://s3.eu-west-1.amazonaws.com/my.bucket/k");
    }

    #[test]
    fn keys_reach_the_wire_unchanged_or_not_at_all() {
        let endpoint = Endpoint::custom("http://127.0.0.1:7070").unwrap();
        // What reqwest's URL layer makes of the URL is what is sent: it must be the same URL.
        for key in [
            "..x/x..",
            "a\\b",
            "tab\there",
            "line\nfeed",
            "%2E%2E",
            "a//b",
            "/lead",
            "trail/",
            "?#[]",
        ] {
            let target = endpoint.target("b", key, "").unwrap();
            let sent = reqwest::Url::parse(&target.url).unwrap();
            assert_eq!(sent.as_str(), target.url, "{key:?}");
        }
        for (key, segment) in [
            ("dir/../x", ".."),
            ("x/..", ".."),
            ("./x", "."),
            ("a/./b", "."),
            ("..", ".."),
        ] {
            match endpoint.target("b", key, "") {
                Err(Error::UnrequestableKey {
                    key: refused,
                    segment: named,
                }) => {
                    assert_eq!((refused.as_str(), named.as_str()), (key, segment));
                }
                other => panic!("{key:?} gave {other:?}"),
            }
        }
    }

    #[test]
    fn malformed_endpoints_are_rejected() {
        for bad in [
            "127.0.0.1:9000",
            "ftp://host",
            "http://",
            "http://host/path",
        ] {
            assert!(Endpoint::custom(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_bucket_in_another_region_is_reached_at_that_regions_aws_host_only() {
        let aws = Endpoint::aws("us-east-1", false).for_region("eu-west-2");
        assert_eq!(
            aws.target("b", "k", "").unwrap().url,
            "https://b.s3.eu-west-2.amazonaws.com/k"
        );
        let custom = Endpoint::custom("http://127.0.0.1:9000")
            .unwrap()
            .for_region("eu-west-2");
        assert_eq!(
            custom.target("b", "k", "").unwrap().url,
            "http://127.0.0.1:9000/b/k"
        );
        assert_eq!(
            custom.service_target("x-id=ListBuckets").url,
            "http://127.0.0.1:9000/?x-id=ListBuckets"
        );
    }

    #[test]
    fn query_values_encode_slashes() {
        assert_eq!(encode_query_value("a/b c~"), "a%2Fb%20c~");
    }

    #[test]
    fn userinfo_is_refused_without_being_echoed() {
        for bad in [
            "http://user:hush@127.0.0.1:9000",
            "https://hush@s3.example.com",
            "http://user:hush@host/path?x=1",
        ] {
            let error = Endpoint::custom(bad).unwrap_err().to_string();
            assert!(error.contains("user name or password"), "{error}");
            assert!(!error.contains("hush"), "{error}");
        }
    }
}
