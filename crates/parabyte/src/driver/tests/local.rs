//! Local copies through the driver: what lands, what is reported, and what a second run
//! skips.

use std::fs;
use std::os::unix::fs::symlink;

use super::*;
use crate::location::Location;
use crate::pattern::Pattern;
use crate::plan::Source;

/// A tree of files of a few sizes, one past a chunk.
fn tree(root: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let files = [
        ("a.txt", 10usize),
        ("b.bin", 0),
        ("sub/c.txt", 5000),
        ("sub/deep/d.bin", 3 * 1024 * 1024 + 7),
    ];
    files
        .iter()
        .map(|(name, size)| {
            let path = root.join(name);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            let bytes: Vec<u8> = (0..*size).map(|i| (i % 249) as u8).collect();
            fs::write(&path, &bytes).unwrap();
            (PathBuf::from(name), bytes)
        })
        .collect()
}

/// Which files of a local source are copied, and whether they are.
#[derive(Debug, Default)]
struct Selection {
    pattern: Option<Pattern>,
    filters: Vec<Filter>,
    dry_run: bool,
}

/// Copy `source` to `destination` through the driver, as the CLI and Python do.
async fn copy(
    source: &Path,
    destination: &Path,
    selection: Selection,
) -> (Result<Summary>, Arc<Recorded>) {
    let transfer = TransferConfig {
        part_size: 1024 * 1024,
        ..TransferConfig::default()
    };
    let recorded = Arc::new(Recorded::default());
    let store = Arc::new(MemoryStore::new());
    let driver = Driver::new(store, transfer, Arc::new(Counters::default()));
    let source = match &selection.pattern {
        Some(pattern) => PathBuf::from(pattern.to_string()),
        None => source.to_owned(),
    };
    let request = CopyRequest {
        source: Source::Location(Location::Local(source)),
        destination: Destination::Path(destination.to_owned()),
        recursive: false,
        options: CopyOptions {
            filters: selection.filters,
            raw: false,
            dry_run: selection.dry_run,
            ..CopyOptions::default()
        },
    };
    let summary = driver.copy(&request, recorded.clone()).await;
    (summary, recorded)
}

#[tokio::test]
async fn a_tree_lands_whole_with_its_times_and_a_rerun_skips_it() {
    let dir = tempfile::tempdir().unwrap();
    let (source, destination) = (dir.path().join("src"), dir.path().join("dst"));
    let files = tree(&source);
    fs::create_dir(source.join("empty-dir")).unwrap();
    let (summary, _) = copy(&source, &destination, Selection::default()).await;
    let summary = summary.unwrap();
    assert_eq!(summary.objects, files.len() as u64);
    for (name, bytes) in &files {
        assert_eq!(
            &fs::read(destination.join(name)).unwrap(),
            bytes,
            "{name:?}"
        );
        let times = |root: &Path| fs::metadata(root.join(name)).unwrap().modified().unwrap();
        assert_eq!(times(&source), times(&destination), "{name:?}");
    }
    assert!(
        destination.join("empty-dir").is_dir(),
        "a plain copy mirrors empty folders"
    );
    let (again, _) = copy(&source, &destination, Selection::default()).await;
    let again = again.unwrap();
    assert_eq!((again.objects, again.skipped), (0, files.len() as u64));
}

#[tokio::test]
async fn links_are_passed_over_with_their_reason_and_never_followed() {
    let dir = tempfile::tempdir().unwrap();
    let (source, destination) = (dir.path().join("src"), dir.path().join("dst"));
    tree(&source);
    fs::write(dir.path().join("secret"), b"outside").unwrap();
    symlink(dir.path().join("secret"), source.join("link")).unwrap();
    let (summary, recorded) = copy(&source, &destination, Selection::default()).await;
    let summary = summary.unwrap();
    // A skip with its reason, not a failure: a tree holding a virtualenv exits 0.
    assert!(summary.failures.is_empty(), "{:?}", summary.failures);
    assert_eq!(summary.skipped, 1);
    let reports = recorded.reports.lock().unwrap();
    assert!(reports
        .iter()
        .any(|(source, status)| source.ends_with("link") && *status == Status::Skipped));
    assert!(fs::symlink_metadata(destination.join("link")).is_err());
}

