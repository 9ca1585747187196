//! One page of a listing, as every store hands it over: the request (`ListQuery`), the
//! entries (`ObjectEntry`, `ListPage`), and `PageSink`, through which a store streams a
//! page's continuation token and objects as they arrive. The sink also owns the rule for a
//! page asked for again after it broke off: the objects already handed on are skipped, once
//! the store is shown to list them the same way.

use std::borrow::Cow;
use std::sync::Mutex;

use tokio::sync::mpsc;

use crate::error::{Error, Result};
use crate::timestamp::Timestamp;

/// One object as a listing describes it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ObjectEntry {
    /// The full key.
    pub key: String,
    /// Size in bytes.
    pub size: u64,
    /// The ETag with its quotes, as S3 sends it (the MD5 for single-part uploads).
    pub etag: Option<String>,
    /// When the object was last written.
    pub last_modified: Option<Timestamp>,
    /// Storage class, when the store reports one (S3's own names borrowed, not copied).
    pub storage_class: Option<Cow<'static, str>>,
}

/// The storage classes S3 names: a listed entry borrows its class's name rather than
/// holding a copy of the same few words a million times.
pub(super) const STORAGE_CLASSES: [&str; 11] = [
    "STANDARD",
    "STANDARD_IA",
    "ONEZONE_IA",
    "INTELLIGENT_TIERING",
    "GLACIER",
    "GLACIER_IR",
    "DEEP_ARCHIVE",
    "REDUCED_REDUNDANCY",
    "EXPRESS_ONEZONE",
    "OUTPOSTS",
    "SNOW",
];

pub(crate) fn storage_class(text: &str) -> Cow<'static, str> {
    match STORAGE_CLASSES.iter().find(|class| **class == text) {
        Some(class) => Cow::Borrowed(class),
        None => Cow::Owned(text.to_owned()),
    }
}

/// One ListObjectsV2 response.
#[derive(Debug, Default)]
pub(crate) struct ListPage {
    pub objects: Vec<ObjectEntry>,
    pub common_prefixes: Vec<String>,
    /// Present when more pages follow.
    pub next_token: Option<String>,
    /// The store's `IsTruncated`: more keys follow this page.
    pub is_truncated: bool,
}

/// Where a ListObjectsV2 request starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Cursor {
    /// The first key under the prefix.
    Start,
    /// Where a previous page said to continue.
    Token(String),
    /// The first key after this one.
    After(String),
}

/// One ListObjectsV2 request.
#[derive(Debug)]
pub(crate) struct ListQuery<'a> {
    pub bucket: &'a str,
    pub prefix: &'a str,
    pub delimiter: Option<&'a str>,
    pub cursor: &'a Cursor,
    pub max_keys: usize,
}

/// The objects of a page already handed on before it broke off.
#[derive(Debug, Clone, Default)]
pub(crate) struct HandedOn {
    pub(crate) count: usize,
    pub(crate) last_key: Option<String>,
}

impl HandedOn {
    /// Drops from `objects` those a previous attempt handed on; the last of them must be
    /// the key it ended with, or the store lists the page differently now.
    fn skip(&mut self, objects: &mut Vec<ObjectEntry>, query: &ListQuery<'_>) -> Result<()> {
        let dropped = self.count.min(objects.len());
        if dropped == 0 {
            return Ok(());
        }
        self.count -= dropped;
        let last = objects
            .drain(..dropped)
            .next_back()
            .map(|object| object.key);
        if self.count == 0 && last != self.last_key {
            return Err(self.differs(query));
        }
        Ok(())
    }

    fn differs(&self, query: &ListQuery<'_>) -> Error {
        Error::BadListing {
            bucket: query.bucket.to_owned(),
            prefix: query.prefix.to_owned(),
            detail: "a page broke off, and asked again the store listed it differently".to_owned(),
        }
    }
}

/// Where one attempt at a page goes while it arrives: its continuation token as soon as it
/// is known (so the next page can be asked for while this one streams), and its objects in
/// batches (recursive listings), so a page of any size is never held whole.
pub(crate) struct PageSink<'a> {
    early_token: Option<&'a mpsc::UnboundedSender<String>>,
    batches: &'a mpsc::Sender<Vec<ObjectEntry>>,
    /// What every attempt at this page handed on, shared across attempts.
    handed_on: &'a Mutex<HandedOn>,
    /// What this attempt still has to skip of what earlier attempts handed on.
    repeat: HandedOn,
}

