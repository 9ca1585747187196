//! The driver through the in-memory store: what a copy of many objects fetches, writes,
//! skips, previews and reports, decided by the same code the CLI and Python run.

use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use super::*;
use crate::pattern::Filter;
use crate::plan::{CopyOptions, Destination, RemoveRequest};
use crate::property_cases::property_cases;
use crate::retry::RetryPolicy;
use crate::source::memory::{Answer, MemoryStore, When};

/// Everything a copy reported, as plain strings.
#[derive(Debug, Default)]
struct Recorded {
    previews: Mutex<Vec<String>>,
    reports: Mutex<Vec<(String, Status)>>,
}

impl Reporter for Recorded {
    fn object_reported(&self, report: &ObjectReport<'_>) {
        let entry = (report.source.to_owned(), report.status);
        self.reports.lock().unwrap().push(entry);
    }

    fn previewed(&self, preview: Preview<'_>) {
        let line = match preview {
            Preview::Copy { source, .. } => format!("copy {source}"),
            Preview::Unchanged { source, .. } => format!("unchanged {source}"),
            Preview::Excluded { source, .. } => format!("excluded {source}"),
            Preview::Delete { source } => format!("delete {source}"),
        };
        self.previews.lock().unwrap().push(line);
    }
}

fn transfer() -> TransferConfig {
    TransferConfig {
        part_size: 1024,
        list_page_size: 7,
        list_parallelism: 4,
        retry: RetryPolicy {
            max_retries: 1,
            base_delay: Duration::ZERO,
            max_delay: Duration::ZERO,
            max_elapsed: None,
        },
        ..TransferConfig::default()
    }
}

fn content(key: &str, size: usize) -> Vec<u8> {
    key.bytes().chain([b'#']).cycle().take(size).collect()
}

/// A store holding `keys` under bucket `b`, each of a size from 0 up to a few parts.
fn store_with(keys: &[&str]) -> Arc<MemoryStore> {
    let store = Arc::new(MemoryStore::new());
    let modified = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    for (i, key) in keys.iter().enumerate() {
        let url = format!("s3://b/{key}");
        let size = (i * 397) % 3000;
        store.put(&url, &content(key, size), Some(&format!("\"e{i}\"")));
        store.set_modified(&url, modified);
    }
    store
}

struct Copy {
    summary: Result<Summary>,
    recorded: Arc<Recorded>,
}

async fn copy(
    store: &Arc<MemoryStore>,
    source: &str,
    destination: &Path,
    options: CopyOptions,
) -> Copy {
    copy_with(store, source, destination, options, transfer()).await
}

async fn copy_with(
    store: &Arc<MemoryStore>,
    source: &str,
    destination: &Path,
    options: CopyOptions,
    transfer: TransferConfig,
) -> Copy {
    let driver = Driver::new(store.clone(), transfer, Arc::new(Counters::default()));
    let mut request =
        CopyRequest::parse(source, Destination::Path(destination.to_owned()), false).unwrap();
    request.options = options;
    let recorded = Arc::new(Recorded::default());
    let summary = driver.copy(&request, recorded.clone()).await;
    Copy { summary, recorded }
}

/// A runtime for a property test, which runs each case to its end itself: two threads, as
/// the machines this runs on have.
fn two_thread_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// Every file under `root`, relative, sorted.
fn files(root: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![root.to_owned()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                found.push(path.strip_prefix(root).unwrap().to_owned());
            }
        }
    }
    found.sort();
    found
}

const KEYS: [&str; 12] = [
    "p/a.json",
    "p/b.bin",
    "p/empty",
    "p/x/c.json",
    "p/x/d.bin",
    "p/x/y/e.bin",
    "p/f.json",
    "p/g.bin",
    "p/h.bin",
    "p/i.bin",
    "p/j.json",
    "p/k.bin",
];

#[tokio::test]
async fn a_prefix_lands_whole_with_no_request_beyond_its_bytes() {
    let store = store_with(&KEYS);
    let dir = tempfile::tempdir().unwrap();
    let done = copy(&store, "s3://b/p/", dir.path(), CopyOptions::default()).await;
    let summary = done.summary.unwrap();
    assert!(summary.failures.is_empty(), "{:?}", summary.failures);
    assert_eq!(summary.objects, KEYS.len() as u64);
    for (i, key) in KEYS.iter().enumerate() {
        let written = std::fs::read(dir.path().join(key.strip_prefix("p/").unwrap())).unwrap();
        assert_eq!(written, content(key, (i * 397) % 3000), "{key}");
    }
    // Sizes come from the listing: no probe, and an empty object needs no GET at all.
    let parts: usize = KEYS
        .iter()
        .enumerate()
        .map(|(i, _)| ((i * 397) % 3000).div_ceil(1024))
        .sum();
    assert!(
        store.seen().len() <= parts,
        "{} GETs for {parts} parts",
        store.seen().len()
    );
    assert!(
        !store.got().contains(&"s3://b/p/a.json".to_owned()),
        "a.json is empty"
    );
    assert!(
        store.seen().iter().all(|seen| seen.pinned.is_some()),
        "every GET pinned"
    );
}

