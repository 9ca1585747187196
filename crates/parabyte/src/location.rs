//! Where bytes come from or go: `s3://bucket/key`, `http(s)://host/path` or a local path.

use std::fmt;
use std::path::PathBuf;

use reqwest::Url;

use crate::error::{Error, Result};

/// A parsed source or destination argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// An object, or a prefix when the key is empty or ends in `/`.
    S3(S3Url),
    /// A file on a web server (a presigned URL, a CDN, nginx).
    Http(HttpUrl),
    /// A file or directory on this machine.
    Local(PathBuf),
}

/// `s3://bucket/key`, with the key exactly as stored (no URL decoding, as in the AWS CLI).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct S3Url {
    /// The bucket name.
    pub bucket: String,
    /// The key, or the prefix when empty or ending in `/`.
    pub key: String,
}

impl S3Url {
    /// Parse `s3://bucket/key` or `s3://bucket/prefix/`; anything else is refused with a hint.
    pub fn parse(text: &str) -> Result<S3Url> {
        match Location::parse(text)? {
            Location::S3(url) => Ok(url),
            Location::Http(_) | Location::Local(_) => Err(Error::InvalidInput(format!(
                "'{}' is not an S3 URL; write s3://bucket/key or s3://bucket/prefix/",
                redact(text)
            ))),
        }
    }

    /// True when the URL names a prefix rather than one object.
    pub fn is_prefix(&self) -> bool {
        self.key.is_empty() || self.key.ends_with('/')
    }
}

impl fmt::Display for S3Url {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "s3://{}/{}", self.bucket, self.key)
    }
}

/// An `http://` or `https://` URL. It prints with its secrets redacted (see [`redact`]), so
/// a presigned URL can appear in messages, errors and logs.
#[derive(Clone, PartialEq, Eq)]
pub struct HttpUrl {
    url: Url,
}

impl HttpUrl {
    /// Parse an absolute `http://` or `https://` URL.
    pub fn parse(text: &str) -> Result<HttpUrl> {
        let url = Url::parse(text).map_err(|e| {
            Error::InvalidInput(format!(
                "'{}' is not a valid URL ({e}); write http(s)://host/path",
                redact(text)
            ))
        })?;
        HttpUrl::try_from(url)
    }

    /// The URL to send (or hand to another process), secrets included: never print it.
    pub fn as_url(&self) -> &Url {
        &self.url
    }

    /// The last segment of the path, decoded: the file name a download takes by default.
    pub fn file_name(&self) -> Option<String> {
        let last = self.url.path_segments()?.next_back()?;
        let decoded = percent_encoding::percent_decode_str(last).decode_utf8_lossy();
        (!decoded.is_empty()).then(|| decoded.into_owned())
    }
}

impl TryFrom<Url> for HttpUrl {
    type Error = Error;

    fn try_from(url: Url) -> Result<HttpUrl> {
        if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
            return Err(Error::InvalidInput(format!(
                "'{}' is not an http(s) URL with a host",
                redact(url.as_str())
            )));
        }
        Ok(HttpUrl { url })
    }
}

impl fmt::Display for HttpUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&redact(self.url.as_str()))
    }
}

impl fmt::Debug for HttpUrl {
    // Debug output ends up in logs and panics too: never the secrets.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "HttpUrl({self})")
    }
}

/// Words that, anywhere in a query parameter's name, mark its value as a secret: API keys
/// (`api_key`, `apikey`, `x-api-key`), tokens (`access_token`, `X-Amz-Security-Token`),
/// signatures (`sig`, `Signature`, `X-Goog-Signature`), passwords, credentials, sessions.
/// Names are compared lowercased with `-`, `_` and `.` removed; a harmless name that
/// happens to match loses only its value in messages, never more.
const SECRET_WORDS: [&str; 9] = [
    "key",
    "token",
    "secret",
    "passw",
    "pwd",
    "sig",
    "credential",
    "auth",
    "session",
];
/// Whole families of signed-URL parameters (`X-Amz-*`, `X-Goog-*`): all of them redacted.
const SECRET_FAMILIES: [&str; 2] = ["xamz", "xgoog"];
/// S3's own listing parameters: they name a word above but carry no secret, and `-v`
/// shows them (a page's size, where it continues).
const S3_LISTING_PARAMETERS: [&str; 3] = ["maxkeys", "continuationtoken", "keymarker"];

