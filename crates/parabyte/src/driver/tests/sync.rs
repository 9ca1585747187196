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
        .sync(&request, options, None, Arc::new(Recorded::default()))
        .await
}

/// Neighbours a wrong prefix would reach: a sibling with the same start, and another tree.
const NEIGHBOURS: [&str; 3] = ["s3://b/dst-x/a", "s3://b/dsta", "s3://b/other/a"];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(property_cases(48)))]

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
            ..SyncOptions::default()
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
        .sync(&request, &options, None, Arc::new(Recorded::default()))
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
        .sync(&request, &options, None, Arc::new(Recorded::default()))
        .await
        .unwrap();
    assert_eq!((summary.objects, summary.failed), (2, 0));
    assert!(store.data_of("s3://b/dst/b/c").is_some());
    // Any other wildcard is a pattern, which sync does not take.
    let pattern = CopyRequest::parse("s3://b/src/*.log", to(), false).unwrap();
    let refused = driver
        .sync(&pattern, &options, None, Arc::new(Recorded::default()))
        .await;
    assert!(matches!(refused, Err(Error::InvalidInput(message)) if message.contains("--exclude")));
}

/// What a source tree may hold besides its files: entries the walk refuses.
#[derive(Debug, Clone, Copy)]
enum Hazard {
    /// A link to a directory holding a file.
    DirectoryLink,
    /// A link to a file.
    FileLink,
    /// A named pipe.
    Fifo,
}

/// Files `d?/f?` and hazards `d?/h?`: a file name never doubles as a folder's.
const FILE: &str = "(d[ab]/)?f[ab]";
const HAZARD_AT: &str = "(d[ab]/)?h[ab]";

fn hazard() -> impl Strategy<Value = Hazard> {
    prop_oneof![
        Just(Hazard::DirectoryLink),
        Just(Hazard::FileLink),
        Just(Hazard::Fifo)
    ]
}

/// Plant `hazard` at `root/relative`, its target outside `root`.
fn plant(root: &Path, outside: &Path, relative: &str, hazard: Hazard) {
    let path = root.join(relative);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    match hazard {
        Hazard::DirectoryLink => {
            std::fs::create_dir_all(outside.join("dir")).unwrap();
            std::fs::write(outside.join("dir/fa"), b"outside").unwrap();
            std::os::unix::fs::symlink(outside.join("dir"), &path).unwrap();
        }
        Hazard::FileLink => {
            std::fs::write(outside.join("file"), b"outside").unwrap();
            std::os::unix::fs::symlink(outside.join("file"), &path).unwrap();
        }
        Hazard::Fifo => rustix::fs::mkfifoat(
            rustix::fs::CWD,
            &path,
            rustix::fs::Mode::from_raw_mode(0o600),
        )
        .unwrap(),
    }
}