#[tokio::test]
async fn a_second_run_skips_every_object_without_a_request() {
    let store = store_with(&KEYS);
    let dir = tempfile::tempdir().unwrap();
    copy(&store, "s3://b/p/", dir.path(), CopyOptions::default())
        .await
        .summary
        .unwrap();
    let gets = store.seen().len();
    let again = copy(&store, "s3://b/p/", dir.path(), CopyOptions::default()).await;
    let summary = again.summary.unwrap();
    assert_eq!(summary.skipped, KEYS.len() as u64);
    assert_eq!(summary.objects, 0);
    assert_eq!(store.seen().len(), gets, "no GET on the second run");
}

#[tokio::test]
async fn a_dry_run_fetches_nothing_and_previews_each_object() {
    let store = store_with(&KEYS);
    let dir = tempfile::tempdir().unwrap();
    let options = CopyOptions {
        dry_run: true,
        ..CopyOptions::default()
    };
    let done = copy(&store, "s3://b/p/", dir.path(), options).await;
    done.summary.unwrap();
    assert!(store.seen().is_empty());
    assert!(files(dir.path()).is_empty(), "a dry run writes nothing");
    let previews = done.recorded.previews.lock().unwrap().clone();
    assert_eq!(previews.len(), KEYS.len());
    assert!(previews
        .iter()
        .all(|line| line.starts_with("copy s3://b/p/")));
}

#[tokio::test]
async fn the_last_matching_filter_decides_and_a_dry_run_names_the_excluded() {
    let store = store_with(&KEYS);
    let dir = tempfile::tempdir().unwrap();
    let filters = vec![
        Filter::exclude("*").unwrap(),
        Filter::include("*.json").unwrap(),
        Filter::exclude("x/*").unwrap(),
    ];
    let options = CopyOptions {
        filters: filters.clone(),
        ..CopyOptions::default()
    };
    copy(&store, "s3://b/p/", dir.path(), options)
        .await
        .summary
        .unwrap();
    let expected: Vec<PathBuf> = ["a.json", "f.json", "j.json"]
        .iter()
        .map(PathBuf::from)
        .collect();
    assert_eq!(files(dir.path()), expected);
    let preview = CopyOptions {
        filters,
        dry_run: true,
        ..CopyOptions::default()
    };
    let done = copy(&store, "s3://b/p/", dir.path(), preview).await;
    let previews = done.recorded.previews.lock().unwrap().clone();
    let excluded = previews
        .iter()
        .filter(|line| line.starts_with("excluded"))
        .count();
    assert_eq!(excluded, KEYS.len() - 3, "{previews:?}");
}

#[tokio::test]
async fn a_wildcard_keeps_what_it_matches_below_its_literal_directory() {
    let store = store_with(&KEYS);
    let dir = tempfile::tempdir().unwrap();
    copy(
        &store,
        "s3://b/p/x/*.bin",
        dir.path(),
        CopyOptions::default(),
    )
    .await
    .summary
    .unwrap();
    let expected: Vec<PathBuf> = ["d.bin", "y/e.bin"].iter().map(PathBuf::from).collect();
    assert_eq!(files(dir.path()), expected);
    let listed: Vec<String> = store.lists().into_iter().map(|seen| seen.prefix).collect();
    assert!(listed.iter().all(|prefix| prefix == "p/x/"), "{listed:?}");
}

#[tokio::test]
async fn a_failed_object_is_reported_by_name_and_the_others_land() {
    let store = store_with(&KEYS);
    store.script(
        When::every().key("s3://b/p/g.bin"),
        Answer::default().fail(|| Error::PermissionDenied {
            what: "GET s3://b/p/g.bin".into(),
            detail: "403".into(),
            anonymous: false,
        }),
    );
    let dir = tempfile::tempdir().unwrap();
    let done = copy(&store, "s3://b/p/", dir.path(), CopyOptions::default()).await;
    let summary = done.summary.unwrap();
    assert_eq!(summary.objects, KEYS.len() as u64 - 1);
    assert_eq!(summary.failures.len(), 1);
    assert_eq!(summary.failures[0].source, "s3://b/p/g.bin");
    assert!(!dir.path().join("g.bin").exists());
    let reports = done.recorded.reports.lock().unwrap();
    assert_eq!(reports.len(), KEYS.len(), "every object reported once");
    let failed: Vec<&String> = reports
        .iter()
        .filter(|(_, status)| *status == Status::Failed)
        .map(|(source, _)| source)
        .collect();
    assert_eq!(failed, ["s3://b/p/g.bin"]);
}

