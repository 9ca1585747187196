//! A listing server whose page costs the same however many keys the bucket holds, as S3's
//! does: sorted keys held in memory, each page found by binary search and written from there.
//! Real servers on this machine are not that (versitygw walks its directories, moto scans the
//! bucket), so a benchmark of listing at 100,000 or 1,000,000 keys against them measures the
//! server. It answers ListObjectsV2 with S3's rules for `prefix`, `delimiter`, `start-after`,
//! `continuation-token` (opaque; it wins over `start-after`), `max-keys` (at most 1000) and
//! `encoding-type=url`, for one bucket, path-style, checking no signature; a key it does not
//! hold is 404, as on S3, and anything else is refused with 501. It runs on a [`HostileServer`], which records what it was sent.

use std::sync::Arc;

use crate::hostile::{HostileServer, ListPage, Received, Reply};

/// S3's largest page.
const MAX_KEYS: usize = 1000;

/// The keys a [`ListingServer`] lists, sorted by their UTF-8 bytes as S3 sorts them, each of
/// one same size.
#[derive(Debug, Clone)]
pub struct KeySpace {
    bucket: String,
    keys: Vec<String>,
    size: u64,
}

/// Where a page starts: after a key, or past every key under a common prefix sent before.
enum After {
    Start,
    Key(String),
    Group(String),
}

impl KeySpace {
    /// `keys` in any order; duplicates count once.
    pub fn new(bucket: &str, mut keys: Vec<String>, size: u64) -> KeySpace {
        keys.sort_unstable();
        keys.dedup();
        KeySpace {
            bucket: bucket.to_owned(),
            keys,
            size,
        }
    }

    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The answer to one request.
    pub fn answer(&self, request: &Received) -> Reply {
        let (bucket, key) = request.bucket_and_key();
        if bucket != self.bucket {
            return Reply::s3_error(404, "NoSuchBucket", "The specified bucket does not exist");
        }
        if !key.is_empty() && self.keys.binary_search(&key).is_err() {
            // As S3 answers a HEAD or GET of a key it does not have (a tool may look first).
            return Reply::s3_error(404, "NoSuchKey", "The specified key does not exist.");
        }
        if !key.is_empty() || !request.is_listing() {
            return Reply::s3_error(501, "NotImplemented", "This server only lists");
        }
        let after = match request.query_param("continuation-token") {
            Some(token) => match read_token(&token) {
                Some(after) => after,
                None => {
                    return Reply::s3_error(
                        400,
                        "InvalidArgument",
                        "The continuation token provided is incorrect",
                    )
                }
            },
            None => request
                .query_param("start-after")
                .filter(|key| !key.is_empty())
                .map_or(After::Start, After::Key),
        };
        let max_keys = match request.query_param("max-keys") {
            None => MAX_KEYS,
            Some(text) => match text.parse::<usize>() {
                Ok(n) => n.min(MAX_KEYS),
                Err(_) => {
                    return Reply::s3_error(400, "InvalidArgument", "max-keys is not a number")
                }
            },
        };
        let prefix = request.query_param("prefix").unwrap_or_default();
        let delimiter = request.query_param("delimiter").filter(|d| !d.is_empty());
        self.page(&prefix, delimiter.as_deref(), after, max_keys)
            .reply(request)
    }

    fn page(
        &self,
        prefix: &str,
        delimiter: Option<&str>,
        after: After,
        max_keys: usize,
    ) -> ListPage {
        let mut at = self.keys.partition_point(|key| key.as_str() < prefix);
        at = at.max(match &after {
            After::Start => 0,
            After::Key(key) => self.past(key),
            After::Group(group) => self.past_group(group),
        });
        let mut page = ListPage::new(prefix);
        let mut last = None;
        let mut count = 0;
        while count < max_keys {
            let Some(key) = self.keys.get(at).filter(|key| key.starts_with(prefix)) else {
                break;
            };
            let group = delimiter.and_then(|delimiter| {
                let below = &key[prefix.len()..];
                below
                    .find(delimiter)
                    .map(|i| &key[..prefix.len() + i + delimiter.len()])
            });
            match group {
                Some(group) => {
                    page = page.common_prefix(group);
                    at = self.past_group(group);
                    last = Some(format!("g{group}"));
                }
                None => {
                    page = page.object(key, self.size);
                    at += 1;
                    last = Some(format!("k{key}"));
                }
            }
            count += 1;
        }
        let more = self.keys.get(at).is_some_and(|key| key.starts_with(prefix));
        match last {
            Some(last) if more => page.truncated(Some(&hex_encode(&last))),
            _ => page,
        }
    }