/// What the delete rule allows: with any refusal nothing, with an empty source nothing,
/// else exactly what only the destination holds, but for what lies at or below a name the
/// source passed over (a link, not followed).
fn expected_deletes(
    source: &BTreeMap<String, usize>,
    dest: &BTreeMap<String, usize>,
    refused: bool,
    passed_over: &[&String],
) -> Vec<String> {
    if refused || source.is_empty() {
        return Vec::new();
    }
    let unread = |key: &str| {
        passed_over.iter().any(|name| {
            key.strip_prefix(name.as_str())
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
        })
    };
    dest.keys()
        .filter(|key| !source.contains_key(*key) && !unread(key))
        .cloned()
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(property_cases(32)))]

    /// Local to S3: a FIFO anywhere in the source (refused) or an empty source deletes
    /// nothing at all; a link (passed over, not followed) keeps what lies at and below its
    /// name at the destination, and the rest of the difference goes.
    #[test]
    fn a_sync_up_deletes_only_what_a_source_read_whole_lacks(
        source in prop::collection::btree_map(FILE, 0usize..3, 0..5),
        hazards in prop::collection::btree_map(HAZARD_AT, hazard(), 0..2),
        dest in prop::collection::btree_map(FILE, 0usize..3, 0..5),
    ) {
        let runtime = two_thread_runtime();
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("src");
        std::fs::create_dir_all(&root).unwrap();
        for (relative, size) in &source {
            let path = root.join(relative);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, content(relative, *size)).unwrap();
        }
        for (relative, hazard) in &hazards {
            plant(&root, dir.path(), relative, *hazard);
        }
        let store = Arc::new(MemoryStore::new());
        let mut dest = dest;
        for relative in hazards.keys() {
            // What a refused entry would hold at the destination: its key and keys below it.
            dest.insert(relative.clone(), 1);
            dest.insert(format!("{relative}/fa"), 1);
        }
        for (key, size) in &dest {
            store.put(&format!("s3://b/dst/{key}"), &content("old", *size), None);
        }
        let driver = Driver::new(store.clone(), transfer(), Arc::new(Counters::default()));
        let to = Destination::Store(S3Url::parse("s3://b/dst/").unwrap());
        let request = CopyRequest::parse(root.to_str().unwrap(), to, false).unwrap();
        let options = SyncOptions { delete: true, ..SyncOptions::default() };
        let summary = runtime
            .block_on(driver.sync(&request, &options, None, Arc::new(Recorded::default())))
            .unwrap();
        let refused = hazards.values().any(|hazard| matches!(hazard, Hazard::Fifo));
        let links: Vec<&String> = hazards
            .iter()
            .filter(|(_, hazard)| !matches!(hazard, Hazard::Fifo))
            .map(|(name, _)| name)
            .collect();
        let expected = expected_deletes(&source, &dest, refused, &links);
        prop_assert_eq!(summary.deleted, expected.len() as u64, "{:?}", summary.failures);
        for key in dest.keys() {
            let held = store.data_of(&format!("s3://b/dst/{key}")).is_some();
            prop_assert_eq!(held, !expected.contains(key) || source.contains_key(key), "{}", key);
        }
        prop_assert_eq!(summary.failed > 0, refused || source.is_empty(), "{:?}", summary.failures);
        if refused || source.is_empty() {
            prop_assert!(store.delete_requests().is_empty());
            let said = summary
                .failures
                .iter()
                .any(|failure| failure.error.to_string().contains("nothing was deleted"));
            prop_assert!(said, "{:?}", summary.failures);
        }
    }

    /// S3 to a directory: a key the destination refuses (one that climbs, one shaped like a
    /// temporary file, a key beside a "folder" of its name) or a listing that breaks off
    /// deletes no file at all.
    #[test]
    fn a_sync_down_deletes_only_what_a_source_read_whole_lacks(
        source in prop::collection::btree_map(FILE, 0usize..3, 0..5),
        unsafe_key in prop::option::of(prop_oneof![
            Just("da/../fb"), Just("da/.parabyte-x"), Just("fa/fa"), Just("db//fa")
        ]),
        broken_page in prop::option::of(1usize..=2),
        dest in prop::collection::btree_map(FILE, 0usize..3, 0..5),
    ) {
        let runtime = two_thread_runtime();
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("dst");
        std::fs::create_dir_all(&root).unwrap();
        for (relative, size) in &dest {
            let path = root.join(relative);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, content("old", *size)).unwrap();
        }
        let store = Arc::new(MemoryStore::new());
        for (key, size) in &source {
            store.put(&format!("s3://b/src/{key}"), &content(key, *size), None);
        }
        // "fa/fa" refuses only beside a key "fa": it collides with it.
        let refused = match unsafe_key {
            Some("fa/fa") => source.contains_key("fa"),
            Some(_) => true,
            None => false,
        };
        if let Some(key) = unsafe_key {
            store.put(&format!("s3://b/src/{key}"), b"unsafe", None);
        }
        if let Some(nth) = broken_page {
            store.script(When::list_nth(nth), Answer::default().no_token());
        }
        let driver = Driver::new(store.clone(), transfer(), Arc::new(Counters::default()));
        let request =
            CopyRequest::parse("s3://b/src/", Destination::Path(root.clone()), false).unwrap();
        let options = SyncOptions { delete: true, ..SyncOptions::default() };
        let summary = runtime
            .block_on(driver.sync(&request, &options, None, Arc::new(Recorded::default())))
            .unwrap();
        let broke = summary
            .failures
            .iter()
            .any(|failure| failure.source.contains("listing broke off"));
        let mut listed = source.clone();
        if unsafe_key == Some("fa/fa") && !refused {
            listed.insert("fa/fa".into(), 6);
        }
        let expected = expected_deletes(&listed, &dest, refused || broke, &[]);
        prop_assert_eq!(summary.deleted, expected.len() as u64, "{:?}", summary.failures);
        for key in dest.keys() {
            // A file that went may leave a folder of its name, made by a key below it.
            let gone = !root.join(key).is_file();
            prop_assert_eq!(gone, expected.contains(key), "{}", key);
        }
    }
}

#[tokio::test]
async fn an_empty_source_deletes_only_when_asked_to() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_with(&["dst/a", "dst/b"]);
    let driver = Driver::new(store.clone(), transfer(), Arc::new(Counters::default()));
    let to = || Destination::Store(S3Url::parse("s3://b/dst/").unwrap());
    let request = CopyRequest::parse(dir.path().to_str().unwrap(), to(), false).unwrap();
    let mut options = SyncOptions {
        delete: true,
        ..SyncOptions::default()
    };
    let summary = driver
        .sync(&request, &options, None, Arc::new(Recorded::default()))
        .await
        .unwrap();
    assert!(store.delete_requests().is_empty());
    assert!(summary.failures[0]
        .error
        .to_string()
        .contains("--delete-if-source-empty"));
    options.delete_if_source_empty = true;
    let summary = driver
        .sync(&request, &options, None, Arc::new(Recorded::default()))
        .await
        .unwrap();
    assert_eq!((summary.deleted, summary.failed), (2, 0));
    // An S3 prefix that lists nothing, asked for, is no failure either.
    let store = store_with(&["dst/a"]);
    let driver = Driver::new(store.clone(), transfer(), Arc::new(Counters::default()));
    let request = CopyRequest::parse("s3://b/src/", to(), false).unwrap();
    let summary = driver
        .sync(&request, &options, None, Arc::new(Recorded::default()))
        .await
        .unwrap();
    assert_eq!((summary.deleted, summary.failed), (1, 0));
}

#[tokio::test]
async fn a_source_root_that_is_a_link_to_a_directory_is_synced_as_that_directory() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("real")).unwrap();
    std::fs::write(dir.path().join("real/a"), b"a").unwrap();
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(dir.path().join("real"), &link).unwrap();
    let store = store_with(&["dst/a", "dst/b"]);
    let driver = Driver::new(store.clone(), transfer(), Arc::new(Counters::default()));
    let to = Destination::Store(S3Url::parse("s3://b/dst/").unwrap());
    let request = CopyRequest::parse(link.to_str().unwrap(), to, false).unwrap();
    let options = SyncOptions {
        delete: true,
        ..SyncOptions::default()
    };
    let summary = driver
        .sync(&request, &options, None, Arc::new(Recorded::default()))
        .await
        .unwrap();
    assert_eq!(
        (summary.objects, summary.deleted, summary.failed),
        (1, 1, 0)
    );
    assert_eq!(store.data_of("s3://b/dst/a").as_deref(), Some(&b"a"[..]));
    assert!(store.data_of("s3://b/dst/b").is_none());
}
