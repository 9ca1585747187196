//! The walk's order and window, and reads pinned to a file's version.

use std::collections::BTreeSet;
use std::fs;

use futures::TryStreamExt;
use proptest::prelude::*;

use super::walk::{walk, walk_holding};
use super::*;
use crate::source::listing::page::HandedOn;

/// Every file the walk visits in `window`, by key.
fn walked(root: &Path, window: Window<'_>) -> Vec<String> {
    let mut keys = Vec::new();
    walk(root, window, |walked| {
        if let Kind::File(_) = walked.kind {
            keys.push(walked.relative.to_str().unwrap().to_owned());
        }
        Next::Continue
    });
    keys
}

/// Every entry the walk visits, by key, holding at most `held` bytes of a folder at once.
fn walked_holding(root: &Path, window: Window<'_>, held: usize) -> Vec<String> {
    let mut keys = Vec::new();
    walk_holding(root, window, held, |walked| {
        keys.push(walked.relative.to_str().unwrap().to_owned());
        Next::Continue
    });
    keys
}

fn plant(root: &Path, keys: &BTreeSet<String>) {
    for key in keys {
        let path = root.join(key);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, key.as_bytes()).unwrap();
    }
}

/// Keys of one to three parts from an alphabet where `-`, `.` and `0` sort around `/`.
fn keys() -> impl Strategy<Value = BTreeSet<String>> {
    let part = "[a-c.0-][a-c.0-]?";
    let key = prop::collection::vec(part, 1..=3).prop_map(|parts| parts.join("/"));
    prop::collection::btree_set(key, 1..24)
        .prop_map(|keys| {
            // A name cannot be both a file and a folder: keep the first of each clash.
            let mut kept = BTreeSet::new();
            for key in keys {
                let clashes = kept.iter().any(|other: &String| {
                    key.starts_with(&format!("{other}/")) || other.starts_with(&format!("{key}/"))
                });
                let dot_part = key.split('/').any(|part| part == "." || part == "..");
                if !clashes && !dot_part {
                    kept.insert(key);
                }
            }
            kept
        })
        .prop_filter("at least one key", |keys| !keys.is_empty())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// The walk visits files in the byte order of their keys, as S3 lists them, and a
    /// window keeps exactly the keys after its cursor under its prefix.
    #[test]
    fn the_walk_lists_in_key_order_and_its_window_keeps_what_it_says(
        keys in keys(),
        cut in any::<prop::sample::Index>(),
    ) {
        let root = tempfile::tempdir().unwrap();
        plant(root.path(), &keys);
        let all: Vec<String> = keys.iter().cloned().collect();
        prop_assert_eq!(walked(root.path(), Window::default()), all.clone());

        let after = all[cut.index(all.len())].clone();
        let prefix = &after[..1];
        let window = Window { prefix: prefix.as_bytes(), after: Some(after.as_bytes()), ..Window::default() };
        let expected: Vec<String> = all
            .iter()
            .filter(|key| key.starts_with(prefix) && **key > after)
            .cloned()
            .collect();
        prop_assert_eq!(walked(root.path(), window), expected);
    }

    /// One range of the key space (a task's share of a sync spread over a cluster): the
    /// walk gives exactly the keys after the lower boundary and up to the upper, whatever
    /// the boundaries are (keys of the tree, or guesses between them).
    #[test]
    fn a_window_of_two_boundaries_walks_exactly_its_range(
        keys in keys(),
        low in "[a-c.0/-]{0,4}",
        high in "[a-c.0/-]{0,4}",
    ) {
        let root = tempfile::tempdir().unwrap();
        plant(root.path(), &keys);
        let (low, high) = if low <= high { (low, high) } else { (high, low) };
        let window = Window {
            after: Some(low.as_bytes()),
            until_after: Some(high.as_bytes()),
            ..Window::default()
        };
        let expected: Vec<String> = keys
            .iter()
            .filter(|key| **key > low && **key <= high)
            .cloned()
            .collect();
        prop_assert_eq!(walked(root.path(), window), expected);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// A folder of more entries than the walk sorts at once is read in passes: the walk
    /// visits the same entries in the same order as one read, none twice, none missed.
    #[test]
    fn a_folder_read_in_passes_is_walked_as_if_read_at_once(
        keys in keys(),
        flat in prop::collection::btree_set("[a-c.0-]{1,3}", 0..40),
        held in 1usize..80,
        cut in any::<prop::sample::Index>(),
    ) {
        let root = tempfile::tempdir().unwrap();
        plant(root.path(), &keys);
        let flat: BTreeSet<String> = flat
            .into_iter()
            .filter(|name| name != "." && name != "..")
            .map(|name| format!("many/{name}"))
            .collect();
        plant(root.path(), &flat);
        let at_once = walked_holding(root.path(), Window::default(), usize::MAX / 2);
        prop_assert_eq!(walked_holding(root.path(), Window::default(), held), at_once.clone());

        let after = at_once[cut.index(at_once.len())].clone();
        let window = Window { after: Some(after.as_bytes()), ..Window::default() };
        prop_assert_eq!(
            walked_holding(root.path(), window, held),
            walked_holding(root.path(), window, usize::MAX / 2)
        );
    }
}

#[test]
fn entries_added_and_removed_between_a_folders_passes_are_walked_as_in_one_read() {
    // 44 bytes hold four of these names (3 bytes and 8 each); at four, the walk keeps
    // three: three a pass, read again after `f02`, `f05`, ... While `f05` is visited:
    // `f01a` comes below where the passes are (missed, as a file made after one read
    // is), `f17a` above (walked), `f12` is removed before its pass reads it (not walked).
    let root = tempfile::tempdir().unwrap();
    let names: BTreeSet<String> = (0..20).map(|n| format!("f{n:02}")).collect();
    plant(root.path(), &names);
    let mut seen = Vec::new();
    walk_holding(root.path(), Window::default(), 44, |walked| {
        let key = walked.relative.to_str().unwrap().to_owned();
        if key == "f05" {
            plant(root.path(), &["f01a".to_owned(), "f17a".to_owned()].into());
            fs::remove_file(root.path().join("f12")).unwrap();
        }
        seen.push(key);
        Next::Continue
    });
    let mut expected: Vec<String> = names.into_iter().filter(|name| name != "f12").collect();
    expected.insert(
        expected.iter().position(|name| name == "f18").unwrap(),
        "f17a".into(),
    );
    assert_eq!(seen, expected);
}

#[tokio::test]
async fn links_fifos_and_folders_named_like_keys_are_never_objects() {
    let root = tempfile::tempdir().unwrap();
    plant(root.path(), &["a-b".to_owned(), "a/b".to_owned()].into());
    std::os::unix::fs::symlink(root.path().join("a-b"), root.path().join("link")).unwrap();
    rustix::fs::mknodat(
        rustix::fs::CWD,
        root.path().join("fifo"),
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR,
        0,
    )
    .unwrap();
    let store = LocalStore::new(root.path());
    let (batches, _) = tokio::sync::mpsc::channel(1);
    let handed_on = std::sync::Mutex::new(HandedOn::default());
    let query = ListQuery {
        bucket: "",
        prefix: "",
        delimiter: None,
        cursor: &Cursor::Start,
        max_keys: 1000,
    };
    let page = store
        .list_page(&query, PageSink::new(None, &batches, &handed_on))
        .await
        .unwrap();
    let keys: Vec<&str> = page.objects.iter().map(|o| o.key.as_str()).collect();
    assert_eq!(keys, ["a-b", "a/b"], "'-' sorts before '/', as in S3");
    for key in ["link", "fifo", "a", "../a-b"] {
        let error = store.get(&key.to_owned(), None, None).await.err().unwrap();
        assert!(error.is_not_found(), "{key}: {error}");
    }
}

#[tokio::test]
async fn a_file_written_after_its_first_read_is_another_version() {
    let root = tempfile::tempdir().unwrap();
    fs::write(root.path().join("f"), b"first").unwrap();
    let store = LocalStore::new(root.path());
    let key = "f".to_owned();
    let first = store.get(&key, None, None).await.unwrap();
    let version = first.validator.unwrap();
    let bytes: Vec<Bytes> = first.body.try_collect().await.unwrap();
    assert_eq!(bytes.concat(), b"first");
    fs::write(root.path().join("f"), b"second!").unwrap();
    let again = store.get(&key, None, Some(&version)).await;
    assert!(
        matches!(again, Err(Error::Changed { .. })),
        "{:?}",
        again.err()
    );
}

fn tag(kind: &Kind) -> &'static str {
    match kind {
        Kind::File(_) => "F",
        Kind::Directory => "D",
        Kind::Other(_) => "O",
        Kind::Unreadable(_) => "U",
    }
}

