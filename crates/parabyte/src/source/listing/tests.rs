//! The listing workers through the in-memory store: every key once and in order however
//! the key space is split, pages that break, stores that lie about tokens, and the parts a
//! range listing and `split_key_space` cut.

use std::collections::BTreeSet;
use std::time::Duration;

use futures::TryStreamExt;

use super::spec::{merge_in_key_order, KeyBounds};
use super::*;
use crate::error::Error;
use crate::source::memory::{Answer, MemoryStore, When};
use crate::source::web::WebSource;

fn retry(max_retries: u32) -> RetryPolicy {
    RetryPolicy {
        max_retries,
        base_delay: Duration::ZERO,
        max_delay: Duration::ZERO,
        max_elapsed: None,
    }
}

/// `count` keys under `prefix`, as sequential names in folders of 100.
fn fill(store: &MemoryStore, prefix: &str, count: usize) -> Vec<String> {
    let keys: Vec<String> = (0..count)
        .map(|i| format!("{prefix}d{:03}/k{i:06}", i / 100))
        .collect();
    for key in &keys {
        store.put(&format!("s3://b/{key}"), key.as_bytes(), Some("\"e\""));
    }
    keys
}

fn spec(prefix: &str, parallelism: usize, page_size: usize) -> ListSpec {
    ListSpec {
        bucket: "b".into(),
        prefix: prefix.into(),
        delimiter: None,
        parallelism,
        page_size,
        bounds: KeyBounds::default(),
    }
}

/// Every entry the listing gave, and the error it ended with, if any.
async fn listed(
    store: &Arc<MemoryStore>,
    spec: ListSpec,
    retries: u32,
) -> (Vec<String>, Option<Error>) {
    let pages = list(
        store.clone(),
        Arc::new(Counters::default()),
        retry(retries),
        spec,
    );
    let mut pages = std::pin::pin!(pages);
    let mut keys = Vec::new();
    loop {
        match pages.try_next().await {
            Ok(Some(page)) => keys.extend(page.iter().map(|entry| entry.key().to_owned())),
            Ok(None) => return (keys, None),
            Err(error) => return (keys, Some(error)),
        }
    }
}

#[tokio::test]
async fn a_split_listing_gives_every_key_once_in_order() {
    let store = Arc::new(MemoryStore::new());
    let keys = fill(&store, "p/", 2_000);
    let (got, error) = listed(&store, spec("p/", 8, 50), 0).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(got, keys);
    let started_after = store
        .lists()
        .iter()
        .filter(|seen| matches!(seen.cursor, Cursor::After(_)) && seen.max_keys > 1)
        .count();
    assert!(
        started_after > 0,
        "the listing never split: {:?}",
        store.lists().len()
    );
}

#[tokio::test]
async fn a_sequential_listing_asks_for_each_page_once() {
    let store = Arc::new(MemoryStore::new());
    let keys = fill(&store, "p/", 95);
    let (got, error) = listed(&store, spec("p/", 1, 10), 0).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(got, keys);
    let cursors: Vec<Cursor> = store.lists().into_iter().map(|seen| seen.cursor).collect();
    assert_eq!(cursors.len(), 10, "{cursors:?}");
    let distinct: BTreeSet<String> = cursors.iter().map(|c| format!("{c:?}")).collect();
    assert_eq!(
        distinct.len(),
        cursors.len(),
        "a page asked for twice: {cursors:?}"
    );
}

#[tokio::test]
async fn a_page_that_breaks_off_is_asked_again_and_nothing_repeats() {
    let store = Arc::new(MemoryStore::new());
    let keys = fill(&store, "p/", 60);
    store.script(When::list_nth(2), Answer::default().break_after(7));
    let (got, error) = listed(&store, spec("p/", 1, 20), 2).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(got, keys, "every key once, in order");
    assert_eq!(store.lists().len(), 4, "three pages and one retry");
}

#[tokio::test]
async fn a_page_that_keeps_breaking_fails_after_its_good_keys() {
    let store = Arc::new(MemoryStore::new());
    let keys = fill(&store, "p/", 60);
    store.script(
        When {
            nth: None,
            ..When::list_nth(1)
        },
        Answer::default().fail(|| Error::Network {
            what: "LIST".into(),
            detail: "reset".into(),
        }),
    );
    let (got, error) = listed(&store, spec("p/", 1, 20), 1).await;
    assert!(got.is_empty());
    assert!(matches!(error, Some(Error::GaveUp { .. })), "{error:?}");
    drop(keys);
}

