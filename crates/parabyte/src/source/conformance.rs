//! One set of store tests for every implementation of [`Store`]: the in-memory fake, S3
//! servers (versitygw, MinIO, SeaweedFS) and a local directory. Each case states
//! what S3 does, so the fake cannot drift from the real stores unnoticed. The store must hold
//! [`FIXTURE`] under `prefix` in `bucket`.

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use futures::TryStreamExt;
use tokio::sync::mpsc;

use crate::error::{Error, Result};
use crate::location::{ObjectUrl, S3Url};
use crate::ranges::ByteRange;
use crate::source::listing::page::{Cursor, HandedOn, ListPage, ListQuery, PageSink};
use crate::source::store::{Shape, Store};
use crate::validator::Validator;

/// The objects a store under test holds below its prefix: key below the prefix, and size.
/// Their bytes are [`fixture_bytes`].
pub const FIXTURE: [(&str, usize); 5] = [
    ("a.bin", 3000),
    ("dir/b.bin", 10),
    ("dir/c.bin", 20),
    ("empty", 0),
    ("z.bin", 1),
];

/// The bytes of the fixture object `key`.
pub fn fixture_bytes(key: &str, size: usize) -> Vec<u8> {
    key.bytes()
        .cycle()
        .zip(0u8..=250)
        .map(|(a, b)| a ^ b)
        .cycle()
        .take(size)
        .collect()
}

/// Runs every case against `store`; the names of the cases that passed, or the first
/// failure, named.
pub(crate) async fn check_store<S: Store>(
    store: &Arc<S>,
    bucket: &str,
    prefix: &str,
    object: fn(bucket: &str, key: &str) -> S::Object,
) -> std::result::Result<Vec<&'static str>, String> {
    let suite = Suite {
        store: store.as_ref(),
        bucket,
        prefix,
        object,
    };
    let mut passed = Vec::new();
    macro_rules! case {
        ($name:ident) => {
            suite
                .$name()
                .await
                .map_err(|why| format!("{}: {}: {why}", store.name(), stringify!($name)))?;
            passed.push(stringify!($name));
        };
    }
    case!(a_whole_object_comes_with_its_length_and_version);
    case!(a_range_comes_as_that_part_of_the_total);
    case!(a_range_past_the_end_is_cut_at_the_end);
    case!(a_range_of_an_empty_object_is_empty);
    case!(a_pin_to_another_version_is_refused_as_a_change);
    case!(a_missing_key_is_not_found);
    case!(describe_pinned_to_the_version_answers);
    case!(a_recursive_page_lists_every_key_in_order);
    case!(a_delimiter_rolls_keys_into_folders);
    case!(pages_continue_where_their_token_says);
    case!(start_after_skips_the_keys_up_to_it);
    case!(an_empty_prefix_lists_nothing);
    Ok(passed)
}

struct Suite<'a, S: Store> {
    store: &'a S,
    bucket: &'a str,
    prefix: &'a str,
    /// How the store names the object of a key in a bucket.
    object: fn(&str, &str) -> S::Object,
}

/// How S3 stores (and the in-memory one) name an object.
pub(crate) fn s3_object(bucket: &str, key: &str) -> ObjectUrl {
    ObjectUrl::S3(S3Url {
        bucket: bucket.to_owned(),
        key: key.to_owned(),
    })
}

type Outcome = std::result::Result<(), String>;

fn expect(condition: bool, why: impl FnOnce() -> String) -> Outcome {
    if condition {
        Ok(())
    } else {
        Err(why())
    }
}

