//! The in-memory store itself: honest answers as S3 gives them, and each fault of its script
//! doing what it says, so tests through it fail for the code under test, not the fake.

use futures::TryStreamExt;

use super::*;
use crate::source::listing::page::HandedOn;

const URL: &str = "s3://b/k";

fn url(text: &str) -> ObjectUrl {
    ObjectUrl::S3(crate::location::S3Url::parse(text).unwrap())
}

fn data() -> Vec<u8> {
    (0..300u32).map(|i| (i % 251) as u8).collect()
}

fn store() -> MemoryStore {
    let store = MemoryStore::new();
    store.put(URL, &data(), Some("\"v1\""));
    store
}

fn range(start: u64, end: u64) -> Option<ByteRange> {
    Some(ByteRange { start, end })
}

/// The answer's shape and whole body, or its error (a body cut short included).
async fn get(
    store: &MemoryStore,
    range: Option<ByteRange>,
    pinned: Option<&Validator>,
) -> Result<(Shape, Option<Validator>, Vec<u8>)> {
    let fetched = store.get(&url(URL), range, pinned).await?;
    let chunks: Vec<Bytes> = fetched.body.try_collect().await?;
    Ok((fetched.shape, fetched.validator, chunks.concat()))
}

#[tokio::test]
async fn a_range_is_served_as_s3_serves_it() {
    let store = store();
    let (shape, validator, body) = get(&store, range(10, 19), None).await.unwrap();
    let served = ByteRange { start: 10, end: 19 };
    assert_eq!(
        shape,
        Shape::Partial {
            range: served,
            total: 300
        }
    );
    assert_eq!(validator, Some(Validator::ETag("\"v1\"".into())));
    assert_eq!(body, data()[10..20]);
    let (whole, _, body) = get(&store, None, None).await.unwrap();
    assert_eq!(whole, Shape::Whole { length: Some(300) });
    assert_eq!(body, data());
    assert_eq!(store.seen().len(), 2);
    assert_eq!(store.got(), [URL, URL]);
}

#[tokio::test]
async fn a_pin_to_another_version_is_a_change_and_a_missing_key_not_found() {
    let store = store();
    let other = Validator::ETag("\"v0\"".into());
    let changed = get(&store, range(0, 9), Some(&other)).await.unwrap_err();
    assert!(matches!(changed, Error::Changed { .. }), "{changed}");
    let missing = store
        .get(&url("s3://b/none"), None, None)
        .await
        .err()
        .unwrap();
    assert!(missing.is_not_found(), "{missing}");
}

#[tokio::test]
async fn nth_counts_only_requests_of_its_kind_and_key() {
    let store = store();
    store.put("s3://b/other", b"x", Some("\"o\""));
    store.script(
        When::nth(2).key(URL),
        Answer::default().fail(|| Error::Http {
            what: "GET".into(),
            status: 500,
            detail: "scripted".into(),
        }),
    );
    let other = store.get(&url("s3://b/other"), None, None).await;
    assert!(other.is_ok(), "another key does not count");
    let pinned = Validator::ETag("\"v1\"".into());
    store
        .describe(&url(URL), Some(&pinned), None)
        .await
        .unwrap();
    assert!(
        get(&store, None, None).await.is_ok(),
        "the first GET of the key"
    );
    assert!(get(&store, None, None).await.is_err(), "the second");
    assert!(get(&store, None, None).await.is_ok(), "and only the second");
}

#[tokio::test]
async fn a_replaced_object_stays_replaced_and_a_cut_body_ends_in_an_error() {
    let store = store();
    store.script(
        When::nth(1),
        Answer::default().replace(b"new", Some("\"v2\"")),
    );
    store.script(When::nth(2), Answer::default().break_after(2));
    let (_, validator, body) = get(&store, None, None).await.unwrap();
    assert_eq!(
        (validator, body),
        (Some(Validator::ETag("\"v2\"".into())), b"new".to_vec())
    );
    let cut = get(&store, None, None).await.unwrap_err();
    assert!(matches!(cut, Error::Network { .. }), "{cut}");
    let (_, _, body) = get(&store, None, None).await.unwrap();
    assert_eq!(body, b"new", "the new version from then on");
}