/// `url` with the values of credential-bearing query (and fragment) parameters replaced by
/// `REDACTED`, and the userinfo's password (or a lone user name, often a token) too.
/// Works on text that does not parse, too (it is used on error paths).
pub fn redact(url: &str) -> String {
    let (before_fragment, fragment) = match url.split_once('#') {
        Some((head, fragment)) => (head, Some(fragment)),
        None => (url, None),
    };
    let (base, query) = match before_fragment.split_once('?') {
        Some((base, query)) => (base, Some(query)),
        None => (before_fragment, None),
    };
    let mut out = redact_userinfo(base);
    if let Some(query) = query {
        out.push('?');
        out.push_str(&redact_parameters(query));
    }
    if let Some(fragment) = fragment {
        out.push('#');
        out.push_str(&redact_parameters(fragment));
    }
    out
}

/// `a=1&api_key=x` becomes `a=1&api_key=REDACTED`.
fn redact_parameters(pairs: &str) -> String {
    pairs
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some((name, _)) if is_secret_parameter(name) => format!("{name}=REDACTED"),
            _ => pair.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("&")
}

/// True for a query parameter whose value must never be printed.
pub(crate) fn is_secret_parameter(name: &str) -> bool {
    let name: String = percent_encoding::percent_decode_str(name)
        .decode_utf8_lossy()
        .chars()
        .filter(|c| !matches!(c, '-' | '_' | '.'))
        .flat_map(char::to_lowercase)
        .collect();
    if S3_LISTING_PARAMETERS.contains(&name.as_str()) {
        return false;
    }
    SECRET_FAMILIES
        .iter()
        .any(|family| name.starts_with(family))
        || SECRET_WORDS.iter().any(|word| name.contains(word))
}

/// `scheme://user:password@host/...` keeps the user and loses the password; a user name
/// alone (`https://TOKEN@host/`, how tokens are often passed) is lost too.
fn redact_userinfo(base: &str) -> String {
    let Some((scheme, rest)) = base.split_once("://") else {
        return base.to_owned();
    };
    let authority_end = rest.find('/').unwrap_or(rest.len());
    let (authority, path) = rest.split_at(authority_end);
    match authority.rsplit_once('@') {
        Some((userinfo, host)) => match userinfo.split_once(':') {
            Some((user, _)) => format!("{scheme}://{user}:REDACTED@{host}{path}"),
            None => format!("{scheme}://REDACTED@{host}{path}"),
        },
        None => base.to_owned(),
    }
}

/// True when `url` (parsed or not) carries a user name or password before its host.
pub(crate) fn has_userinfo(url: &str) -> bool {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    rest.split(['/', '?', '#'])
        .next()
        .is_some_and(|authority| authority.contains('@'))
}

/// A destination argument taken as a local path: a URL (`s3://`, `http(s)://`, `gs://`) is
/// refused (exit 2) rather than taken as a folder named `s3:`. An S3 destination is
/// `Destination::Store`, never a path.
pub(crate) fn local_destination(argument: &std::ffi::OsStr) -> Result<PathBuf> {
    let lossy = argument.to_string_lossy();
    let uploads = || {
        Error::InvalidInput(format!(
            "'{}' is not a local path, and parabyte writes only to local paths and to \
             s3://bucket/key (a UTF-8 key; a web server or another scheme cannot be written)",
            redact(&lossy).escape_debug()
        ))
    };
    // Classified on its bytes: `s3://bucket/k\xff` names a remote place as surely as any
    // UTF-8 URL does, and is never a local path.
    if names_a_scheme(argument.as_encoded_bytes()) {
        if let Some(text) = argument.to_str() {
            if let Ok(Location::Local(path)) = Location::parse(text) {
                return Ok(path);
            }
        }
        return Err(uploads());
    }
    let Some(text) = argument.to_str() else {
        return Ok(PathBuf::from(argument));
    };
    match Location::parse(text) {
        Ok(Location::Local(path)) => Ok(path),
        Ok(Location::S3(_) | Location::Http(_)) => Err(uploads()),
        // Any other scheme (gs://, ftp://) names a remote place too: the same answer.
        Err(_) if text.contains("://") => Err(uploads()),
        Err(error) => Err(error),
    }
}

/// Whether `bytes` begin with a URL scheme and `://` (`s3://`, `https://`, `gs://`).
fn names_a_scheme(bytes: &[u8]) -> bool {
    let Some(end) = bytes.windows(3).position(|window| window == b"://") else {
        return false;
    };
    let scheme = &bytes[..end];
    scheme.first().is_some_and(u8::is_ascii_alphabetic)
        && scheme
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'))
}

/// The object one download fetches: a key in a store or a file on a web server. One run
/// may mix both (a manifest can).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ObjectUrl {
    /// `s3://bucket/key`.
    S3(S3Url),
    /// `http(s)://host/path`.
    Http(HttpUrl),
}

impl ObjectUrl {
    /// The name a download takes in a destination directory: the last segment of the key
    /// or URL path.
    pub fn file_name(&self) -> Option<String> {
        match self {
            ObjectUrl::S3(url) => url
                .key
                .rsplit('/')
                .next()
                .filter(|name| !name.is_empty())
                .map(str::to_owned),
            ObjectUrl::Http(url) => url.file_name(),
        }
    }
}