#[tokio::test]
async fn a_listing_that_breaks_keeps_what_it_listed_and_names_the_rest() {
    let store = store_with(&KEYS);
    let server_error = || Error::Http {
        what: "LIST".into(),
        status: 500,
        detail: "InternalError".into(),
    };
    // The second page and its one retry fail.
    store.script(When::list_nth(2), Answer::default().fail(server_error));
    store.script(When::list_nth(3), Answer::default().fail(server_error));
    let sequential = TransferConfig {
        list_parallelism: 1,
        ..transfer()
    };
    let dir = tempfile::tempdir().unwrap();
    let done = copy_with(
        &store,
        "s3://b/p/",
        dir.path(),
        CopyOptions::default(),
        sequential,
    )
    .await;
    let summary = done.summary.unwrap();
    assert_eq!(summary.objects, 7, "the first page's keys");
    assert_eq!(files(dir.path()).len(), 7);
    let [failure] = summary.failures.as_slice() else {
        panic!("{:?}", summary.failures);
    };
    assert!(
        failure.source.starts_with("s3://b/p/ (listing stopped"),
        "{}",
        failure.source
    );
    assert!(
        matches!(failure.error, Error::GaveUp { .. }),
        "{}",
        failure.error
    );
}

#[tokio::test]
async fn nothing_matched_is_one_failure_naming_the_source() {
    let store = store_with(&KEYS);
    let dir = tempfile::tempdir().unwrap();
    let done = copy(&store, "s3://b/p/*.iso", dir.path(), CopyOptions::default()).await;
    let summary = done.summary.unwrap();
    assert_eq!(summary.failures.len(), 1);
    assert!(
        matches!(summary.failures[0].error, Error::NothingMatched { .. }),
        "{:?}",
        summary.failures
    );
    assert!(store.seen().is_empty());
}

#[tokio::test]
async fn a_key_shaped_like_a_temporary_file_is_refused_and_the_rest_land() {
    let store = store_with(&["p/.parabyte-0123.tmp", "p/ok.bin", "p/../up.bin"]);
    let dir = tempfile::tempdir().unwrap();
    let done = copy(&store, "s3://b/p/", dir.path(), CopyOptions::default()).await;
    let summary = done.summary.unwrap();
    assert_eq!(summary.objects, 1);
    let refused: Vec<&str> = summary.failures.iter().map(|f| f.source.as_str()).collect();
    assert_eq!(refused.len(), 2, "{refused:?}");
    assert!(summary
        .failures
        .iter()
        .all(|failure| matches!(failure.error, Error::UnsafeKey { .. })));
    assert_eq!(files(dir.path()), [PathBuf::from("ok.bin")]);
    assert_eq!(
        store.got(),
        ["s3://b/p/ok.bin"],
        "nothing fetched for a refused key"
    );
}

#[tokio::test]
async fn a_single_key_that_is_a_prefix_says_so() {
    let store = store_with(&KEYS);
    let dir = tempfile::tempdir().unwrap();
    let done = copy(&store, "s3://b/p/x", dir.path(), CopyOptions::default()).await;
    let summary = done.summary.unwrap();
    assert_eq!(summary.failures.len(), 1);
    assert!(
        matches!(summary.failures[0].error, Error::IsPrefix { .. }),
        "{}",
        summary.failures[0].error
    );
}

fn items(store: &Arc<MemoryStore>, keys: &[&str], known: bool) -> Vec<crate::manifest::Item> {
    keys.iter()
        .map(|key| {
            let url = format!("s3://b/{key}");
            let size = store.size_of(&url);
            crate::manifest::Item {
                source: ObjectUrl::S3(S3Url::parse(&url).unwrap()),
                destination: None,
                size: known.then_some(size),
                etag: known.then(|| store.etag_of(&url)),
            }
        })
        .collect()
}

async fn copy_items(
    store: &Arc<MemoryStore>,
    items: Vec<crate::manifest::Item>,
    destination: Destination,
) -> Result<Summary> {
    let driver = Driver::new(store.clone(), transfer(), Arc::new(Counters::default()));
    let request = CopyRequest {
        source: crate::plan::Source::Items(items),
        destination,
        recursive: false,
        options: CopyOptions::default(),
    };
    driver.copy(&request, Arc::new(Recorded::default())).await
}

