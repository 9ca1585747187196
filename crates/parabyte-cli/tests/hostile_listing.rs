//! Listings from a store that misbehaves (the test kit's HostileServer): every key it listed
//! is downloaded or reported by name, and a broken listing is an error naming the bucket and
//! prefix (exit 1), never a silent end, an endless loop or a panic.

mod common;

use std::io::Read;
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use common::{bare_parabyte, files_under, stderr};
use parabyte_testkit::{HostileServer, ListPage, Received, Reply};

const BUCKET: &str = "bucket";
/// A client stuck in a loop is killed after this long: the test then fails instead of hanging.
const RUN_LIMIT: Duration = Duration::from_secs(60);

/// `parabyte ARGS` against `store`, in `dir`; killed if it runs past [`RUN_LIMIT`].
fn parabyte(store: &HostileServer, dir: &std::path::Path, args: &[&str]) -> Output {
    run_bounded(command(store, dir, args)).0
}

fn command(store: &HostileServer, dir: &std::path::Path, args: &[&str]) -> Command {
    let mut command = bare_parabyte(dir);
    command
        .env("AWS_ACCESS_KEY_ID", "hostile")
        .env("AWS_SECRET_ACCESS_KEY", "hostile-secret")
        .env("AWS_REGION", "us-east-1")
        .env("AWS_ENDPOINT_URL", store.endpoint())
        .args(args);
    command
}

/// Runs `command` to its end (or kills it past [`RUN_LIMIT`]) and returns its output and
/// its peak resident memory in KiB, from the kernel's accounting of that one child.
// The child is reaped by wait4, which also gives its resource usage; Child::wait cannot.
fn run_bounded(command: Command) -> (Output, u64) {
    run_bounded_for(command, RUN_LIMIT)
}

/// [`run_bounded`] with a limit of its own, for a run that is long by design.
#[allow(clippy::zombie_processes)]
fn run_bounded_for(mut command: Command, limit: Duration) -> (Output, u64) {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let read = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            bytes
        })
    };
    let stdout = read(Box::new(child.stdout.take().unwrap()));
    let stderr = read(Box::new(child.stderr.take().unwrap()));
    let pid = child.id() as libc::pid_t;
    let started = Instant::now();
    let mut status = 0;
    // SAFETY: rusage is plain data that wait4 fills in.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: `pid` is our own child, not yet reaped; the pointers are to live locals.
        let reaped = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        assert!(reaped >= 0, "wait4: {}", std::io::Error::last_os_error());
        if reaped == pid {
            break;
        }
        if started.elapsed() > limit {
            let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
            let peak = status.lines().find(|line| line.starts_with("VmHWM"));
            child.kill().unwrap();
            panic!("parabyte still running after {limit:?} ({peak:?}): the listing never ends");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let output = Output {
        status: std::process::ExitStatus::from_raw(status),
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    };
    (output, usage.ru_maxrss as u64)
}

/// Every object's content: its key (the ETag is no MD5, so nothing is checked against it).
fn serve_object(request: &Received) -> Reply {
    let (_, key) = request.bucket_and_key();
    Reply::object(request, key.as_bytes(), Some("\"hostile-1\""))
}

/// A store whose listing under `p/` is `pages(continuation token)`; objects hold their key.
fn store(
    pages: impl Fn(Option<String>, &Received) -> Reply + Send + Sync + 'static,
) -> HostileServer {
    HostileServer::start(move |request| {
        if request.is_listing() {
            pages(request.query_param("continuation-token"), request)
        } else {
            serve_object(request)
        }
    })
}

/// A page of `keys` in key order, as S3 lists them.
fn page(keys: &[&str]) -> ListPage {
    let mut keys = keys.to_vec();
    keys.sort_unstable();
    keys.iter().fold(ListPage::new("p/"), |page, key| {
        page.object(key, key.len() as u64)
    })
}

fn copy_prefix(store: &HostileServer) -> (Output, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let output = parabyte(
        store,
        dir.path(),
        &["cp", "--recursive", "s3://bucket/p/", "dest"],
    );
    (output, dir)
}