#[tokio::test]
async fn keys_a_store_sends_out_of_order_are_each_listed_once() {
    let store = Arc::new(MemoryStore::new());
    let keys = fill(&store, "p/", 600);
    store.script(When::list_nth(3), Answer::default().reversed());
    let (got, error) = listed(&store, spec("p/", 8, 20), 0).await;
    assert!(error.is_none(), "{error:?}");
    let unique: BTreeSet<&String> = got.iter().collect();
    assert_eq!(unique.len(), got.len(), "a key listed twice");
    assert_eq!(unique.into_iter().cloned().collect::<Vec<_>>(), keys);
}

#[tokio::test]
async fn a_token_given_twice_ends_the_listing_after_its_page() {
    let store = Arc::new(MemoryStore::new());
    let keys = fill(&store, "p/", 100);
    store.script(When::list_nth(3), Answer::default().same_token());
    let (got, error) = listed(&store, spec("p/", 1, 10), 0).await;
    let Some(Error::BadListing { detail, .. }) = error else {
        panic!("{error:?}");
    };
    assert!(detail.contains("a second time"), "{detail}");
    assert_eq!(
        got,
        keys[..30],
        "the pages before it and its own keys went on"
    );
}

#[tokio::test]
async fn a_truncated_page_without_a_token_is_a_bad_listing() {
    let store = Arc::new(MemoryStore::new());
    let keys = fill(&store, "p/", 100);
    store.script(When::list_nth(2), Answer::default().no_token());
    let (got, error) = listed(&store, spec("p/", 1, 10), 0).await;
    assert!(matches!(error, Some(Error::BadListing { .. })), "{error:?}");
    assert_eq!(got, keys[..20]);
}

#[tokio::test]
async fn one_level_gives_folders_in_key_order_and_never_splits() {
    let store = Arc::new(MemoryStore::new());
    for key in ["p/a/1", "p/a/2", "p/b", "p/c/x/y", "p/d"] {
        store.put(&format!("s3://b/{key}"), b"x", Some("\"e\""));
    }
    let mut one_level = spec("p/", 8, 2);
    one_level.delimiter = Some("/".into());
    let (got, error) = listed(&store, one_level, 0).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(got, ["p/a/", "p/b", "p/c/", "p/d"]);
    assert!(store
        .lists()
        .iter()
        .all(|seen| !matches!(seen.cursor, Cursor::After(_))));
}

#[tokio::test]
async fn ranges_from_split_key_space_list_everything_once() {
    let store = Arc::new(MemoryStore::new());
    let keys = fill(&store, "p/", 3_000);
    let counters = Arc::new(Counters::default());
    let boundaries = split_key_space(store.clone(), counters, retry(0), spec("p/", 1, 100), 4)
        .await
        .unwrap();
    assert!(
        !boundaries.is_empty() && boundaries.len() <= 3,
        "{boundaries:?}"
    );
    let probes = store.lists().len();
    assert!(
        probes <= 20,
        "{probes} requests to find {} boundaries",
        boundaries.len()
    );
    let mut edges: Vec<Option<String>> = vec![None];
    edges.extend(boundaries.into_iter().map(Some));
    edges.push(None);
    let mut all = Vec::new();
    for pair in edges.windows(2) {
        let mut part = spec("p/", 4, 100);
        part.bounds = KeyBounds {
            after: pair[0].clone(),
            until_after: pair[1].clone(),
        };
        let (got, error) = listed(&store, part, 0).await;
        assert!(error.is_none(), "{error:?}");
        assert!(!got.is_empty(), "a range with no key: {pair:?}");
        all.extend(got);
    }
    assert_eq!(all, keys);
}

#[tokio::test]
async fn a_store_that_cannot_list_says_so() {
    let web = WebSource::new(
        &crate::config::StoreConfig::default(),
        Arc::new(Counters::default()),
    )
    .unwrap();
    let pages = list(
        Arc::new(web),
        Arc::new(Counters::default()),
        retry(0),
        spec("p/", 1, 10),
    );
    let error = std::pin::pin!(pages).try_next().await.unwrap_err();
    assert!(matches!(error, Error::Unsupported { .. }), "{error:?}");
    assert_eq!(
        error.to_string(),
        "a web server cannot list keys; use a store that can, or leave out what needs it"
    );
}