#[tokio::test]
async fn known_sizes_cost_one_get_per_part_and_no_probe() {
    let store = store_with(&KEYS);
    let dir = tempfile::tempdir().unwrap();
    let keys = ["p/b.bin", "p/empty", "p/g.bin"];
    let summary = copy_items(
        &store,
        items(&store, &keys, true),
        Destination::Path(dir.path().to_owned()),
    )
    .await
    .unwrap();
    assert_eq!(summary.objects, 3);
    let parts: u64 = keys
        .iter()
        .map(|key| store.size_of(&format!("s3://b/{key}")).div_ceil(1024))
        .sum();
    let gets = store.seen().len() as u64;
    assert!(gets <= parts, "{gets} GETs for {parts} parts");
    assert!(
        store.seen().iter().all(|seen| seen.pinned.is_some()),
        "no probe"
    );
    // Unknown sizes: the first ranged GET of each is the probe, and carries no pin.
    let unknown = tempfile::tempdir().unwrap();
    let before = store.seen().len();
    copy_items(
        &store,
        items(&store, &keys, false),
        Destination::Path(unknown.path().to_owned()),
    )
    .await
    .unwrap();
    let unpinned = store.seen()[before..]
        .iter()
        .filter(|seen| seen.pinned.is_none())
        .count();
    assert_eq!(unpinned, keys.len());
}

#[tokio::test]
async fn two_items_for_one_path_are_refused_and_many_cannot_go_to_stdout() {
    let store = store_with(&KEYS);
    let dir = tempfile::tempdir().unwrap();
    let twice = items(&store, &["p/b.bin", "p/b.bin"], true);
    let summary = copy_items(&store, twice, Destination::Path(dir.path().to_owned()))
        .await
        .unwrap();
    assert_eq!((summary.objects, summary.failures.len()), (1, 1));
    assert!(summary.failures[0]
        .error
        .to_string()
        .contains("same destination"));
    let many = items(&store, &["p/b.bin", "p/g.bin"], true);
    let error = copy_items(&store, many, Destination::Stdout)
        .await
        .unwrap_err();
    assert!(matches!(error, Error::InvalidInput(_)), "{error}");
}

#[tokio::test]
async fn discarded_objects_are_fetched_and_nothing_is_written() {
    let store = store_with(&KEYS);
    let summary = copy_items(&store, items(&store, &KEYS, true), Destination::Discard)
        .await
        .unwrap();
    assert_eq!(summary.objects, KEYS.len() as u64);
    let bytes: u64 = KEYS
        .iter()
        .map(|key| store.size_of(&format!("s3://b/{key}")))
        .sum();
    assert_eq!(summary.bytes, bytes);
}

#[tokio::test]
async fn an_interrupted_object_keeps_what_it_wrote_for_the_next_run() {
    let big: Vec<u8> = (0..600_000u32).map(|i| (i % 253) as u8).collect();
    let once = TransferConfig {
        part_size: 64 * 1024,
        retry: RetryPolicy {
            max_retries: 0,
            ..transfer().retry
        },
        ..transfer()
    };
    let dir = tempfile::tempdir().unwrap();
    // The first part arrives; every other part's body breaks off.
    let breaking = Arc::new(MemoryStore::new());
    breaking.put("s3://b/p/big", &big, Some("\"v1\""));
    breaking.script(When::at(0), Answer::default());
    breaking.script(
        When {
            nth: None,
            ..When::every()
        },
        Answer::default().break_after(1000),
    );
    let broken = copy_with(
        &breaking,
        "s3://b/p/",
        dir.path(),
        CopyOptions::default(),
        once.clone(),
    )
    .await;
    assert_eq!(broken.summary.unwrap().failures.len(), 1);
    assert!(
        !dir.path().join("big").exists(),
        "no partial file under the final name"
    );
    // The next run, from an honest store, fetches only what no finished part holds.
    let honest = Arc::new(MemoryStore::new());
    honest.put("s3://b/p/big", &big, Some("\"v1\""));
    let again = copy_with(
        &honest,
        "s3://b/p/",
        dir.path(),
        CopyOptions::default(),
        once,
    )
    .await;
    assert_eq!(again.summary.unwrap().objects, 1);
    assert_eq!(std::fs::read(dir.path().join("big")).unwrap(), big);
    let fetched: u64 = honest
        .seen()
        .iter()
        .map(|seen| seen.range.map_or(600_000, |r| r.end - r.start + 1))
        .sum();
    // The part that broke first kept the 1000 bytes it wrote, recorded as they landed; no
    // other part started after it failed (the fake answers at once).
    assert_eq!(
        fetched,
        600_000 - 64 * 1024 - 1000,
        "only what the first run did not write"
    );
}