#[tokio::test]
async fn lies_come_as_scripted() {
    let store = store();
    store.script(
        When::every(),
        Answer::default().whole().validator(None).ignore_pin(),
    );
    let other = Validator::ETag("\"v0\"".into());
    let (shape, validator, body) = get(&store, range(0, 9), Some(&other)).await.unwrap();
    assert_eq!(
        shape,
        Shape::Whole { length: Some(300) },
        "the range ignored"
    );
    assert_eq!(validator, None, "no ETag");
    assert_eq!(body.len(), 300, "the pin ignored");
}

#[tokio::test]
async fn a_head_tells_the_checksum_and_part_kept_or_the_scripted_lie() {
    let store = store();
    let crc = crate::checksum::FullChecksum {
        algorithm: crate::checksum::Crc::Crc64Nvme,
        value: 7,
    };
    let composite = StoreChecksum::Composite { crc, parts: 3 };
    store.keep_checksum(URL, composite, 100);
    let pinned = Validator::ETag("\"v1\"".into());
    let described = store
        .describe(&url(URL), Some(&pinned), Some(3))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(described.checksum, Some(composite));
    assert_eq!(
        described.part,
        Some(ByteRange {
            start: 200,
            end: 299
        })
    );
    store.script(When::head(), Answer::default().described(None, range(0, 9)));
    let lie = store
        .describe(&url(URL), Some(&pinned), Some(1))
        .await
        .unwrap()
        .unwrap();
    assert_eq!((lie.checksum, lie.part), (None, range(0, 9)));
    assert_eq!(store.heads(), [Some(3), Some(1)]);
}

/// One page, objects as they streamed then the rest, or the error it ended with.
async fn page(store: &MemoryStore, cursor: Cursor, max_keys: usize) -> Result<ListPage> {
    let query = ListQuery {
        bucket: "b",
        prefix: "p/",
        delimiter: None,
        cursor: &cursor,
        max_keys,
    };
    let (batches, mut received) = tokio::sync::mpsc::channel(64);
    let handed_on = Mutex::new(HandedOn::default());
    let result = store
        .list_page(&query, PageSink::new(None, &batches, &handed_on))
        .await;
    drop(batches);
    let mut streamed = Vec::new();
    while let Some(batch) = received.recv().await {
        streamed.extend(batch);
    }
    result.map(|mut rest| {
        streamed.append(&mut rest.objects);
        rest.objects = streamed;
        rest
    })
}

fn listed_store() -> MemoryStore {
    let store = MemoryStore::new();
    for key in ["p/a", "p/b", "p/c", "p/d", "p/e"] {
        store.put(&format!("s3://b/{key}"), b"x", Some("\"e\""));
    }
    store
}

fn keys(page: &ListPage) -> Vec<&str> {
    page.objects
        .iter()
        .map(|object| object.key.as_str())
        .collect()
}

#[tokio::test]
async fn listing_faults_break_reverse_and_repeat_as_scripted() {
    let store = listed_store();
    store.script(When::list_nth(1), Answer::default().break_after(2));
    store.script(When::list_nth(2), Answer::default().reversed());
    store.script(When::list_nth(3), Answer::default().same_token());
    store.script(When::list_nth(4), Answer::default().no_token());
    let broken = page(&store, Cursor::Start, 3).await.unwrap_err();
    assert!(matches!(broken, Error::Network { .. }), "{broken}");
    let reversed = page(&store, Cursor::Start, 3).await.unwrap();
    assert_eq!(keys(&reversed), ["p/c", "p/b", "p/a"]);
    let token = Cursor::Token("p/c".into());
    let repeated = page(&store, token.clone(), 3).await.unwrap();
    assert_eq!(repeated.next_token.as_deref(), Some("p/c"));
    let tokenless = page(&store, Cursor::Start, 3).await.unwrap();
    assert!(tokenless.is_truncated && tokenless.next_token.is_none());
    let honest = page(&store, token, 3).await.unwrap();
    assert_eq!(keys(&honest), ["p/d", "p/e"]);
    assert!(!honest.is_truncated);
    assert_eq!(store.lists().len(), 5);
}

#[tokio::test]
async fn a_range_past_the_end_is_a_change_and_a_missing_head_not_found() {
    let store = store();
    let past = get(&store, range(300, 399), None).await.unwrap_err();
    assert!(matches!(past, Error::Changed { .. }), "{past}");
    let pinned = Validator::ETag("\"v1\"".into());
    let missing = store
        .describe(&url("s3://b/none"), Some(&pinned), None)
        .await
        .unwrap_err();
    assert!(missing.is_not_found(), "{missing}");
}