/// The files the copy saved under `dest`.
fn saved(dir: &tempfile::TempDir, output: &Output) -> Vec<String> {
    let dest = dir.path().join("dest");
    assert!(dest.is_dir(), "nothing saved: {}", stderr(output));
    files_under(&dest)
}

fn assert_names_the_listing(output: &Output, what: &str) {
    let text = stderr(output);
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(text.contains(&format!("s3://{BUCKET}/p/")), "{text}");
    assert!(text.contains(what), "{text}");
}

#[test]
fn truncated_without_a_token_is_an_error_not_the_end() {
    let store = store(|_, request| page(&["p/a", "p/b"]).truncated(None).reply(request));

    let (output, dir) = copy_prefix(&store);
    assert_names_the_listing(&output, "sent no continuation token");
    assert_eq!(saved(&dir, &output), vec!["a", "b"]);

    let output = parabyte(&store, dir.path(), &["ls", "--recursive", "s3://bucket/p/"]);
    assert_names_the_listing(&output, "sent no continuation token");
    assert_eq!(String::from_utf8_lossy(&output.stdout).lines().count(), 2);

    // A total over part of the keys would mislead: du prints none.
    let output = parabyte(&store, dir.path(), &["du", "s3://bucket/p/"]);
    assert_names_the_listing(&output, "sent no continuation token");
    assert!(
        output.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
}

#[test]
fn a_repeated_token_is_an_error_not_an_endless_loop() {
    let store = store(|token, request| match token {
        None => page(&["p/a"]).truncated(Some("again")).reply(request),
        Some(_) => page(&["p/b"]).truncated(Some("again")).reply(request),
    });

    let (output, dir) = copy_prefix(&store);
    assert_names_the_listing(&output, "continuation token 'again' a second time");
    assert_eq!(saved(&dir, &output), vec!["a", "b"]);

    let output = parabyte(&store, dir.path(), &["ls", "--recursive", "s3://bucket/p/"]);
    assert_names_the_listing(&output, "a second time");
    // Each listing worker (up to --list-parallelism of them) follows a token at most once.
    let listings = store.requests().iter().filter(|r| r.is_listing()).count();
    assert!(listings < 50, "{listings} listing requests for two runs");
}

#[test]
fn keys_of_page_one_are_downloaded_when_page_two_fails() {
    // `p/a` is held back after page 1 until a later key shows it is not a "folder".
    let store = store(|token, request| match token {
        None => page(&["p/0", "p/a"]).truncated(Some("two")).reply(request),
        Some(_) => Reply::s3_error(403, "AccessDenied", "page two is not yours"),
    });

    let (output, dir) = copy_prefix(&store);
    let text = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(text.contains("s3://bucket/p/ (listing stopped"), "{text}");
    assert_eq!(saved(&dir, &output), vec!["0", "a"]);
}

#[test]
fn a_key_outside_the_prefix_is_an_error_not_a_panic() {
    let store = store(|_, request| page(&["p/a", "q/elsewhere", "€uro"]).reply(request));

    let (output, dir) = copy_prefix(&store);
    assert_names_the_listing(&output, "'q/elsewhere', which is not under the prefix");
    assert_eq!(saved(&dir, &output), vec!["a"]);

    let output = parabyte(&store, dir.path(), &["ls", "--recursive", "s3://bucket/p/"]);
    assert_names_the_listing(&output, "not under the prefix");
}

#[test]
fn ls_prints_control_characters_escaped() {
    let keys = [
        "p/evil\n2024-01-01 00:00:00          1 p/fake",
        "p/\u{1b}[2Jclear",
        "p/back\\slash",
        "p/ok",
    ];
    let store = store(move |_, request| page(&keys).reply(request));
    let dir = tempfile::tempdir().unwrap();

    let output = parabyte(&store, dir.path(), &["ls", "--recursive", "s3://bucket/p/"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = String::from_utf8(output.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4, "{text}");
    assert!(lines[0].ends_with(" p/\\u{1b}[2Jclear"), "{text}");
    assert!(lines[1].ends_with(" p/back\\\\slash"), "{text}");
    assert!(
        lines[2].ends_with(" p/evil\\n2024-01-01 00:00:00          1 p/fake"),
        "{text}"
    );
    assert!(!text.contains('\u{1b}'), "{text}");

    let output = parabyte(
        &store,
        dir.path(),
        &["ls", "--recursive", "--json", "s3://bucket/p/"],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(!text.contains('\u{1b}'), "{text}");
    let listed: Vec<String> = text
        .lines()
        .map(|line| {
            serde_json::from_str::<serde_json::Value>(line).unwrap()["key"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    let mut sorted = keys.map(str::to_owned).to_vec();
    sorted.sort();
    assert_eq!(listed, sorted);
}

#[test]
fn a_huge_page_streams_in_bounded_memory() {
    // About 40 MiB of XML in one page (a store ignoring max-keys), written as it is sent:
    // five times what parabyte may hold of a page, so it passes only by streaming.
    const KEYS: u64 = 300_000;
    let store = store(|_, request| {
        ListPage::new("p/").generated(request, KEYS, 1, |i| format!("p/{i:012}"))
    });
    let dir = tempfile::tempdir().unwrap();

    let ls = command(&store, dir.path(), &["ls", "--recursive", "s3://bucket/p/"]);
    let (output, peak_kib) = run_bounded(ls);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = String::from_utf8(output.stdout).unwrap();
    assert_eq!(text.lines().count() as u64, KEYS);
    assert!(text.ends_with(&format!(" p/{:012}\n", KEYS - 1)));
    assert!(
        peak_kib < 60 * 1024,
        "parabyte peaked at {} MiB for one listing page",
        peak_kib / 1024
    );
}

#[test]
fn a_page_that_breaks_after_keys_went_out_is_retried_without_repeating_them() {
    // The first answer stops short of the length its headers promised, after 3000 keys.
    let answered = AtomicBool::new(false);
    let store = store(move |_, request| {
        let again = answered.swap(true, Ordering::SeqCst);
        let count = if again { 5000 } else { 3000 };
        let page = ListPage::new("p/").generated(request, count, 1, |i| format!("p/{i:05}"));
        if again {
            page
        } else {
            page.header("content-length", "100000000")
        }
    });
    let dir = tempfile::tempdir().unwrap();

    let output = parabyte(&store, dir.path(), &["ls", "--recursive", "s3://bucket/p/"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = String::from_utf8(output.stdout).unwrap();
    let keys: Vec<&str> = text.lines().map(|line| &line[line.len() - 7..]).collect();
    let expected: Vec<String> = (0..5000).map(|i| format!("p/{i:05}")).collect();
    assert_eq!(keys, expected);
    assert_eq!(store.requests().len(), 2);
}

#[test]
fn sync_delete_deletes_nothing_after_any_broken_listing() {
    let broken: [(&str, HostileServer); 3] = [
        (
            "sent no continuation token",
            store(|_, request| page(&["p/a", "p/b"]).truncated(None).reply(request)),
        ),
        (
            "a second time",
            store(|token, request| match token {
                None => page(&["p/a"]).truncated(Some("again")).reply(request),
                Some(_) => page(&["p/b"]).truncated(Some("again")).reply(request),
            }),
        ),
        (
            "not under the prefix",
            store(|_, request| page(&["p/a", "q/elsewhere"]).reply(request)),
        ),
    ];
    for (what, store) in broken {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("dest");
        std::fs::create_dir(&dest).unwrap();
        for name in ["c", "d"] {
            std::fs::write(dest.join(name), "only here").unwrap();
        }
        let output = parabyte(
            &store,
            dir.path(),
            &["sync", "--delete", "s3://bucket/p/", "dest"],
        );
        let text = stderr(&output);
        assert_eq!(output.status.code(), Some(1), "{what}: {text}");
        assert!(text.contains(what), "{text}");
        assert!(text.contains("nothing was deleted"), "{text}");
        let kept = files_under(&dest);
        assert!(
            kept.contains(&"c".to_owned()) && kept.contains(&"d".to_owned()),
            "{what}: {kept:?}"
        );
    }
}

/// Keys `src/00000000` ... and `dst/00000000` ..., `count` under each prefix, all of one
/// size and time: listed page by page from any token or start-after, nothing held.
fn two_generated_trees(count: u64) -> HostileServer {
    HostileServer::start(move |request| {
        let prefix = request.query_param("prefix").unwrap_or_default();
        let after = request
            .query_param("continuation-token")
            .or_else(|| request.query_param("start-after"))
            .unwrap_or_default();
        let max_keys: u64 = request
            .query_param("max-keys")
            .and_then(|max| max.parse().ok())
            .unwrap_or(1000);
        let key = |i: u64| format!("{prefix}{i:08}");
        // The first key after `after`: keys sort as their numbers do.
        let (mut low, mut high) = (0, count);
        while low < high {
            let middle = (low + high) / 2;
            match key(middle) > after {
                true => high = middle,
                false => low = middle + 1,
            }
        }
        let page = max_keys.min(count - low);
        let mut listing = ListPage::new(&prefix);
        if low + page < count {
            listing = listing.truncated(Some(&key(low + page - 1)));
        }
        let first = low;
        listing.generated(request, page, 7, move |i| {
            format!("{prefix}{:08}", first + i)
        })
    })
}

/// The number in the environment variable `name`, else `default`: how many keys a load
/// test runs with.
fn count_from_env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|count| count.parse().ok())
        .unwrap_or(default)
}

/// Runs the sync `args` of `count` keys that are already in place: it must end well, skip
/// every key and send or delete none. Gives its peak RSS in KiB.
fn sync_with_nothing_to_do(
    store: &HostileServer,
    dir: &std::path::Path,
    args: &[&str],
    count: u64,
) -> u64 {
    let limit = RUN_LIMIT + Duration::from_secs(count / 20_000);
    let (output, peak_kib) = run_bounded_for(command(store, dir, args), limit);
    assert!(output.status.success(), "{}", stderr(&output));
    let summary: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(summary["skipped"], count);
    assert_eq!(
        (summary["objects"].as_u64(), summary["deleted"].as_u64()),
        (Some(0), Some(0))
    );
    peak_kib
}

#[test]
fn a_sync_of_millions_of_keys_holds_memory_flat() {
    // docs/LOAD.md has the 10,000,000-key run: PARABYTE_SYNC_KEYS=10000000, release build.
    let count = count_from_env("PARABYTE_SYNC_KEYS", 300_000);
    let store = two_generated_trees(count);
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "sync",
        "--json",
        "--delete",
        "s3://bucket/src/",
        "s3://bucket/dst/",
    ];
    let peak_kib = sync_with_nothing_to_do(&store, dir.path(), &args, count);
    eprintln!("{count} keys a side: peak RSS {} MiB", peak_kib / 1024);
    // Two listings of 8 workers each, with their pages held ahead: the same at 200,000
    // keys a side as at 10,000,000 (docs/LOAD.md). Pages held loose took 56 MiB here,
    // packed 41 (docs/PROFILE.md, stop 56).
    assert!(
        peak_kib < 48 * 1024,
        "parabyte peaked at {} MiB merging two listings of {count} keys",
        peak_kib / 1024
    );
}

#[test]
fn a_sync_into_one_folder_of_many_files_holds_memory_flat() {
    // The walk sorts a folder's names before it reads any: a million files in one folder
    // must cost their names, not a `stat` each held until the folder is done (106 MiB
    // here), and the listing's pages wait packed for the walk (loose: 54 MiB; packed: 42).
    let count = count_from_env("PARABYTE_FLAT_FILES", 200_000);
    let store = two_generated_trees(count);
    let dir = tempfile::tempdir().unwrap();
    let dest = dir.path().join("dest");
    std::fs::create_dir(&dest).unwrap();
    for i in 0..count {
        std::fs::write(dest.join(format!("{i:08}")), b"1234567").unwrap();
    }
    let args = [
        "sync",
        "--json",
        "--delete",
        "--size-only",
        "s3://bucket/src/",
        "dest",
    ];
    let peak_kib = sync_with_nothing_to_do(&store, dir.path(), &args, count);
    eprintln!(
        "{count} files in one folder: peak RSS {} MiB",
        peak_kib / 1024
    );
    assert!(
        peak_kib < 48 * 1024,
        "parabyte peaked at {} MiB walking one folder of {count} files",
        peak_kib / 1024
    );
}