#[test]
fn key_bounds_must_be_under_the_prefix_and_in_order() {
    let bounds = |after: Option<&str>, until: Option<&str>| KeyBounds {
        after: after.map(str::to_owned),
        until_after: until.map(str::to_owned),
    };
    for fine in [
        bounds(None, None),
        bounds(Some("p/a"), None),
        bounds(None, Some("p/a")),
        bounds(Some("p/a"), Some("p/b")),
    ] {
        assert!(fine.check("b", "p/").is_ok(), "{fine:?}");
    }
    let outside = bounds(Some("q/a"), None).check("b", "p/").unwrap_err();
    assert!(
        outside.to_string().contains("not under s3://b/p/"),
        "{outside}"
    );
    for reversed in [
        bounds(Some("p/b"), Some("p/a")),
        bounds(Some("p/a"), Some("p/a")),
    ] {
        let error = reversed.check("b", "p/").unwrap_err();
        assert!(error.to_string().contains("empty or reversed"), "{error}");
    }
}

#[test]
fn pages_merge_objects_and_prefixes_in_order() {
    let object = |key: &str| ObjectEntry {
        key: key.into(),
        size: 0,
        etag: None,
        last_modified: None,
        storage_class: None,
    };
    let page = ListPage {
        objects: vec![object("a"), object("c"), object("e")],
        common_prefixes: vec!["b/".into(), "d/".into(), "f/".into()],
        next_token: None,
        is_truncated: false,
    };
    let keys: Vec<String> = merge_in_key_order(page)
        .iter()
        .map(|e| e.key().to_owned())
        .collect();
    assert_eq!(keys, vec!["a", "b/", "c", "d/", "e", "f/"]);
}

#[tokio::test]
async fn a_key_outside_the_prefix_ends_the_listing_after_the_good_keys() {
    let store = Arc::new(MemoryStore::new());
    let keys = fill(&store, "p/", 30);
    store.script(
        When::list_nth(2),
        Answer::default().stray_key("q/elsewhere"),
    );
    let (got, error) = listed(&store, spec("p/", 1, 10), 0).await;
    let Some(Error::BadListing { detail, .. }) = error else {
        panic!("{error:?}");
    };
    assert!(detail.contains("q/elsewhere"), "{detail}");
    assert_eq!(
        got,
        keys[..20],
        "the good keys of both pages, nothing outside"
    );
}

#[tokio::test]
async fn a_slow_consumer_holds_the_listing_back() {
    let store = Arc::new(MemoryStore::new());
    fill(&store, "p/", 1_000);
    let pages = list(
        store.clone(),
        Arc::new(Counters::default()),
        retry(0),
        spec("p/", 1, 10),
    );
    let mut pages = std::pin::pin!(pages);
    let mut read = pages.try_next().await.unwrap().unwrap().len();
    // The worker runs ahead of the reader by the room it has, then waits for it.
    for _ in 0..2_000 {
        tokio::task::yield_now().await;
    }
    let asked = store.lists().len();
    assert!(
        (2..=4).contains(&asked),
        "{asked} pages asked for while one was read"
    );
    while let Some(entries) = pages.try_next().await.unwrap() {
        read += entries.len();
    }
    assert_eq!((read, store.lists().len()), (1_000, 100));
}

/// With one spare worker slot, the part split off far ahead fills the room it may take
/// and then waits for the consumer; it must give its slot up meanwhile, so the part being
/// read can split again. Holding it, the listing stayed at two parts until the far one
/// was reached, and a million keys listed hardly faster than one page after another.
#[tokio::test]
async fn a_part_waiting_for_room_gives_its_slot_to_the_part_being_read() {
    let store = Arc::new(MemoryStore::new());
    let keys = fill(&store, "p/", 2_000);
    let pages = list(
        store.clone(),
        Arc::new(Counters::default()),
        retry(0),
        spec("p/", 2, 10),
    );
    let mut pages = std::pin::pin!(pages);
    let mut got: Vec<String> = Vec::new();
    // Read slowly: a page, then time for the workers to run as far as their room lets them.
    for _ in 0..12 {
        let page = pages.try_next().await.unwrap().unwrap();
        got.extend(page.iter().map(|entry| entry.key().to_owned()));
        for _ in 0..2_000 {
            tokio::task::yield_now().await;
        }
    }
    let parts_started = store
        .lists()
        .iter()
        .filter(|seen| matches!(seen.cursor, Cursor::After(_)) && seen.max_keys > 1)
        .count();
    assert!(
        parts_started >= 2,
        "{parts_started} part(s) split off while the first was read"
    );
    while let Some(page) = pages.try_next().await.unwrap() {
        got.extend(page.iter().map(|entry| entry.key().to_owned()));
    }
    assert!(got == keys, "{} keys of {}", got.len(), keys.len());
}

