//! `sync` through the in-memory store, S3 to S3: what it sends and deletes is exactly the
//! difference of the two trees (a listing out of key order may cost sends, never a delete),
//! and nothing is deleted after a listing broke off.

use std::collections::BTreeMap;

use proptest::prelude::*;

use super::*;
use crate::plan::{SyncCompare, SyncOptions};

/// Keys whose order as bytes and as paths differ (`a-b` sorts before `a/b`).
const KEY: &str = "[ab](-[ab])?(/[ab](-[ab])?){0,2}";

async fn sync(store: &Arc<MemoryStore>, options: &SyncOptions) -> Result<Summary> {
    let driver = Driver::new(store.clone(), transfer(), Arc::new(Counters::default()));
    let to = S3Url::parse("s3://b/dst/").unwrap();
    let request = CopyRequest::parse("s3://b/src/", Destination::Store(to), false).unwrap();
    driver
        .sync(&request, options, Arc::new(Recorded::default()))
        .await
}

/// Neighbours a wrong prefix would reach: a sibling with the same start, and another tree.
const NEIGHBOURS: [&str; 3] = ["s3://b/dst-x/a", "s3://b/dsta", "s3://b/other/a"];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn sync_sends_and_deletes_exactly_the_difference_and_nothing_after_a_broken_listing(
        source in prop::collection::btree_map(KEY, 0usize..4, 1..12),
        dest in prop::collection::btree_map(KEY, 0usize..4, 0..12),
        broken_page in prop::option::of(1usize..=2),
        reversed_page in prop::option::of(1usize..=4),
    ) {
        let source: BTreeMap<String, usize> = source;
        let dest: BTreeMap<String, usize> = dest;
        let runtime = two_thread_runtime();
        let store = Arc::new(MemoryStore::new());
        for (key, size) in &source {
            store.put(&format!("s3://b/src/{key}"), &content(key, *size), None);
        }
        // Another object's bytes of each size: only the size tells them apart.
        for (key, size) in &dest {
            store.put(&format!("s3://b/dst/{key}"), &content("old", *size), None);
        }
        for neighbour in NEIGHBOURS {
            store.put(neighbour, b"stays", None);
        }
        if let Some(nth) = broken_page {
            store.script(When::list_nth(nth), Answer::default().no_token());
        }
        // A store that lists a page out of key order (as SeaweedFS lists `a/b` before `a-b`):
        // keys may be sent again, but none the source has is deleted.
        if let Some(nth) = reversed_page {
            store.script(When::list_nth(nth), Answer::default().reversed());
        }
        let options = SyncOptions {
            compare: SyncCompare::SizeOnly,
            delete: true,
            max_delete: None,
        };
        let summary = runtime.block_on(sync(&store, &options)).unwrap();
        let broke = summary
            .failures
            .iter()
            .any(|failure| failure.source.contains("listing broke off"));
        prop_assert_eq!(broke, broken_page.is_some(), "{:?}", summary.failures);
        for neighbour in NEIGHBOURS {
            prop_assert!(store.data_of(neighbour).is_some(), "{} was deleted", neighbour);
        }
        if broke {
            prop_assert!(store.delete_requests().is_empty(), "deleted after a broken listing");
            prop_assert_eq!(summary.deleted, 0);
            for key in dest.keys().filter(|key| !source.contains_key(*key)) {
                let url = format!("s3://b/dst/{key}");
                prop_assert!(store.data_of(&url).is_some(), "{} was deleted", url);
            }
            return Ok(());
        }
        prop_assert!(summary.failures.is_empty(), "{:?}", summary.failures);
        for (key, size) in &source {
            let held = store.data_of(&format!("s3://b/dst/{key}"));
            let sent = content(key, *size);
            // Left as it was when of equal size; a listing out of order may send it again.
            let kept = (dest.get(key) == Some(size)).then(|| content("old", *size));
            let ok = match (held.as_deref(), &kept) {
                (Some(held), Some(kept)) if reversed_page.is_none() => held == &kept[..],
                (Some(held), Some(kept)) => held == &kept[..] || held == &sent[..],
                (Some(held), None) => held == &sent[..],
                (None, _) => false,
            };
            prop_assert!(ok, "{}: {:?}", key, held);
        }
        let sent = source
            .iter()
            .filter(|(key, size)| dest.get(*key) != Some(size))
            .count();
        let extra: Vec<&String> = dest.keys().filter(|key| !source.contains_key(*key)).collect();
        prop_assert_eq!(summary.objects + summary.skipped, source.len() as u64);
        if reversed_page.is_none() {
            prop_assert_eq!(summary.objects, sent as u64);
        }
        prop_assert!(summary.objects >= sent as u64);
        prop_assert_eq!(summary.deleted, extra.len() as u64);
        for key in extra {
            let url = format!("s3://b/dst/{key}");
            prop_assert!(store.data_of(&url).is_none(), "{} stayed", url);
        }
    }
}