#[tokio::test]
async fn an_object_that_changes_between_parts_lands_whole_as_its_new_version() {
    let store = Arc::new(MemoryStore::new());
    let old: Vec<u8> = vec![1; 5000];
    let new: Vec<u8> = vec![2; 6000];
    store.put("s3://b/p/obj", &old, Some("\"v1\""));
    store.script(
        When::nth(2),
        Answer::default().replace(&new, Some("\"v2\"")),
    );
    let dir = tempfile::tempdir().unwrap();
    let done = copy(&store, "s3://b/p/", dir.path(), CopyOptions::default()).await;
    assert_eq!(done.summary.unwrap().objects, 1);
    assert_eq!(std::fs::read(dir.path().join("obj")).unwrap(), new);
}

#[tokio::test]
async fn a_single_object_lands_at_the_path_named_and_a_missing_one_is_reported() {
    let store = store_with(&KEYS);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("named");
    let done = copy(&store, "s3://b/p/x/d.bin", &file, CopyOptions::default()).await;
    assert_eq!(done.summary.unwrap().objects, 1);
    assert_eq!(
        std::fs::read(&file).unwrap(),
        content("p/x/d.bin", store.size_of("s3://b/p/x/d.bin") as usize)
    );
    let missing = copy(
        &store,
        "s3://b/p/none.bin",
        &dir.path().join("none"),
        CopyOptions::default(),
    )
    .await;
    let summary = missing.summary.unwrap();
    assert_eq!(summary.failures.len(), 1);
    assert!(
        summary.failures[0].error.is_not_found(),
        "{}",
        summary.failures[0].error
    );
}

#[tokio::test]
async fn a_dry_run_says_unchanged_for_what_an_earlier_run_left() {
    let store = store_with(&KEYS);
    let dir = tempfile::tempdir().unwrap();
    copy(&store, "s3://b/p/", dir.path(), CopyOptions::default())
        .await
        .summary
        .unwrap();
    let gets = store.seen().len();
    let options = CopyOptions {
        dry_run: true,
        ..CopyOptions::default()
    };
    let done = copy(&store, "s3://b/p/", dir.path(), options).await;
    done.summary.unwrap();
    let previews = done.recorded.previews.lock().unwrap().clone();
    assert_eq!(previews.len(), KEYS.len());
    assert!(
        previews.iter().all(|line| line.starts_with("unchanged")),
        "{previews:?}"
    );
    assert_eq!(store.seen().len(), gets);
}

#[tokio::test]
async fn a_wildcard_that_matches_nothing_but_names_a_key_says_to_add_raw() {
    let store = store_with(&["p/a[1].bin"]);
    let dir = tempfile::tempdir().unwrap();
    let done = copy(
        &store,
        "s3://b/p/a[1].bin",
        dir.path(),
        CopyOptions::default(),
    )
    .await;
    let summary = done.summary.unwrap();
    assert_eq!(summary.failures.len(), 1);
    assert!(
        summary.failures[0].error.to_string().contains("--raw"),
        "{}",
        summary.failures[0].error
    );
    let raw = CopyOptions {
        raw: true,
        ..CopyOptions::default()
    };
    let done = copy(&store, "s3://b/p/a[1].bin", &dir.path().join("a"), raw).await;
    assert_eq!(done.summary.unwrap().objects, 1);
}

#[tokio::test]
async fn a_store_error_that_ends_everything_ends_the_run() {
    let store = store_with(&KEYS);
    store.script(
        When::list_nth(1),
        Answer::default().fail(|| Error::NoSuchBucket {
            bucket: "b".into(),
            detail: "404 NoSuchBucket".into(),
        }),
    );
    let dir = tempfile::tempdir().unwrap();
    let error = copy(&store, "s3://b/p/", dir.path(), CopyOptions::default())
        .await
        .summary
        .unwrap_err();
    assert!(matches!(error, Error::NoSuchBucket { .. }), "{error}");
    assert!(store.seen().is_empty());
}

#[tokio::test]
async fn a_key_and_a_folder_of_the_same_name_are_both_reported_and_the_rest_land() {
    let store = store_with(&["p/a", "p/a/b.bin", "p/c.bin"]);
    let dir = tempfile::tempdir().unwrap();
    let done = copy(&store, "s3://b/p/", dir.path(), CopyOptions::default()).await;
    let summary = done.summary.unwrap();
    let mut refused: Vec<&str> = summary.failures.iter().map(|f| f.source.as_str()).collect();
    refused.sort();
    assert_eq!(
        refused,
        ["s3://b/p/a", "s3://b/p/a/b.bin"],
        "{:?}",
        summary.failures
    );
    assert_eq!(files(dir.path()), [PathBuf::from("c.bin")]);
    assert_eq!(
        store.got(),
        ["s3://b/p/c.bin"],
        "nothing fetched for either of the pair"
    );
}

