//! Version validators: what names one version of an object, how two compare, which request
//! header pins a later request to it, and what an ETag says about the content.

use std::fmt;

use crate::checksum::MAX_UPLOAD_PARTS;

/// What names one version of an object: its ETag, or for a web server without a strong ETag
/// its Last-Modified date.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Validator {
    /// As the server sent it (quoted, maybe `W/`), or bare as a listing or manifest gave it.
    ETag(String),
    /// An HTTP date.
    LastModified(String),
}

/// The request header that makes a server refuse (412) anything but one version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Precondition {
    pub name: &'static str,
    pub value: String,
}

impl Validator {
    /// Read back a validator kept as text (a resume mark): an HTTP date is a Last-Modified
    /// date, anything else an ETag (ETags are quoted strings, never dates).
    pub(crate) fn from_stored(text: &str) -> Validator {
        if httpdate::parse_http_date(text).is_ok() {
            Validator::LastModified(text.to_owned())
        } else {
            Validator::ETag(text.to_owned())
        }
    }

    /// The text kept in resume marks, read back by [`Validator::from_stored`].
    pub(crate) fn stored(&self) -> &str {
        match self {
            Validator::ETag(text) | Validator::LastModified(text) => text,
        }
    }

    /// The same version: ETags compare without quotes or a weak prefix (listings and GETs
    /// differ there), dates as sent.
    pub(crate) fn matches(&self, other: &Validator) -> bool {
        match (self, other) {
            (Validator::ETag(a), Validator::ETag(b)) => bare(a) == bare(b),
            (Validator::LastModified(a), Validator::LastModified(b)) => a == b,
            _ => false,
        }
    }

    /// `If-Match` for an ETag (quoted if it came bare), `If-Unmodified-Since` for a date.
    /// A weak ETag never matches strongly, so it pins nothing.
    pub(crate) fn precondition(&self) -> Option<Precondition> {
        match self {
            Validator::ETag(tag) if tag.starts_with("W/") => None,
            Validator::ETag(tag) => Some(Precondition {
                name: "if-match",
                value: if tag.starts_with('"') {
                    tag.clone()
                } else {
                    format!("\"{tag}\"")
                },
            }),
            Validator::LastModified(date) => Some(Precondition {
                name: "if-unmodified-since",
                value: date.clone(),
            }),
        }
    }

    /// The upload parts a multipart ETag (`"<hex>-N"`) counts, when it is one and N is a count
    /// S3 allows.
    pub(crate) fn upload_parts(&self) -> Option<u32> {
        let Validator::ETag(tag) = self else {
            return None;
        };
        let (digest, parts) = bare(tag).rsplit_once('-')?;
        let parts: u32 = parts.parse().ok()?;
        let hex = !digest.is_empty() && digest.bytes().all(|b| b.is_ascii_hexdigit());
        (hex && (1..=MAX_UPLOAD_PARTS).contains(&parts)).then_some(parts)
    }

    /// The MD5 an ETag stands for, when it looks like one (32 hex digits, no `-N` part count).
    pub(crate) fn md5(&self) -> Option<[u8; 16]> {
        match self {
            Validator::ETag(tag) => etag_md5(tag),
            Validator::LastModified(_) => None,
        }
    }
}

impl fmt::Display for Validator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Validator::ETag(tag) => write!(f, "ETag {tag}"),
            Validator::LastModified(date) => write!(f, "Last-Modified {date}"),
        }
    }
}

fn bare(tag: &str) -> &str {
    tag.trim_start_matches("W/").trim_matches('"')
}

fn etag_md5(etag: &str) -> Option<[u8; 16]> {
    let mut md5 = [0u8; 16];
    hex::decode_to_slice(bare(etag), &mut md5).ok()?;
    Some(md5)
}

#[cfg(test)]
mod tests {
    use super::*;

    const DATE: &str = "Sun, 22 Nov 2026 07:00:00 GMT";

    fn etag(tag: &str) -> Validator {
        Validator::ETag(tag.to_owned())
    }

    #[test]
    fn etags_compare_without_quotes() {
        assert!(etag("\"abc\"").matches(&etag("abc")));
        assert!(etag("W/\"abc\"").matches(&etag("\"abc\"")));
        assert!(!etag("\"abc\"").matches(&etag("\"abd\"")));
        assert!(!etag(DATE).matches(&Validator::LastModified(DATE.to_owned())));
    }

    #[test]
    fn etags_that_are_md5s() {
        assert!(etag("\"9ace7737ef330b667f76f612a2ffc1f3\"").md5().is_some());
        assert!(etag("\"9ace7737ef330b667f76f612a2ffc1f3-4\"")
            .md5()
            .is_none());
        assert!(etag("\"abc\"").md5().is_none());
    }

    #[test]
    fn multipart_etags_count_their_parts() {
        assert_eq!(
            etag("\"9ace7737ef330b667f76f612a2ffc1f3-4\"").upload_parts(),
            Some(4)
        );
        assert_eq!(
            etag("9ace7737ef330b667f76f612a2ffc1f3-1").upload_parts(),
            Some(1)
        );
        assert_eq!(
            etag("\"9ace7737ef330b667f76f612a2ffc1f3\"").upload_parts(),
            None
        );
        assert_eq!(etag("\"abc-0\"").upload_parts(), None);
        assert_eq!(etag("\"abc-10001\"").upload_parts(), None);
        assert_eq!(etag("\"not hex-2\"").upload_parts(), None);
        assert_eq!(Validator::LastModified(DATE.into()).upload_parts(), None);
    }

    #[test]
    fn validators_become_the_matching_precondition() {
        let header = |v: &Validator| v.precondition().map(|p| (p.name, p.value));
        assert_eq!(
            header(&etag("\"abc\"")),
            Some(("if-match", "\"abc\"".into()))
        );
        assert_eq!(header(&etag("abc")), Some(("if-match", "\"abc\"".into())));
        assert_eq!(
            header(&Validator::LastModified(DATE.into())),
            Some(("if-unmodified-since", DATE.into()))
        );
        assert_eq!(header(&etag("W/\"abc\"")), None);
    }

    #[test]
    fn stored_validators_read_back_as_what_they_were() {
        for validator in [etag("\"abc\""), Validator::LastModified(DATE.into())] {
            assert_eq!(Validator::from_stored(validator.stored()), validator);
        }
    }
}