#[tokio::test]
async fn max_delete_deletes_none_when_more_would_go() {
    let store = store_with(&["src/a", "dst/a", "dst/b", "dst/c"]);
    let options = SyncOptions {
        delete: true,
        max_delete: Some(1),
        ..SyncOptions::default()
    };
    let summary = sync(&store, &options).await.unwrap();
    assert!(store.delete_requests().is_empty());
    assert_eq!(summary.deleted, 0);
    assert!(summary.failures[0]
        .error
        .to_string()
        .contains("--max-delete 1"));
    let allowed = SyncOptions {
        max_delete: Some(2),
        ..options
    };
    let summary = sync(&store, &allowed).await.unwrap();
    assert_eq!((summary.deleted, summary.failed), (2, 0));
}

#[tokio::test]
async fn a_source_that_lists_nothing_deletes_nothing() {
    let store = store_with(&["dst/a", "dst/b"]);
    let options = SyncOptions {
        delete: true,
        ..SyncOptions::default()
    };
    let summary = sync(&store, &options).await.unwrap();
    assert!(store.delete_requests().is_empty());
    assert!(summary.failed > 0);
}

#[tokio::test]
async fn excluded_keys_are_neither_sent_nor_deleted() {
    let store = store_with(&["src/a.log", "src/b", "dst/c.log", "dst/d"]);
    let driver = Driver::new(store.clone(), transfer(), Arc::new(Counters::default()));
    let to = S3Url::parse("s3://b/dst/").unwrap();
    let mut request = CopyRequest::parse("s3://b/src/", Destination::Store(to), false).unwrap();
    request.options.filters = vec![Filter::exclude("*.log").unwrap()];
    let options = SyncOptions {
        delete: true,
        ..SyncOptions::default()
    };
    let summary = driver
        .sync(&request, &options, Arc::new(Recorded::default()))
        .await
        .unwrap();
    assert_eq!((summary.objects, summary.deleted), (1, 1));
    assert!(store.data_of("s3://b/dst/a.log").is_none(), "not sent");
    assert!(store.data_of("s3://b/dst/c.log").is_some(), "not deleted");
    assert!(store.data_of("s3://b/dst/d").is_none());
}

#[tokio::test]
async fn a_source_ending_in_a_star_is_its_prefix_as_s5cmd_users_write_it() {
    let store = store_with(&["src/a", "src/b/c"]);
    let driver = Driver::new(store.clone(), transfer(), Arc::new(Counters::default()));
    let to = || Destination::Store(S3Url::parse("s3://b/dst/").unwrap());
    let request = CopyRequest::parse("s3://b/src/*", to(), false).unwrap();
    let options = SyncOptions::default();
    let summary = driver
        .sync(&request, &options, Arc::new(Recorded::default()))
        .await
        .unwrap();
    assert_eq!((summary.objects, summary.failed), (2, 0));
    assert!(store.data_of("s3://b/dst/b/c").is_some());
    // Any other wildcard is a pattern, which sync does not take.
    let pattern = CopyRequest::parse("s3://b/src/*.log", to(), false).unwrap();
    let refused = driver
        .sync(&pattern, &options, Arc::new(Recorded::default()))
        .await;
    assert!(matches!(refused, Err(Error::InvalidInput(message)) if message.contains("--exclude")));
}