#[tokio::test]
async fn an_item_whose_destination_leaves_the_directory_is_refused_alone() {
    let store = store_with(&KEYS);
    let dir = tempfile::tempdir().unwrap();
    let mut batch = items(&store, &["p/b.bin", "p/g.bin"], true);
    batch[0].destination = Some(PathBuf::from("../outside.bin"));
    let summary = copy_items(&store, batch, Destination::Path(dir.path().join("in")))
        .await
        .unwrap();
    assert_eq!(summary.objects, 1);
    assert_eq!(summary.failures.len(), 1);
    assert!(matches!(summary.failures[0].error, Error::UnsafeKey { .. }));
    assert!(!dir.path().join("outside.bin").exists());
    assert!(dir.path().join("in/g.bin").is_file());
}

#[tokio::test]
async fn a_changed_object_is_fetched_again_on_the_next_run() {
    let store = store_with(&KEYS);
    let dir = tempfile::tempdir().unwrap();
    copy(&store, "s3://b/p/", dir.path(), CopyOptions::default())
        .await
        .summary
        .unwrap();
    store.put("s3://b/p/b.bin", b"a new version", Some("\"v2\""));
    let again = copy(&store, "s3://b/p/", dir.path(), CopyOptions::default()).await;
    let summary = again.summary.unwrap();
    assert_eq!(
        (summary.objects, summary.skipped),
        (1, KEYS.len() as u64 - 1)
    );
    assert_eq!(
        std::fs::read(dir.path().join("b.bin")).unwrap(),
        b"a new version"
    );
}

#[tokio::test]
async fn a_single_object_that_a_filter_leaves_out_is_not_fetched() {
    let store = store_with(&KEYS);
    let dir = tempfile::tempdir().unwrap();
    let options = CopyOptions {
        filters: vec![Filter::exclude("*.bin").unwrap()],
        ..CopyOptions::default()
    };
    let done = copy(&store, "s3://b/p/b.bin", &dir.path().join("b.bin"), options).await;
    let summary = done.summary.unwrap();
    assert_eq!((summary.objects, summary.failures.len()), (0, 0));
    assert!(store.seen().is_empty());
}

#[tokio::test]
async fn a_checksum_that_cannot_be_checked_fails_its_object_and_keeps_no_file() {
    let store = Arc::new(MemoryStore::new());
    let big: Vec<u8> = vec![7; 600_000];
    store.put("s3://b/p/big", &big, Some("\"v1-2\""));
    store.keep_checksum(
        "s3://b/p/big",
        crate::checksum::StoreChecksum::Malformed(crate::checksum::Crc::Crc32),
        600_000,
    );
    store.put("s3://b/p/ok", b"fine", Some("\"v1\""));
    let dir = tempfile::tempdir().unwrap();
    let summary = copy(&store, "s3://b/p/", dir.path(), CopyOptions::default())
        .await
        .summary
        .unwrap();
    assert_eq!(summary.objects, 1);
    assert!(matches!(
        summary.failures[0].error,
        Error::Uncheckable { .. }
    ));
    assert_eq!(
        files(dir.path()),
        [PathBuf::from("ok")],
        "no final file, no temporary file"
    );
}

#[tokio::test]
async fn an_empty_prefix_is_one_failure_that_names_it() {
    let store = store_with(&KEYS);
    let dir = tempfile::tempdir().unwrap();
    let done = copy(
        &store,
        "s3://b/nothing/",
        dir.path(),
        CopyOptions::default(),
    )
    .await;
    let summary = done.summary.unwrap();
    assert_eq!(summary.failures.len(), 1);
    let failure = &summary.failures[0];
    assert!(
        matches!(failure.error, Error::NothingMatched { .. }),
        "{:?}",
        failure.error
    );
    assert!(
        failure.error.to_string().contains("s3://b/nothing/"),
        "{}",
        failure.error
    );
}

#[tokio::test]
async fn a_dry_run_of_a_batch_previews_each_item_and_fetches_nothing() {
    let store = store_with(&KEYS);
    let dir = tempfile::tempdir().unwrap();
    let driver = Driver::new(store.clone(), transfer(), Arc::new(Counters::default()));
    let request = CopyRequest {
        source: crate::plan::Source::Items(items(&store, &["p/b.bin", "p/g.bin"], true)),
        destination: Destination::Path(dir.path().to_owned()),
        recursive: false,
        options: CopyOptions {
            dry_run: true,
            ..CopyOptions::default()
        },
    };
    let recorded = Arc::new(Recorded::default());
    driver.copy(&request, recorded.clone()).await.unwrap();
    let previews = recorded.previews.lock().unwrap().clone();
    assert_eq!(previews, ["copy s3://b/p/b.bin", "copy s3://b/p/g.bin"]);
    assert!(store.seen().is_empty() && files(dir.path()).is_empty());
}

mod properties {
    use std::collections::BTreeMap;

    use proptest::prelude::*;