    /// The index of the first key after `key`.
    fn past(&self, key: &str) -> usize {
        self.keys.partition_point(|listed| listed.as_str() <= key)
    }

    /// The index of the first key after every key that starts with `group`.
    fn past_group(&self, group: &str) -> usize {
        self.keys
            .partition_point(|listed| listed.as_str() < group || listed.starts_with(group))
    }
}

/// The token names where the page ended; hex, so that it is opaque and safe in a query.
fn hex_encode(text: &str) -> String {
    text.bytes().map(|byte| format!("{byte:02x}")).collect()
}

fn read_token(token: &str) -> Option<After> {
    let bytes = (0..token.len())
        .step_by(2)
        .map(|i| {
            token
                .get(i..i + 2)
                .and_then(|hex| u8::from_str_radix(hex, 16).ok())
        })
        .collect::<Option<Vec<u8>>>()?;
    let text = String::from_utf8(bytes).ok()?;
    let (kind, rest) = text.split_at_checked(1)?;
    match kind {
        "k" => Some(After::Key(rest.to_owned())),
        "g" => Some(After::Group(rest.to_owned())),
        _ => None,
    }
}

/// A [`KeySpace`] served on a free 127.0.0.1 port; it stops when dropped.
#[derive(Debug)]
pub struct ListingServer {
    server: HostileServer,
}

impl ListingServer {
    pub fn start(keys: KeySpace) -> ListingServer {
        ListingServer::start_logging(keys, |_, _| {})
    }