#[tokio::test]
async fn filters_and_patterns_choose_the_files_and_only_their_folders_are_made() {
    let dir = tempfile::tempdir().unwrap();
    let (source, destination) = (dir.path().join("src"), dir.path().join("dst"));
    tree(&source);
    let selection = Selection {
        filters: vec![
            Filter::exclude("*").unwrap(),
            Filter::include("*.txt").unwrap(),
        ],
        ..Selection::default()
    };
    let (summary, _) = copy(&source, &destination, selection).await;
    assert_eq!(summary.unwrap().objects, 2);
    assert!(destination.join("a.txt").is_file() && destination.join("sub/c.txt").is_file());
    assert!(
        !destination.join("sub/deep").exists(),
        "no folder without a file"
    );
    let pattern = Pattern::new(&format!("{}/sub/*.bin", source.display())).unwrap();
    let matched = dir.path().join("matched");
    let selection = Selection {
        pattern: Some(pattern),
        ..Selection::default()
    };
    let (summary, _) = copy(&source, &matched, selection).await;
    assert_eq!(summary.unwrap().objects, 1);
    assert!(matched.join("deep/d.bin").is_file());
}

#[tokio::test]
async fn a_dry_run_previews_each_file_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (source, destination) = (dir.path().join("src"), dir.path().join("dst"));
    let files = tree(&source);
    let selection = Selection {
        dry_run: true,
        filters: vec![Filter::exclude("*.bin").unwrap()],
        ..Selection::default()
    };
    let (summary, recorded) = copy(&source, &destination, selection).await;
    summary.unwrap();
    assert!(!destination.exists(), "nothing created");
    let previews = recorded.previews.lock().unwrap().clone();
    let copies = previews
        .iter()
        .filter(|line| line.starts_with("copy"))
        .count();
    let excluded = previews
        .iter()
        .filter(|line| line.starts_with("excluded"))
        .count();
    assert_eq!((copies, excluded), (2, files.len() - 2), "{previews:?}");
}

#[tokio::test]
async fn a_file_goes_into_a_directory_or_to_the_path_named() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("one.txt");
    fs::write(&file, b"hello").unwrap();
    let into = dir.path().join("into");
    fs::create_dir(&into).unwrap();
    copy(&file, &into, Selection::default()).await.0.unwrap();
    assert_eq!(fs::read(into.join("one.txt")).unwrap(), b"hello");
    let named = dir.path().join("named.txt");
    copy(&file, &named, Selection::default()).await.0.unwrap();
    assert_eq!(fs::read(&named).unwrap(), b"hello");
}

#[tokio::test]
async fn a_name_reserved_for_temporary_files_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (source, destination) = (dir.path().join("src"), dir.path().join("dst"));
    tree(&source);
    fs::write(source.join(".parabyte-0000.tmp"), b"x").unwrap();
    let (summary, _) = copy(&source, &destination, Selection::default()).await;
    let summary = summary.unwrap();
    assert_eq!(summary.failures.len(), 1, "{:?}", summary.failures);
    assert!(!destination.join(".parabyte-0000.tmp").exists());
}

#[tokio::test]
async fn a_fifo_in_the_tree_is_reported_and_never_opened() {
    let dir = tempfile::tempdir().unwrap();
    let (source, destination) = (dir.path().join("src"), dir.path().join("dst"));
    tree(&source);
    rustix::fs::mknodat(
        rustix::fs::CWD,
        source.join("pipe"),
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
    // With no writer, opening the FIFO would block: a bound ends the test if it ever does.
    let bounded = tokio::time::timeout(
        std::time::Duration::from_secs(120),
        copy(&source, &destination, Selection::default()),
    );
    let (summary, _) = bounded.await.expect("the FIFO was opened");
    let summary = summary.unwrap();
    assert_eq!(summary.failures.len(), 1, "{:?}", summary.failures);
    assert!(summary.failures[0].source.ends_with("pipe"));
    assert!(fs::symlink_metadata(destination.join("pipe")).is_err());
}

#[tokio::test]
async fn a_source_file_that_changed_is_copied_again() {
    let dir = tempfile::tempdir().unwrap();
    let (source, destination) = (dir.path().join("src"), dir.path().join("dst"));
    tree(&source);
    copy(&source, &destination, Selection::default())
        .await
        .0
        .unwrap();
    fs::write(source.join("a.txt"), b"longer than it was").unwrap();
    let (again, _) = copy(&source, &destination, Selection::default()).await;
    assert_eq!(again.unwrap().objects, 1);
    assert_eq!(
        fs::read(destination.join("a.txt")).unwrap(),
        b"longer than it was"
    );
}

#[tokio::test]
async fn a_pattern_below_a_file_is_refused_before_anything_is_copied() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("one.txt");
    fs::write(&file, b"x").unwrap();
    let pattern = Pattern::new(&format!("{}/*.txt", file.display())).unwrap();
    let selection = Selection {
        pattern: Some(pattern),
        ..Selection::default()
    };
    let (summary, _) = copy(&file, &dir.path().join("out"), selection).await;
    let error = summary.unwrap_err();
    assert!(
        error.to_string().to_lowercase().contains("not a directory"),
        "{error}"
    );
    assert!(!dir.path().join("out").exists());
}