/// Every entry the walk visits, by key, as `F` (a file), `D` (a folder), `O` (anything
/// else) or `U` (unreadable),
/// doing `meanwhile` after the first.
fn visited(root: &Path, mut meanwhile: impl FnMut()) -> Vec<String> {
    let mut seen = Vec::new();
    walk(root, Window::default(), |walked| {
        seen.push(format!(
            "{} {}",
            tag(&walked.kind),
            walked.relative.display()
        ));
        if seen.len() == 1 {
            meanwhile();
        }
        Next::Continue
    });
    seen
}

#[test]
fn a_sibling_removed_while_its_folder_is_walked_is_no_entry_and_no_failure() {
    let root = tempfile::tempdir().unwrap();
    plant(
        root.path(),
        &["a".to_owned(), "b".to_owned(), "c".to_owned()].into(),
    );
    let seen = visited(root.path(), || {
        fs::remove_file(root.path().join("b")).unwrap()
    });
    assert_eq!(seen, ["F a", "F c"]);
}

#[test]
fn a_file_turned_into_a_folder_while_its_folder_is_walked_is_reported_not_misplaced() {
    // `b` was read as a file and sorted before `b-x`; as a folder its keys (`b/...`) would
    // sort after `b-x` and come out of key order.
    let root = tempfile::tempdir().unwrap();
    plant(
        root.path(),
        &["a".to_owned(), "b".to_owned(), "b-x".to_owned()].into(),
    );
    let seen = visited(root.path(), || {
        fs::remove_file(root.path().join("b")).unwrap();
        plant(root.path(), &["b/y".to_owned()].into());
    });
    assert_eq!(seen, ["F a", "U b", "F b-x"]);
}

#[test]
fn a_folder_swapped_for_a_link_before_it_is_entered_is_refused_not_followed() {
    // Between the `stat` that found `d` a folder and the walk going into it, `d` becomes a
    // link to a folder outside the tree: nothing out there is listed (a sync's `--delete`
    // would act on what it lists).
    let root = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    plant(root.path(), &["a".to_owned(), "d/x".to_owned()].into());
    plant(outside.path(), &["secret".to_owned()].into());
    let mut seen = Vec::new();
    walk(root.path(), Window::default(), |walked| {
        let path = walked.relative.display().to_string();
        if matches!(walked.kind, Kind::Directory) && path == "d" {
            fs::rename(root.path().join("d"), root.path().join("moved")).unwrap();
            std::os::unix::fs::symlink(outside.path(), root.path().join("d")).unwrap();
        }
        seen.push(format!("{} {path}", tag(&walked.kind)));
        Next::Continue
    });
    assert_eq!(seen, ["F a", "D d", "U d"]);
}