#[tokio::test]
async fn a_key_range_lists_exactly_the_keys_between_its_boundaries() {
    let store = Arc::new(MemoryStore::new());
    let keys = fill(&store, "p/", 500);
    let mut part = spec("p/", 4, 10);
    part.bounds = KeyBounds {
        after: Some("p/d001/k000150".into()),
        until_after: Some("p/d003/k000399x".into()),
    };
    let (got, error) = listed(&store, part, 0).await;
    assert!(error.is_none(), "{error:?}");
    let expected: Vec<String> = keys
        .iter()
        .filter(|key| key.as_str() > "p/d001/k000150" && key.as_str() <= "p/d003/k000399")
        .cloned()
        .collect();
    assert_eq!(got, expected);
}

#[tokio::test]
async fn folders_across_pages_come_once_each_in_order() {
    let store = Arc::new(MemoryStore::new());
    let folders: Vec<String> = (0..30).map(|i| format!("p/f{i:02}/")).collect();
    for folder in &folders {
        for file in ["a", "b", "c"] {
            store.put(&format!("s3://b/{folder}{file}"), b"x", Some("\"e\""));
        }
    }
    let mut one_level = spec("p/", 4, 4);
    one_level.delimiter = Some("/".into());
    let (got, error) = listed(&store, one_level, 0).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(got, folders);
    assert_eq!(store.lists().len(), 8, "30 folders, 4 a page");
}

#[tokio::test]
async fn split_key_space_leaves_a_small_prefix_whole() {
    let store = Arc::new(MemoryStore::new());
    fill(&store, "p/", 50);
    let counters = Arc::new(Counters::default());
    let boundaries = split_key_space(
        store.clone(),
        counters.clone(),
        retry(0),
        spec("p/", 1, 100),
        8,
    )
    .await
    .unwrap();
    assert!(boundaries.is_empty(), "{boundaries:?}");
    assert_eq!(store.lists().len(), 1, "one page showed it fits");
    let one = split_key_space(store.clone(), counters, retry(0), spec("p/", 1, 10), 1)
        .await
        .unwrap();
    assert!(one.is_empty(), "one part needs no boundary");
}

#[tokio::test]
async fn an_empty_prefix_lists_nothing_in_one_request() {
    let store = Arc::new(MemoryStore::new());
    fill(&store, "other/", 10);
    let (got, error) = listed(&store, spec("p/", 8, 10), 0).await;
    assert!(error.is_none() && got.is_empty(), "{got:?} {error:?}");
    assert_eq!(store.lists().len(), 1);
}

mod properties {
    use proptest::prelude::*;

    use super::*;