impl<'a> PageSink<'a> {
    pub(crate) fn new(
        early_token: Option<&'a mpsc::UnboundedSender<String>>,
        batches: &'a mpsc::Sender<Vec<ObjectEntry>>,
        handed_on: &'a Mutex<HandedOn>,
    ) -> PageSink<'a> {
        let repeat = handed_on.lock().expect("listing progress poisoned").clone();
        PageSink {
            early_token,
            batches,
            handed_on,
            repeat,
        }
    }

    /// The page's continuation token, the moment it is known; only the first counts.
    pub(crate) fn token(&mut self, token: &str) {
        if let Some(sender) = self.early_token.take() {
            let _ = sender.send(token.to_owned());
        }
    }

    /// Hand on a batch of the page's objects, less what an earlier attempt handed on.
    /// `Ok(false)` when nobody reads this page any more.
    pub(crate) async fn objects(
        &mut self,
        mut batch: Vec<ObjectEntry>,
        query: &ListQuery<'_>,
    ) -> Result<bool> {
        self.repeat.skip(&mut batch, query)?;
        let Some(last) = batch.last().map(|object| object.key.clone()) else {
            return Ok(true);
        };
        let count = batch.len();
        if self.batches.send(batch).await.is_err() {
            return Ok(false);
        }
        let mut progress = self.handed_on.lock().expect("listing progress poisoned");
        progress.count += count;
        progress.last_key = Some(last);
        Ok(true)
    }

    /// The rest of the page, once it has ended, less what an earlier attempt handed on.
    pub(crate) fn finish(mut self, mut rest: ListPage, query: &ListQuery<'_>) -> Result<ListPage> {
        self.repeat.skip(&mut rest.objects, query)?;
        if self.repeat.count > 0 {
            return Err(self.repeat.differs(query));
        }
        Ok(rest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn objects(keys: &[&str]) -> Vec<ObjectEntry> {
        keys.iter()
            .map(|key| ObjectEntry {
                key: (*key).into(),
                size: 1,
                etag: None,
                last_modified: None,
                storage_class: None,
            })
            .collect()
    }

    #[tokio::test]
    async fn a_sink_skips_what_was_handed_on_if_it_lists_the_same() {
        let query = ListQuery {
            bucket: "b",
            prefix: "k/",
            delimiter: None,
            cursor: &Cursor::Start,
            max_keys: 1000,
        };
        let (batches, mut received) = mpsc::channel(8);
        let handed_on = Mutex::new(HandedOn {
            count: 2,
            last_key: Some("k/2".into()),
        });
        let mut same = PageSink::new(None, &batches, &handed_on);
        assert!(same.objects(objects(&["k/1"]), &query).await.unwrap());
        assert!(same
            .objects(objects(&["k/2", "k/3"]), &query)
            .await
            .unwrap());
        let rest = same.finish(ListPage::default(), &query).unwrap();
        assert!(rest.objects.is_empty());
        let sent = received.recv().await.unwrap();
        assert_eq!(sent, objects(&["k/3"]), "only the key not handed on before");
        assert_eq!(handed_on.lock().unwrap().count, 3);

        let handed_on = Mutex::new(HandedOn {
            count: 2,
            last_key: Some("k/2".into()),
        });
        let mut differently = PageSink::new(None, &batches, &handed_on);
        let error = differently
            .objects(objects(&["k/1", "k/9"]), &query)
            .await
            .unwrap_err();
        assert!(
            error.to_string().contains("listed it differently"),
            "{error}"
        );
        let short = PageSink::new(None, &batches, &handed_on);
        let page = ListPage {
            objects: objects(&["k/1"]),
            ..ListPage::default()
        };
        assert!(short.finish(page, &query).is_err(), "the page got shorter");
    }

    #[test]
    fn only_the_first_token_goes_out_early() {
        let (batches, _received) = mpsc::channel(1);
        let (tokens, mut early) = mpsc::unbounded_channel();
        let handed_on = Mutex::new(HandedOn::default());
        let mut sink = PageSink::new(Some(&tokens), &batches, &handed_on);
        sink.token("t1");
        sink.token("t2");
        assert_eq!(early.try_recv().unwrap(), "t1");
        assert!(early.try_recv().is_err());
    }

    #[test]
    fn a_retried_page_skips_what_was_handed_on_if_it_lists_the_same() {
        let query = ListQuery {
            bucket: "b",
            prefix: "p/",
            delimiter: None,
            cursor: &Cursor::Start,
            max_keys: 1000,
        };
        let objects = |keys: &[&str]| -> Vec<ObjectEntry> {
            keys.iter()
                .map(|key| ObjectEntry {
                    key: (*key).to_owned(),
                    size: 1,
                    etag: None,
                    last_modified: None,
                    storage_class: None,
                })
                .collect()
        };
        let handed_on = HandedOn {
            count: 3,
            last_key: Some("p/c".to_owned()),
        };
        // Skipping may span batches.
        let mut repeat = handed_on.clone();
        let (mut first, mut second) = (objects(&["p/a", "p/b"]), objects(&["p/c", "p/d"]));
        repeat.skip(&mut first, &query).unwrap();
        repeat.skip(&mut second, &query).unwrap();
        assert!(first.is_empty());
        assert_eq!(second, objects(&["p/d"]));
        let mut changed = objects(&["p/a", "p/b", "p/x", "p/y"]);
        let differs = handed_on.clone().skip(&mut changed, &query).unwrap_err();
        assert!(matches!(differs, Error::BadListing { .. }), "{differs}");
    }
}