impl<S: Store> Suite<'_, S> {
    fn url(&self, key: &str) -> S::Object {
        (self.object)(self.bucket, &format!("{}{key}", self.prefix))
    }

    /// GET and read the whole body.
    async fn get(
        &self,
        key: &str,
        range: Option<ByteRange>,
        pinned: Option<&Validator>,
    ) -> Result<(Shape, Option<Validator>, Bytes)> {
        let fetched = self.store.get(&self.url(key), range, pinned).await?;
        let chunks: Vec<Bytes> = fetched.body.try_collect().await?;
        Ok((fetched.shape, fetched.validator, chunks.concat().into()))
    }

    async fn a_whole_object_comes_with_its_length_and_version(&self) -> Outcome {
        let (shape, validator, body) = self.get("a.bin", None, None).await.map_err(show)?;
        expect(shape == Shape::Whole { length: Some(3000) }, || {
            format!("{shape:?}")
        })?;
        expect(body == fixture_bytes("a.bin", 3000), || {
            "other bytes".into()
        })?;
        expect(validator.is_some(), || "no ETag".into())
    }

    async fn a_range_comes_as_that_part_of_the_total(&self) -> Outcome {
        let range = ByteRange {
            start: 100,
            end: 199,
        };
        let (shape, _, body) = self.get("a.bin", Some(range), None).await.map_err(show)?;
        expect(shape == Shape::Partial { range, total: 3000 }, || {
            format!("{shape:?}")
        })?;
        expect(body[..] == fixture_bytes("a.bin", 3000)[100..200], || {
            "other bytes".into()
        })
    }

    async fn a_range_past_the_end_is_cut_at_the_end(&self) -> Outcome {
        let range = ByteRange {
            start: 2990,
            end: 9999,
        };
        let (shape, _, body) = self.get("a.bin", Some(range), None).await.map_err(show)?;
        let served = ByteRange {
            start: 2990,
            end: 2999,
        };
        expect(
            shape
                == Shape::Partial {
                    range: served,
                    total: 3000,
                },
            || format!("{shape:?}"),
        )?;
        expect(body.len() == 10, || format!("{} bytes", body.len()))
    }

    async fn a_range_of_an_empty_object_is_empty(&self) -> Outcome {
        let range = ByteRange { start: 0, end: 99 };
        let (shape, _, body) = self.get("empty", Some(range), None).await.map_err(show)?;
        // S3 answers 416, some stores a 200 with no body: both are an empty object, and
        // the 416's error document is never taken for its bytes.
        let empty = matches!(shape, Shape::Empty | Shape::Whole { length: Some(0) });
        expect(empty && body.is_empty(), || {
            format!("{shape:?} with {} bytes", body.len())
        })
    }

    async fn a_pin_to_another_version_is_refused_as_a_change(&self) -> Outcome {
        let other = Validator::ETag("\"0123456789abcdef0123456789abcdef\"".into());
        let range = Some(ByteRange { start: 0, end: 9 });
        match self.get("a.bin", range, Some(&other)).await {
            Err(Error::Changed { .. }) => Ok(()),
            other => Err(format!("{:?}", other.map(|(shape, ..)| shape))),
        }
    }

    async fn a_missing_key_is_not_found(&self) -> Outcome {
        match self.get("no-such-key", None, None).await {
            Err(error) if error.is_not_found() => Ok(()),
            other => Err(format!("{:?}", other.map(|(shape, ..)| shape))),
        }
    }

    async fn describe_pinned_to_the_version_answers(&self) -> Outcome {
        let (_, validator, _) = self.get("a.bin", None, None).await.map_err(show)?;
        let validator = validator.ok_or("no ETag")?;
        self.store
            .describe(&self.url("a.bin"), Some(&validator), None)
            .await
            .map_err(show)?;
        let other = Validator::ETag("\"0123456789abcdef0123456789abcdef\"".into());
        match self
            .store
            .describe(&self.url("a.bin"), Some(&other), None)
            .await
        {
            Err(Error::Changed { .. }) => Ok(()),
            other => Err(format!("pinned to another version: {other:?}")),
        }
    }

    /// Every entry of one page: objects as they streamed, then the rest.
    async fn page(
        &self,
        delimiter: Option<&str>,
        cursor: Cursor,
        max_keys: usize,
    ) -> Result<ListPage> {
        let query = ListQuery {
            bucket: self.bucket,
            prefix: self.prefix,
            delimiter,
            cursor: &cursor,
            max_keys,
        };
        let (batches, mut received) = mpsc::channel(64);
        let handed_on = Mutex::new(HandedOn::default());
        let mut page = self
            .store
            .list_page(&query, PageSink::new(None, &batches, &handed_on))
            .await?;
        drop(batches);
        let mut streamed = Vec::new();
        while let Some(batch) = received.recv().await {
            streamed.extend(batch);
        }
        streamed.append(&mut page.objects);
        page.objects = streamed;
        Ok(page)
    }

    fn keys(&self, page: &ListPage) -> Vec<String> {
        page.objects
            .iter()
            .map(|object| object.key[self.prefix.len()..].to_owned())
            .collect()
    }

    async fn a_recursive_page_lists_every_key_in_order(&self) -> Outcome {
        let page = self.page(None, Cursor::Start, 1000).await.map_err(show)?;
        let all: Vec<String> = FIXTURE.iter().map(|(key, _)| (*key).to_owned()).collect();
        expect(self.keys(&page) == all, || {
            format!("{:?}", self.keys(&page))
        })?;
        let sizes: Vec<u64> = page.objects.iter().map(|object| object.size).collect();
        let fixture: Vec<u64> = FIXTURE.iter().map(|(_, size)| *size as u64).collect();
        expect(sizes == fixture, || format!("sizes {sizes:?}"))?;
        expect(!page.is_truncated && page.next_token.is_none(), || {
            "a last page that says more follow".into()
        })
    }

    async fn a_delimiter_rolls_keys_into_folders(&self) -> Outcome {
        let page = self
            .page(Some("/"), Cursor::Start, 1000)
            .await
            .map_err(show)?;
        let folders = vec![format!("{}dir/", self.prefix)];
        expect(page.common_prefixes == folders, || {
            format!("{:?}", page.common_prefixes)
        })?;
        let keys = self.keys(&page);
        expect(keys == ["a.bin", "empty", "z.bin"], || format!("{keys:?}"))
    }

    async fn pages_continue_where_their_token_says(&self) -> Outcome {
        let mut keys = Vec::new();
        let mut cursor = Cursor::Start;
        for _ in 0..FIXTURE.len() + 1 {
            let page = self.page(None, cursor, 2).await.map_err(show)?;
            expect(page.objects.len() <= 2, || "more than max-keys".into())?;
            keys.extend(self.keys(&page));
            match page.next_token {
                Some(token) => cursor = Cursor::Token(token),
                None => break,
            }
        }
        let all: Vec<String> = FIXTURE.iter().map(|(key, _)| (*key).to_owned()).collect();
        expect(keys == all, || format!("{keys:?}"))
    }

    async fn start_after_skips_the_keys_up_to_it(&self) -> Outcome {
        let after = Cursor::After(format!("{}dir/b.bin", self.prefix));
        let page = self.page(None, after, 1000).await.map_err(show)?;
        let keys = self.keys(&page);
        expect(keys == ["dir/c.bin", "empty", "z.bin"], || {
            format!("{keys:?}")
        })
    }

    async fn an_empty_prefix_lists_nothing(&self) -> Outcome {
        let query_prefix = format!("{}nothing-here/", self.prefix);
        let suite = Suite {
            store: self.store,
            bucket: self.bucket,
            prefix: &query_prefix,
            object: self.object,
        };
        let page = suite.page(None, Cursor::Start, 1000).await.map_err(show)?;
        expect(
            page.objects.is_empty() && page.common_prefixes.is_empty(),
            || format!("{:?}", page.objects),
        )
    }
}

fn show(error: Error) -> String {
    error.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::local::LocalStore;
    use crate::source::memory::MemoryStore;

    #[tokio::test]
    async fn the_in_memory_store_behaves_as_s3_does() {
        let store = Arc::new(MemoryStore::new());
        for (i, (key, size)) in FIXTURE.iter().enumerate() {
            let url = format!("s3://b/p/{key}");
            store.put(&url, &fixture_bytes(key, *size), Some(&format!("\"e{i}\"")));
        }
        let passed = check_store(&store, "b", "p/", s3_object).await.unwrap();
        assert_eq!(passed.len(), 12);
    }

    #[tokio::test]
    async fn a_local_directory_behaves_as_s3_does() {
        let root = tempfile::tempdir().unwrap();
        for (key, size) in FIXTURE {
            let path = root.path().join("p").join(key);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, fixture_bytes(key, size)).unwrap();
        }
        let store = Arc::new(LocalStore::new(root.path()));
        let passed = check_store(&store, "", "p/", |_, key| key.to_owned()).await;
        assert_eq!(passed.unwrap().len(), 12);
    }
}
