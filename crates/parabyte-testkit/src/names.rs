//! S3 names: valid, unique bucket names and the URI encoding of keys and query strings.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};

/// S3's URI encoding: everything but the unreserved characters `A-Za-z0-9-._~`.
const S3_URI_ENCODE: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// Encodes each `/`-separated segment of `key` the way S3 does, keeping the slashes.
pub fn encode_key(key: &str) -> String {
    key.split('/')
        .map(|segment| utf8_percent_encode(segment, S3_URI_ENCODE).to_string())
        .collect::<Vec<_>>()
        .join("/")
}

pub(crate) fn encode_query(query: &[(String, String)]) -> String {
    query
        .iter()
        .map(|(name, value)| {
            format!(
                "{}={}",
                utf8_percent_encode(name, S3_URI_ENCODE),
                utf8_percent_encode(value, S3_URI_ENCODE)
            )
        })
        .collect::<Vec<_>>()
        .join("&")
}

/// A fresh, valid bucket name starting with `prefix`: lowercase, at most 63 characters, unique
/// per call and (through the process id and start time) across processes sharing a server.
pub fn unique_bucket_name(prefix: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    static PROCESS_TAG: OnceLock<String> = OnceLock::new();
    let process_tag = PROCESS_TAG.get_or_init(|| {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        format!("{:x}{:x}", std::process::id(), nanos % 0x10_0000)
    });
    let count = COUNTER.fetch_add(1, Ordering::Relaxed);
    let suffix = format!("-{process_tag}-{count}");
    let mut clean: String = prefix
        .chars()
        .map(|c| match c.to_ascii_lowercase() {
            c @ ('a'..='z' | '0'..='9') => c,
            _ => '-',
        })
        .collect();
    clean.truncate(63 - suffix.len());
    // A name must start with a letter or digit; the suffix already ends with one.
    let clean = clean.trim_start_matches('-');
    let clean = if clean.is_empty() { "t" } else { clean };
    format!("{clean}{suffix}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_encoded_per_segment() {
        assert_eq!(encode_key("a/b c/d+e%f"), "a/b%20c/d%2Be%25f");
        assert_eq!(encode_key("ünï/~x-y_z.bin"), "%C3%BCn%C3%AF/~x-y_z.bin");
        assert_eq!(encode_key("trailing/"), "trailing/");
    }

    #[test]
    fn query_values_encode_slashes() {
        let query = [("prefix".to_owned(), "a/b c".to_owned())];
        assert_eq!(encode_query(&query), "prefix=a%2Fb%20c");
    }

    #[test]
    fn bucket_names_are_valid_and_unique() {
        let names: Vec<String> = ["Hello_World", "--x", "", &"long".repeat(40)]
            .iter()
            .map(|prefix| unique_bucket_name(prefix))
            .collect();
        for name in &names {
            assert!((3..=63).contains(&name.len()), "{name}");
            assert!(name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'));
            assert!(
                name.starts_with(|c: char| c.is_ascii_alphanumeric()),
                "{name}"
            );
            assert!(
                name.ends_with(|c: char| c.is_ascii_alphanumeric()),
                "{name}"
            );
        }
        assert!(names[0].starts_with("hello-world-"));
        let mut deduplicated = names.clone();
        deduplicated.dedup();
        assert_eq!(deduplicated.len(), names.len());
    }
}