impl fmt::Display for ObjectUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ObjectUrl::S3(url) => url.fmt(f),
            ObjectUrl::Http(url) => url.fmt(f),
        }
    }
}

impl From<S3Url> for ObjectUrl {
    fn from(url: S3Url) -> Self {
        ObjectUrl::S3(url)
    }
}

impl From<HttpUrl> for ObjectUrl {
    fn from(url: HttpUrl) -> Self {
        ObjectUrl::Http(url)
    }
}

impl Location {
    /// Parse a command-line argument. Anything with a `scheme://` must be a scheme parabyte
    /// knows; everything else is a local path.
    pub fn parse(text: &str) -> Result<Location> {
        if let Some(rest) = text.strip_prefix("s3://") {
            let (bucket, key) = rest.split_once('/').unwrap_or((rest, ""));
            validate_bucket(bucket, text)?;
            return Ok(Location::S3(S3Url {
                bucket: bucket.to_owned(),
                key: key.to_owned(),
            }));
        }
        let lower = text.to_ascii_lowercase();
        if lower.starts_with("http://") || lower.starts_with("https://") {
            return HttpUrl::parse(text).map(Location::Http);
        }
        if let Some((scheme, _)) = text.split_once("://") {
            if !scheme.is_empty()
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
            {
                return Err(Error::InvalidInput(format!(
                    "'{}': unsupported scheme '{scheme}://'; use s3://bucket/key, http(s)://host/path or a local path",
                    redact(text)
                )));
            }
        }
        if text.is_empty() {
            return Err(Error::InvalidInput("an empty path was given".into()));
        }
        Ok(Location::Local(PathBuf::from(text)))
    }
}

