//! Version validators: how an ETag compares, and what it says about the content.

/// ETags compare without quotes or a weak-validator prefix: listings and GETs differ there.
pub(crate) fn same_etag(a: &str, b: &str) -> bool {
    fn bare(tag: &str) -> &str {
        tag.trim_start_matches("W/").trim_matches('"')
    }
    bare(a) == bare(b)
}

/// The MD5 an ETag stands for, when it looks like one (32 hex digits, no `-N` part count).
pub(crate) fn etag_md5(etag: &str) -> Option<[u8; 16]> {
    let bare = etag.trim_start_matches("W/").trim_matches('"');
    let mut md5 = [0u8; 16];
    hex::decode_to_slice(bare, &mut md5).ok()?;
    Some(md5)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn etags_compare_without_quotes() {
        assert!(same_etag("\"abc\"", "abc"));
        assert!(same_etag("W/\"abc\"", "\"abc\""));
        assert!(!same_etag("\"abc\"", "\"abd\""));
    }

    #[test]
    fn etags_that_are_md5s() {
        assert!(etag_md5("\"9ace7737ef330b667f76f612a2ffc1f3\"").is_some());
        assert!(etag_md5("\"9ace7737ef330b667f76f612a2ffc1f3-4\"").is_none());
        assert!(etag_md5("\"abc\"").is_none());
    }
}