    /// As [`ListingServer::start`]; `log` is told of each request and the status it got.
    pub fn start_logging(
        keys: KeySpace,
        log: impl Fn(&Received, u16) + Send + Sync + 'static,
    ) -> ListingServer {
        let keys = Arc::new(keys);
        let server = HostileServer::start(move |request| {
            let reply = keys.answer(request);
            log(request, reply.status_code());
            reply
        });
        ListingServer { server }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn endpoint(&self) -> String {
        self.server.endpoint()
    }

    /// The requests received so far, oldest first (the first 10 000).
    pub fn requests(&self) -> Vec<Received> {
        self.server.requests()
    }

    /// How many requests arrived.
    pub fn request_count(&self) -> u64 {
        self.server.request_count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::{HeaderMap, Method};

    fn request(query: &str) -> Received {
        Received {
            method: Method::GET,
            target: format!("/b?{query}"),
            path: "/b".to_owned(),
            query: query.to_owned(),
            headers: HeaderMap::new(),
        }
    }

    /// Keys, common prefixes and the next token of one answer, read from its XML.
    fn listed(space: &KeySpace, query: &str) -> (Vec<String>, Vec<String>, Option<String>) {
        let body = space.answer(&request(query)).body_text();
        let all = |open: &str, close: &str| -> Vec<String> {
            body.split(open)
                .skip(1)
                .map(|rest| rest.split(close).next().unwrap_or("").to_owned())
                .collect()
        };
        let keys = all("<Key>", "</Key>");
        let prefixes = all("<CommonPrefixes><Prefix>", "</Prefix>");
        let token = all("<NextContinuationToken>", "</NextContinuationToken>")
            .into_iter()
            .next();
        (keys, prefixes, token)
    }

    fn space(keys: &[&str]) -> KeySpace {
        KeySpace::new("b", keys.iter().map(|key| (*key).to_owned()).collect(), 7)
    }

    /// Following the tokens page by page gives every key under the prefix once, in order,
    /// at every page size.
    #[test]
    fn following_the_tokens_lists_every_key_once() {
        let keys: Vec<String> = (0..250)
            .map(|i| format!("p/d{:02}/k{i:04}", i % 7))
            .collect();
        let space = KeySpace::new("b", keys.iter().rev().cloned().collect(), 7);
        let mut expected = keys.clone();
        expected.sort();
        for max_keys in [1, 3, 100, 1000] {
            let mut seen = Vec::new();
            let mut token: Option<String> = None;
            for _ in 0..1000 {
                let query = match &token {
                    Some(token) => {
                        format!("list-type=2&prefix=p%2F&max-keys={max_keys}&continuation-token={token}")
                    }
                    None => format!("list-type=2&prefix=p%2F&max-keys={max_keys}"),
                };
                let (page, _, next) = listed(&space, &query);
                assert!(page.len() <= max_keys);
                seen.extend(page);
                token = next;
                if token.is_none() {
                    break;
                }
            }
            assert_eq!(seen, expected, "max-keys {max_keys}");
        }
    }

    #[test]
    fn a_delimiter_rolls_keys_up_and_a_token_after_a_group_skips_it() {
        let space = space(&["a/1", "a/2", "b", "c/x/1", "c/y", "d"]);
        let (keys, prefixes, token) = listed(&space, "list-type=2&delimiter=%2F&max-keys=2");
        assert_eq!(
            (keys, prefixes.clone()),
            (vec!["b".to_owned()], vec!["a/".to_owned()])
        );
        let token = token.expect("more after two entries");
        let (keys, prefixes, token) = listed(
            &space,
            &format!("list-type=2&delimiter=%2F&continuation-token={token}"),
        );
        assert_eq!(keys, ["d"]);
        assert_eq!(prefixes, ["c/"]);
        assert_eq!(token, None);
        let (keys, prefixes, _) = listed(&space, "list-type=2&prefix=c%2F&delimiter=%2F");
        assert_eq!(
            (keys, prefixes),
            (vec!["c/y".to_owned()], vec!["c/x/".to_owned()])
        );
    }

    #[test]
    fn start_after_and_prefix_bound_the_page_and_a_token_wins_over_start_after() {
        let space = space(&["a", "p/1", "p/2", "p/3", "q"]);
        let (keys, _, _) = listed(&space, "list-type=2&prefix=p%2F&start-after=p%2F1");
        assert_eq!(keys, ["p/2", "p/3"]);
        let (keys, _, _) = listed(&space, "list-type=2&prefix=p%2F&start-after=a");
        assert_eq!(keys, ["p/1", "p/2", "p/3"]);
        let (keys, _, _) = listed(&space, "list-type=2&prefix=p%2F&start-after=z");
        assert!(keys.is_empty());
        let (_, _, token) = listed(&space, "list-type=2&prefix=p%2F&max-keys=1");
        let token = token.expect("more after one");
        let (keys, _, _) = listed(
            &space,
            &format!("list-type=2&prefix=p%2F&start-after=p%2F2&continuation-token={token}"),
        );
        assert_eq!(keys, ["p/2", "p/3"]);
    }

    #[test]
    fn what_it_cannot_answer_is_refused() {
        let space = space(&["a"]);
        let status = |target: &str, method: Method| {
            let (path, query) = target.split_once('?').unwrap_or((target, ""));
            let seen = Received {
                method,
                target: target.to_owned(),
                path: path.to_owned(),
                query: query.to_owned(),
                headers: HeaderMap::new(),
            };
            space.answer(&seen).status_code()
        };
        assert_eq!(status("/b?list-type=2", Method::GET), 200);
        assert_eq!(status("/other?list-type=2", Method::GET), 404);
        assert_eq!(status("/b/a", Method::GET), 501);
        assert_eq!(status("/b/missing", Method::HEAD), 404);
        assert_eq!(status("/b", Method::PUT), 501);
        assert_eq!(
            status("/b?list-type=2&continuation-token=zz", Method::GET),
            400
        );
        assert_eq!(
            status("/b?list-type=2&continuation-token=7a61", Method::GET),
            400
        );
        assert_eq!(status("/b?list-type=2&max-keys=many", Method::GET), 400);
    }

    #[test]
    fn keys_are_url_encoded_when_asked() {
        let space = space(&["p/a b&c"]);
        let (keys, _, _) = listed(&space, "list-type=2&encoding-type=url");
        assert_eq!(keys, ["p%2Fa%20b%26c"]);
        let (keys, _, _) = listed(&space, "list-type=2");
        assert_eq!(keys, ["p/a b&amp;c"]);
    }
}