/// Bucket names per the S3 rules that matter for addressing: 3-63 characters of
/// lowercase letters, digits, `.`, `-` and `_` (the last for older buckets).
fn validate_bucket(bucket: &str, url: &str) -> Result<()> {
    let ok_chars = bucket
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || ".-_".contains(c));
    if bucket.is_empty() || !ok_chars || bucket.len() > 255 {
        return Err(Error::InvalidInput(format!(
            "'{url}' has no valid bucket name; write s3://bucket/key (bucket names use lowercase letters, digits, '.', '-')"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_argument_with_a_scheme_is_never_a_local_path_whatever_its_bytes() {
        use std::os::unix::ffi::OsStrExt;
        for remote in [&b"s3://bkt/k\xff"[..], b"gs://b/k", b"https://h/\xfe"] {
            let argument = std::ffi::OsStr::from_bytes(remote);
            assert!(local_destination(argument).is_err(), "{remote:?}");
        }
        for local in [&b"out/\xff"[..], b"./a://b"] {
            let argument = std::ffi::OsStr::from_bytes(local);
            assert!(local_destination(argument).is_ok(), "{local:?}");
        }
    }

    fn s3(bucket: &str, key: &str) -> Location {
        Location::S3(S3Url {
            bucket: bucket.into(),
            key: key.into(),
        })
    }

    #[test]
    fn s3_urls_keep_keys_verbatim() {
        assert_eq!(Location::parse("s3://b/k").unwrap(), s3("b", "k"));
        assert_eq!(Location::parse("s3://b").unwrap(), s3("b", ""));
        assert_eq!(Location::parse("s3://b/").unwrap(), s3("b", ""));
        assert_eq!(
            Location::parse("s3://b/a b/%41+c").unwrap(),
            s3("b", "a b/%41+c")
        );
        assert_eq!(Location::parse("s3://b/dir/").unwrap(), s3("b", "dir/"));
    }

    #[test]
    fn prefixes_are_recognised() {
        let Location::S3(url) = Location::parse("s3://b/dir/").unwrap() else {
            panic!()
        };
        assert!(url.is_prefix());
        let Location::S3(url) = Location::parse("s3://b/dir/file").unwrap() else {
            panic!()
        };
        assert!(!url.is_prefix());
    }

    #[test]
    fn malformed_urls_explain_themselves() {
        let err = Location::parse("s3:///key").unwrap_err().to_string();
        assert!(err.contains("no valid bucket"), "{err}");
        let err = Location::parse("s3://Bad_Bucket/key")
            .unwrap_err()
            .to_string();
        assert!(err.contains("no valid bucket"), "{err}");
        let err = Location::parse("gs://bucket/key").unwrap_err().to_string();
        assert!(err.contains("unsupported scheme 'gs://'"), "{err}");
    }

    #[test]
    fn http_urls_are_sources() {
        let Location::Http(url) = Location::parse("https://example.com/a/b%20c.bin?x=1").unwrap()
        else {
            panic!()
        };
        assert_eq!(url.file_name().as_deref(), Some("b c.bin"));
        assert!(Location::parse("HTTP://example.com/f").is_ok());
        let err = Location::parse("http://").unwrap_err().to_string();
        assert!(err.contains("not a valid URL"), "{err}");
    }

    #[test]
    fn presigned_secrets_never_print() {
        let presigned = "https://u:pw@h:9000/b/k?X-Amz-Algorithm=AWS4-HMAC-SHA256\
            &X-Amz-Credential=AKIA%2F20250101&X-Amz-Signature=abc123&X-Amz-Security-Token=tok\
            &AWSAccessKeyId=AKIA&Signature=s2&sig=az&partNumber=1#frag";
        let url = HttpUrl::parse(presigned).unwrap();
        for shown in [
            url.to_string(),
            format!("{url:?}"),
            ObjectUrl::Http(url.clone()).to_string(),
            redact(presigned),
        ] {
            for secret in ["pw", "AKIA", "abc123", "tok", "s2", "az", "AWS4-HMAC"] {
                assert!(!shown.contains(secret), "{secret} in {shown}");
            }
            assert!(shown.contains("partNumber=1"), "{shown}");
            assert!(shown.contains("X-Amz-Signature=REDACTED"), "{shown}");
        }
        assert_eq!(redact("http://h/p"), "http://h/p");
    }

    #[test]
    fn every_family_of_secret_parameter_is_redacted() {
        let secret_names = [
            "api_key",
            "apikey",
            "x-api-key",
            "API-KEY",
            "key",
            "access_token",
            "token",
            "refresh_token",
            "client_secret",
            "password",
            "passwd",
            "pwd",
            "sig",
            "Signature",
            "X-Goog-Signature",
            "X-Goog-Credential",
            "X-Amz-Date",
            "x-amz-security-token",
            "auth",
            "Authorization",
            "sessionid",
            "credentials",
            "api%5Fkey",
        ];
        for name in secret_names {
            let shown = redact(&format!("https://h/f?a=1&{name}=hush&b=2#{name}=hush"));
            assert_eq!(
                shown,
                format!("https://h/f?a=1&{name}=REDACTED&b=2#{name}=REDACTED"),
                "{name}"
            );
        }
        for plain in [
            "partNumber",
            "v",
            "prefix",
            "response-content-type",
            "page",
            "max-keys",
            "continuation-token",
        ] {
            let text = format!("https://h/f?{plain}=shown");
            assert_eq!(redact(&text), text, "{plain}");
        }
        assert_eq!(
            redact("https://ghp_token@h/f"),
            "https://REDACTED@h/f",
            "a lone user name is often a token"
        );
    }

    #[test]
    fn urls_are_never_taken_as_local_paths() {
        for remote in [
            "s3://bucket/up/f.txt",
            "s3://bucket",
            "https://h/up?api_key=hush",
            "http://h/",
            "gs://bucket/k",
        ] {
            let error = local_destination(remote.as_ref()).unwrap_err().to_string();
            assert!(error.contains("is not a local path"), "{error}");
            assert!(!error.contains("hush"), "{error}");
        }
        for local in ["out", "./s3:", "dir/x://y", "-"] {
            assert_eq!(
                local_destination(local.as_ref()).unwrap(),
                PathBuf::from(local)
            );
        }
        assert!(has_userinfo("http://u:p@h:9000"));
        assert!(has_userinfo("https://token@h/"));
        assert!(!has_userinfo("http://h:9000/a@b?c=@"));
    }

    #[test]
    fn anything_else_is_a_local_path() {
        assert_eq!(
            Location::parse("./data").unwrap(),
            Location::Local("./data".into())
        );
    }

    /// Arguments made up of URL pieces: every one parses or is refused, never a panic, and
    /// a `scheme://` one is never a local path (`make fuzz` runs many more cases).
    mod fuzz {
        use std::os::unix::ffi::OsStrExt;

        use proptest::prelude::*;

        use super::*;

        proptest! {
            #[test]
            fn any_argument_is_classified(
                scheme in prop::sample::select(vec!["s3://", "https://", "http://", "gs://", "", "./", "/"]),
                rest in "[a-zA-Z0-9./:@%?#&=\\[\\]*_~-]{0,30}",
                tail in prop::collection::vec(any::<u8>(), 0..4),
            ) {
                let text = format!("{scheme}{rest}");
                let _ = Location::parse(&text);
                let _ = redact(&text);
                let mut bytes = text.clone().into_bytes();
                bytes.extend(tail);
                let argument = std::ffi::OsStr::from_bytes(&bytes);
                if let Ok(path) = local_destination(argument) {
                    prop_assert!(!scheme.ends_with("://"), "{text:?} became the path {path:?}");
                }
            }
        }
    }
}