    use super::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(32))]

        /// Whatever the keys (folders and files of one name, `..`, empty segments, names of
        /// temporary files) and sizes: every listed key is either a file below the
        /// destination with exactly its bytes, or one reported failure (a "folder" marker
        /// neither); nothing else is written, and nothing lands outside.
        #[test]
        fn every_key_lands_exactly_or_is_reported(
            objects in prop::collection::btree_map(
                "(a|b|\\.\\.|\\.parabyte-x|)(/(a|b|c|\\.\\.|))?(/(a|b))?",
                0usize..3000,
                0..24,
            ),
        ) {
            let runtime = two_thread_runtime();
            let outside = tempfile::tempdir().unwrap();
            let dir = outside.path().join("dest");
            std::fs::create_dir(&dir).unwrap();
            let objects: BTreeMap<String, usize> = objects;
            let summary = runtime.block_on(async {
                let store = Arc::new(MemoryStore::new());
                for (i, (key, size)) in objects.iter().enumerate() {
                    let url = format!("s3://b/p/{key}");
                    store.put(&url, &content(key, *size), Some(&format!("\"e{i}\"")));
                }
                copy(&store, "s3://b/p/", &dir, CopyOptions::default()).await.summary
            });
            let summary = summary.unwrap();
            let failed: Vec<&str> = summary.failures.iter().map(|f| f.source.as_str()).collect();
            let mut landed = 0;
            for (key, size) in &objects {
                let url = format!("s3://b/p/{key}");
                let reported = failed.iter().filter(|source| **source == url).count();
                let file = dir.join(key);
                let exact = std::fs::symlink_metadata(&file).is_ok_and(|m| m.is_file())
                    && std::fs::read(&file).unwrap() == content(key, *size);
                // A zero-byte key ending in '/' is a console's "folder": nothing to write.
                let marker = url.ends_with('/') && *size == 0;
                prop_assert!(
                    (exact && reported == 0) || (!exact && reported == usize::from(!marker)),
                    "{key}: exact {exact}, reported {reported} times: {failed:?}"
                );
                landed += usize::from(exact);
            }
            prop_assert_eq!(landed as u64, summary.objects);
            prop_assert_eq!(files(&dir).len(), landed, "only the keys' files: {:?}", files(&dir));
            prop_assert_eq!(files(outside.path()).len(), landed, "nothing outside");
        }
    }
}

mod local;
mod moves;
mod schedules;
mod sync;
mod sync_parts;

#[tokio::test]
async fn rm_deletes_the_listed_keys_a_thousand_a_request_and_reports_each_refusal() {
    let names: Vec<String> = (0..1500).map(|i| format!("many/{i:04}")).collect();
    let mut keys: Vec<&str> = names.iter().map(String::as_str).collect();
    keys.push("kept/x");
    let store = store_with(&keys);
    let refused = "s3://b/many/0007";
    store.script(
        When::write(crate::source::Request::Delete).key(refused),
        Answer::default().fail(|| Error::PermissionDenied {
            what: "DELETE".into(),
            detail: "403 AccessDenied".into(),
            anonymous: false,
        }),
    );
    let driver = Driver::new(store.clone(), transfer(), Arc::new(Counters::default()));
    let request = RemoveRequest {
        source: S3Url::parse("s3://b/many/").unwrap(),
        recursive: true,
        options: CopyOptions::default(),
        bounds: Default::default(),
    };
    let recorded = Arc::new(Recorded::default());
    let summary = driver.remove(&request, recorded.clone()).await.unwrap();
    assert_eq!((summary.deleted, summary.failed), (1499, 1));
    assert_eq!(store.delete_requests(), [1000, 500], "1,000 keys a request");
    assert_eq!(summary.failures[0].source, refused);
    assert!(store.data_of(refused).is_some(), "the refused key stays");
    assert!(store.data_of("s3://b/many/0008").is_none());
    assert!(
        store.data_of("s3://b/kept/x").is_some(),
        "outside the prefix"
    );
    let deleted = recorded.reports.lock().unwrap();
    assert_eq!(
        deleted
            .iter()
            .filter(|(_, s)| *s == Status::Deleted)
            .count(),
        1499
    );
}

