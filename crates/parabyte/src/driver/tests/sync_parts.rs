//! A sync cut into parts of its key space (a cluster's tasks), through the in-memory
//! store: whatever the boundaries, the parts send what the whole sync sends, and their
//! deletes, judged together by the one rule (`deletes_of_parts`), are exactly the whole
//! sync's; a listing broken off in any part deletes nothing in every part.

use proptest::prelude::*;

use super::*;
use crate::plan::{deletes_of_parts, SyncCompare, SyncOptions, SyncPart};
use crate::source::listing::KeyBounds;

/// Keys whose order as bytes and as paths differ (`a-b` sorts before `a/b`).
const KEY: &str = "[ab](-[ab])?(/[ab](-[ab])?){0,2}";

proptest! {
    #![proptest_config(ProptestConfig::with_cases(property_cases(48)))]

    #[test]
    fn parts_at_any_boundaries_sync_and_delete_what_the_whole_sync_does(
        source in prop::collection::btree_map(KEY, 0usize..4, 0..12),
        dest in prop::collection::btree_map(KEY, 0usize..4, 0..12),
        boundaries in prop::collection::btree_set("[ab/-]{0,4}", 0..4),
        broken_page in prop::option::of(1usize..=3),
    ) {
        let runtime = two_thread_runtime();
        let store = Arc::new(MemoryStore::new());
        for (key, size) in &source {
            store.put(&format!("s3://b/src/{key}"), &content(key, *size), None);
        }
        for (key, size) in &dest {
            store.put(&format!("s3://b/dst/{key}"), &content("old", *size), None);
        }
        if let Some(nth) = broken_page {
            store.script(When::list_nth(nth), Answer::default().no_token());
        }
        let driver = Driver::new(store.clone(), transfer(), Arc::new(Counters::default()));
        let to = Destination::Store(S3Url::parse("s3://b/dst/").unwrap());
        let request = CopyRequest::parse("s3://b/src/", to, false).unwrap();
        let options = SyncOptions {
            compare: SyncCompare::SizeOnly,
            delete: true,
            ..SyncOptions::default()
        };
        let lows: Vec<Option<String>> =
            std::iter::once(None).chain(boundaries.iter().cloned().map(Some)).collect();
        let highs: Vec<Option<String>> =
            boundaries.iter().cloned().map(Some).chain(std::iter::once(None)).collect();
        let mut verdicts = Vec::new();
        let mut sent = 0;
        let mut broke = false;
        for (after, until_after) in lows.into_iter().zip(highs) {
            let part = SyncPart::new(KeyBounds { after, until_after });
            let summary = runtime
                .block_on(driver.sync(&request, &options, Some(part.clone()), Arc::new(Recorded::default())))
                .unwrap();
            broke |= summary.failures.iter().any(|f| f.source.contains("listing broke off"));
            prop_assert!(store.delete_requests().is_empty(), "a part deleted by itself");
            sent += summary.objects;
            verdicts.push(part.verdict());
        }
        let allowed = deletes_of_parts(&verdicts, &options, "s3://b/src/", "s3://b/dst/");
        let extra: Vec<&String> = dest.keys().filter(|key| !source.contains_key(*key)).collect();
        if broke || source.is_empty() {
            // A broken part's reason is its own, even where the others hold nothing.
            let reason = allowed.clone().unwrap_err();
            prop_assert!(!broke || reason.contains("not listed to the end"), "{}", reason);
            for key in &extra {
                let url = format!("s3://b/dst/{key}");
                prop_assert!(store.data_of(&url).is_some(), "{} was deleted", url);
            }
            return Ok(());
        }
        prop_assert_eq!(allowed.clone(), Ok(extra.len() as u64));
        let names: Vec<String> = verdicts
            .into_iter()
            .flat_map(|verdict| verdict.unwrap().deletes.unwrap())
            .collect();
        let deleted = runtime
            .block_on(driver.sync_deletes(&request, names, Arc::new(Recorded::default())))
            .unwrap();
        prop_assert_eq!(deleted.deleted, extra.len() as u64);
        // Every key sent once, by the part that holds it; the destination is the source.
        let differing = source.iter().filter(|(key, size)| dest.get(*key) != Some(size)).count();
        prop_assert_eq!(sent, differing as u64);
        for (key, size) in &source {
            let held = store.data_of(&format!("s3://b/dst/{key}")).unwrap();
            let expected = match dest.get(key) == Some(size) {
                true => content("old", *size),
                false => content(key, *size),
            };
            prop_assert_eq!(held, expected, "{}", key);
        }
        for key in extra {
            prop_assert!(store.data_of(&format!("s3://b/dst/{key}")).is_none(), "{} stayed", key);
        }
    }
}