    fn listed_blocking(
        keys: &BTreeSet<String>,
        page_size: usize,
        parallelism: usize,
        broken: Option<(usize, usize)>,
    ) -> (Vec<String>, Option<Error>) {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_time()
            .build()
            .unwrap();
        runtime.block_on(async {
            let store = Arc::new(MemoryStore::new());
            for key in keys {
                store.put(&format!("s3://b/p/{key}"), b"x", Some("\"e\""));
            }
            if let Some((page, after)) = broken {
                store.script(When::list_nth(page), Answer::default().break_after(after));
            }
            listed(&store, spec("p/", parallelism, page_size), 2).await
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// However the key space is cut among workers, however small the pages, and
        /// wherever a page breaks off and is asked again, the listing is every key once,
        /// in the store's order.
        #[test]
        fn every_key_once_in_order(
            keys in prop::collection::btree_set("[a-c0-9/~é]{1,7}", 0..400),
            page_size in 1usize..12,
            parallelism in 1usize..9,
            broken in prop::option::of((1usize..30, 0usize..12)),
        ) {
            let (got, error) = listed_blocking(&keys, page_size, parallelism, broken);
            prop_assert!(error.is_none(), "{:?}", error);
            let expected: Vec<String> = keys.iter().map(|key| format!("p/{key}")).collect();
            prop_assert_eq!(got, expected);
        }

        /// A range of the key space (one task of `rm` or `mv` by ranges) gives exactly its
        /// own keys while the tasks beside it delete theirs under it: any of them, the first
        /// above its top among them, after any page of its listing.
        #[test]
        fn a_range_gives_its_own_keys_while_its_neighbours_delete_theirs(
            keys in prop::collection::btree_set("[a-c0-9/~]{1,6}", 1..300),
            low in prop::option::of("[a-c0-9/~]{0,6}"),
            high in prop::option::of("[a-c0-9/~]{0,6}"),
            deleted in prop::collection::vec(any::<bool>(), 300),
            first_above_deleted in any::<bool>(),
            after_pages in 0usize..4,
            page_size in 1usize..12,
            parallelism in 1usize..9,
        ) {
            let (low, high) = match (low, high) {
                (Some(low), Some(high)) if high < low => (Some(high), Some(low)),
                // An empty range is refused before any listing (tested elsewhere).
                (Some(low), Some(high)) if high == low => (Some(low), None),
                bounds => bounds,
            };
            let bounds = KeyBounds {
                after: low.map(|low| format!("p/{low}")),
                until_after: high.map(|high| format!("p/{high}")),
            };
            let all: Vec<String> = keys.iter().map(|key| format!("p/{key}")).collect();
            let inside = |key: &String| {
                bounds.after.as_ref().is_none_or(|after| key > after)
                    && bounds.until_after.as_ref().is_none_or(|until| key <= until)
            };
            let first_above = bounds
                .until_after
                .as_ref()
                .and_then(|until| all.iter().find(|key| *key > until).cloned());
            let neighbours: Vec<String> = all
                .iter()
                .zip(&deleted)
                .filter(|(key, delete)| !inside(key) && (**delete || (first_above_deleted && Some(*key) == first_above.as_ref())))
                .map(|(key, _)| key.clone())
                .collect();
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_time()
                .build()
                .unwrap();
            let got = runtime.block_on(async {
                let store = Arc::new(MemoryStore::new());
                for key in &all {
                    store.put(&format!("s3://b/{key}"), b"x", Some("\"e\""));
                }
                let mut part = spec("p/", parallelism, page_size);
                part.bounds = bounds.clone();
                let pages = list(store.clone(), Arc::new(Counters::default()), retry(0), part);
                let mut pages = std::pin::pin!(pages);
                let mut got = Vec::new();
                let mut seen_pages = 0;
                let mut neighbours = Some(neighbours);
                loop {
                    if seen_pages == after_pages {
                        if let Some(neighbours) = neighbours.take() {
                            assert!(store.delete_objects("b", &neighbours).await.unwrap().is_empty());
                        }
                    }
                    match pages.try_next().await.unwrap() {
                        Some(page) => got.extend(page.iter().map(|entry| entry.key().to_owned())),
                        None => break,
                    }
                    seen_pages += 1;
                }
                got
            });
            let expected: Vec<String> = all.iter().filter(|key| inside(key)).cloned().collect();
            prop_assert_eq!(got, expected);
        }
    }
}

#[tokio::test]
async fn a_range_stops_where_the_range_above_starts_after_its_first_key_is_deleted() {
    // `rm` by ranges: the task above deletes its keys while this range is listed, the
    // first of them too, which this range was to stop at.
    for parallelism in [1, 4] {
        let store = Arc::new(MemoryStore::new());
        let keys = fill(&store, "p/", 300);
        let mut part = spec("p/", parallelism, 5);
        part.bounds = KeyBounds {
            after: None,
            until_after: Some("p/d000/k000099x".into()),
        };
        let pages = list(store.clone(), Arc::new(Counters::default()), retry(0), part);
        let mut pages = std::pin::pin!(pages);
        let first = pages.try_next().await.unwrap().unwrap();
        let mut got: Vec<String> = first.iter().map(|entry| entry.key().to_owned()).collect();
        let above: Vec<String> = keys[100..150].to_vec();
        assert!(store.delete_objects("b", &above).await.unwrap().is_empty());
        while let Some(page) = pages.try_next().await.unwrap() {
            got.extend(page.iter().map(|entry| entry.key().to_owned()));
        }
        assert!(
            got == keys[..100],
            "with {parallelism} workers: {} keys, the last {:?}",
            got.len(),
            got.last()
        );
    }
}

#[tokio::test]
async fn a_page_whose_keys_above_the_range_were_deleted_since_it_was_listed_keeps_none_of_them() {
    // The store said the range above starts at `p/b0`; that key is gone, and the page
    // carries `p/c0`, deleted by the range above after the page was listed. Asked again,
    // the store has nothing above the boundary: `p/c0` is no key of this range.
    let store = Arc::new(MemoryStore::new());
    let keys: Vec<String> = (0..5).map(|i| format!("p/a{i}")).collect();
    for key in &keys {
        store.put(&format!("s3://b/{key}"), b"x", Some("\"e\""));
    }
    store.script(When::list_nth(1), Answer::default().stray_key("p/b0"));
    store.script(When::list_nth(2), Answer::default().stray_key("p/c0"));
    let mut part = spec("p/", 1, 10);
    part.bounds = KeyBounds {
        after: None,
        until_after: Some("p/a9".into()),
    };
    let (got, error) = listed(&store, part, 0).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(got, keys);
    assert_eq!(store.lists().len(), 3, "the top asked for once more");
}