/// `rm` of one named key, as `aws s3 rm` takes it: `dir/` is the key `dir/`, never the
/// tree under it, and a key that is not there is a failure, not "deleted", whatever
/// DeleteObjects answers. One LIST of one key finds out.
#[tokio::test]
async fn rm_without_recursive_deletes_only_the_key_named_and_only_when_it_is_there() {
    let store = store_with(&["dir/", "dir/a", "dir/sub/b", "tree/c", "key"]);
    let driver = Driver::new(store.clone(), transfer(), Arc::new(Counters::default()));
    let remove = |source: &str| {
        let request = RemoveRequest {
            source: S3Url::parse(source).unwrap(),
            recursive: false,
            options: CopyOptions::default(),
            bounds: Default::default(),
        };
        let driver = &driver;
        async move {
            driver
                .remove(&request, Arc::new(Recorded::default()))
                .await
                .unwrap()
        }
    };
    // The "folder" key alone goes; what lies under it stays.
    let summary = remove("s3://b/dir/").await;
    assert_eq!((summary.deleted, summary.failed), (1, 0));
    assert!(store.data_of("s3://b/dir/").is_none());
    assert!(store.data_of("s3://b/dir/a").is_some());
    assert!(store.data_of("s3://b/dir/sub/b").is_some());
    assert_eq!(store.lists().len(), 1, "one LIST");
    assert_eq!(store.lists()[0].max_keys, 1, "of one key");
    // No key `tree/` or `tree`, but keys under them: refused, nothing sent to delete.
    for source in ["s3://b/tree/", "s3://b/tree", "s3://b/dir"] {
        let summary = remove(source).await;
        assert_eq!((summary.deleted, summary.failed), (0, 1), "{source}");
        let error = &summary.failures[0].error;
        assert!(matches!(error, Error::PrefixNotKey { .. }), "{error}");
        assert!(error.to_string().contains("--recursive"), "{error}");
    }
    assert!(store.data_of("s3://b/tree/c").is_some());
    // A key that is not there, under which nothing lies either.
    let summary = remove("s3://b/missing").await;
    assert_eq!((summary.deleted, summary.failed), (0, 1));
    assert!(matches!(summary.failures[0].error, Error::NotFound { .. }));
    assert_eq!(
        store.delete_requests(),
        [1],
        "only `dir/` was sent to delete"
    );
    let summary = remove("s3://b/key").await;
    assert_eq!((summary.deleted, summary.failed), (1, 0));
    assert!(store.data_of("s3://b/key").is_none());
}

#[tokio::test]
async fn delete_many_batches_by_bucket() {
    let store = store_with(&["a", "b"]);
    store.put("s3://c/x", b"x", None);
    let driver = Driver::new(store.clone(), transfer(), Arc::new(Counters::default()));
    let keys = ["s3://b/a", "s3://c/x", "s3://b/b"].map(|url| S3Url::parse(url).unwrap());
    let summary = driver
        .delete_many(keys.to_vec(), Arc::new(Recorded::default()))
        .await
        .unwrap();
    assert_eq!((summary.deleted, summary.failed), (3, 0));
    assert_eq!(store.delete_requests(), [1, 1, 1], "one bucket a request");
    for url in ["s3://b/a", "s3://c/x", "s3://b/b"] {
        assert!(store.data_of(url).is_none(), "{url}");
    }
}

/// An object an upload stored with its file's time (`x-amz-meta-mtime`) gives the file that
/// time back, read from the GETs that fetch it; and a sync of the same tree again fetches
/// nothing, though every object is newer than its file: the files' marks name the versions.
#[tokio::test]
async fn downloads_take_the_uploaded_files_time_and_a_second_sync_fetches_nothing() {
    let store = Arc::new(MemoryStore::new());
    let listed = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    let file_time = SystemTime::UNIX_EPOCH + Duration::new(1_600_000_000, 123_456_789);
    for (i, (key, size)) in [("parts.bin", 3000), ("small.txt", 100), ("plain.txt", 200)]
        .into_iter()
        .enumerate()
    {
        let url = format!("s3://b/p/{key}");
        store.put(&url, &content(key, size), Some(&format!("\"e{i}\"")));
        store.set_modified(&url, listed);
        if key != "plain.txt" {
            store.set_file_time(&url, file_time);
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let driver = Driver::new(store.clone(), transfer(), Arc::new(Counters::default()));
    let request =
        CopyRequest::parse("s3://b/p/", Destination::Path(dir.path().to_owned()), false).unwrap();
    let options = crate::plan::SyncOptions::default();
    let first = driver
        .sync(&request, &options, None, Arc::new(Recorded::default()))
        .await
        .unwrap();
    assert_eq!((first.objects, first.failures.len()), (3, 0));
    let mtime = |name: &str| {
        std::fs::metadata(dir.path().join(name))
            .unwrap()
            .modified()
            .unwrap()
    };
    assert_eq!(mtime("parts.bin"), file_time);
    assert_eq!(mtime("small.txt"), file_time);
    assert_eq!(
        mtime("plain.txt"),
        listed,
        "no stored time: the LastModified"
    );
    let fetched = store.got().len();
    let second = driver
        .sync(&request, &options, None, Arc::new(Recorded::default()))
        .await
        .unwrap();
    assert_eq!((second.objects, second.skipped), (0, 3));
    assert_eq!(store.got().len(), fetched, "the second sync fetched again");
}
