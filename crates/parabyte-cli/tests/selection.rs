//! Choosing what to copy, through the real binary against a real server: wildcards in keys
//! and local paths, --exclude/--include, --dryrun (no GET, nothing written), sources that
//! match nothing, and manifests from standard input in `ls --json`'s shape.

mod common;

use common::{files_under, run, stderr, summary, temporary_name, Bed};
use parabyte_testkit::{payload, Fault, RequestKind, Rule, ServerKind};

/// Keys a user would meet, and hostile ones: a key that is literally `*.jpg`, one with
/// `[1]` in it, and one shaped like parabyte's temporary names, all matched by `*.jpg`.
const KEYS: [&str; 9] = [
    "imgs/a.jpg",
    "imgs/sub/b.jpg",
    "imgs/c.png",
    "imgs/*.jpg",
    "imgs/x[1].jpg",
    "imgs/.parabyte-0123.tmp.jpg",
    "imgs2/e.jpg",
    "other/d.jpg",
    "imgs/notes/readme.txt",
];

fn bed(name: &str) -> Bed {
    bed_on(ServerKind::Versitygw, name)
}

fn bed_on(kind: ServerKind, name: &str) -> Bed {
    let bed = Bed::new(kind, name);
    let objects = KEYS
        .iter()
        .enumerate()
        .map(|(seed, key)| (*key, payload(seed as u64, 100 + seed)));
    bed.admin.fill(&bed.bucket, objects).unwrap();
    bed
}

fn content(key: &str) -> Vec<u8> {
    let seed = KEYS.iter().position(|k| *k == key).unwrap();
    payload(seed as u64, 100 + seed).to_vec()
}

fn stdout(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn a_wildcard_lists_its_literal_prefix_and_keeps_what_matches(kind: ServerKind) {
    let bed = bed_on(kind, "wild");
    let output = run(bed
        .parabyte()
        .args(["cp", "--json", &bed.url("imgs/*.jpg"), "out/"]));
    // The temporary-name key is reported by name; everything else that matches arrives.
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let json = summary(&output);
    assert_eq!(json["objects"], 4, "{json}");
    assert_eq!(json["failed"], 1, "{json}");
    let failure = json["failures"][0].to_string();
    assert!(failure.contains(".parabyte-0123.tmp.jpg"), "{failure}");
    // `*` crosses '/', and paths start after the literal prefix's last '/' (as in s5cmd).
    let out = bed.path("out");
    assert_eq!(
        files_under(&out),
        vec!["*.jpg", "a.jpg", "sub/b.jpg", "x[1].jpg"]
    );
    for (file, key) in [("a.jpg", "imgs/a.jpg"), ("*.jpg", "imgs/*.jpg")] {
        assert!(
            std::fs::read(out.join(file)).unwrap() == content(key),
            "{key}"
        );
    }
    // One listing of the literal prefix, every key at once (no delimiter); a GET per match.
    let requests = bed.proxy.requests();
    let listings: Vec<_> = requests
        .iter()
        .filter(|r| r.kind == RequestKind::List)
        .collect();
    assert_eq!(listings.len(), 1, "{listings:?}");
    assert!(listings[0].query.contains("prefix=imgs%2F"), "{listings:?}");
    assert!(!listings[0].query.contains("delimiter"), "{listings:?}");
    assert_eq!(bed.proxy.counts().get, 4);

    // `?` is one character, a set is one of its members, and a literal prefix without '/'
    // keeps the whole key as the path.
    let output = run(bed.parabyte().args(["cp", &bed.url("imgs/?.jpg"), "one/"]));
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(files_under(&bed.path("one")), vec!["*.jpg", "a.jpg"]);
    let output = run(bed
        .parabyte()
        .args(["cp", &bed.url("im*/[a-e].jpg"), "set/"]));
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(
        files_under(&bed.path("set")),
        vec!["imgs/a.jpg", "imgs/sub/b.jpg", "imgs2/e.jpg"]
    );
}

#[test]
fn a_wildcard_lists_its_literal_prefix_and_keeps_what_matches_versitygw() {
    a_wildcard_lists_its_literal_prefix_and_keeps_what_matches(ServerKind::Versitygw);
}

#[test]
fn a_wildcard_lists_its_literal_prefix_and_keeps_what_matches_seaweedfs() {
    a_wildcard_lists_its_literal_prefix_and_keeps_what_matches(ServerKind::SeaweedFs);
}

#[test]
fn a_wildcard_lists_its_literal_prefix_and_keeps_what_matches_minio() {
    a_wildcard_lists_its_literal_prefix_and_keeps_what_matches(ServerKind::Minio);
}

#[test]
fn a_wildcard_lists_its_literal_prefix_and_keeps_what_matches_moto() {
    a_wildcard_lists_its_literal_prefix_and_keeps_what_matches(ServerKind::Moto);
}

#[test]
fn a_key_with_wildcard_characters_stays_reachable() {
    let bed = bed("raw");
    // --raw: the key as written, one object (no listing).
    let output = run(bed
        .parabyte()
        .args(["cp", "--raw", &bed.url("imgs/*.jpg"), "star.jpg"]));
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(std::fs::read(bed.path("star.jpg")).unwrap() == content("imgs/*.jpg"));
    assert_eq!(bed.proxy.counts().list, 0);
    let output = run(bed
        .parabyte()
        .args(["cp", "--raw", &bed.url("imgs/x[1].jpg"), "raw/"]));
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(files_under(&bed.path("raw")), vec!["x[1].jpg"]);
    // In a pattern, a set of one escapes: `[[]` is '[' and `[*]` is '*'.
    let output = run(bed
        .parabyte()
        .args(["cp", &bed.url("imgs/[*].jpg"), "escaped/"]));
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(files_under(&bed.path("escaped")), vec!["*.jpg"]);
    // Read as a pattern, `x[1].jpg` means `x1.jpg`: nothing matches, and the warning says
    // that the key of that exact name exists and how to get it.
    let output = run(bed
        .parabyte()
        .args(["cp", &bed.url("imgs/x[1].jpg"), "pattern/"]));
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let err = stderr(&output);
    assert!(
        err.contains(&format!(
            "warning: {}: no key matches",
            bed.url("imgs/x[1].jpg")
        )),
        "{err}"
    );
    assert!(err.contains("add --raw"), "{err}");
    assert!(!bed.path("pattern").join("x[1].jpg").exists());
    // An unclosed '[' is refused before any request, naming the pattern.
    bed.proxy.reset();
    let output = run(bed
        .parabyte()
        .args(["cp", &bed.url("imgs/x[1.jpg"), "bad/"]));
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("pattern 'imgs/x[1.jpg'"),
        "{}",
        stderr(&output)
    );
    assert_eq!(bed.proxy.counts().list + bed.proxy.counts().get, 0);
}

#[test]
fn filters_apply_in_order_to_the_path_below_the_source() {
    let bed = bed("filters");
    let output = run(bed.parabyte().args([
        "cp",
        "--exclude",
        "*",
        "--include",
        "*.jpg",
        "--exclude",
        "sub/*",
        "--exclude",
        ".parabyte-*",
        &bed.url("imgs/"),
        "out",
    ]));
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(
        files_under(&bed.path("out")),
        vec!["*.jpg", "a.jpg", "x[1].jpg"]
    );
    // The same filters the other way round: the last match decides, so nothing is left.
    let output = run(bed.parabyte().args([
        "cp",
        "--include",
        "*.jpg",
        "--exclude",
        "*",
        &bed.url("imgs/"),
        "none",
    ]));
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(!bed.path("none").exists() || files_under(&bed.path("none")).is_empty());
    // With a wildcard source, filters see the same path the file lands at.
    let output = run(bed.parabyte().args([
        "cp",
        "--exclude",
        "sub/*",
        "--exclude",
        ".parabyte-*",
        &bed.url("imgs/*.jpg"),
        "wild/",
    ]));
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(
        files_under(&bed.path("wild")),
        vec!["*.jpg", "a.jpg", "x[1].jpg"]
    );
}

#[test]
fn a_dry_run_sends_no_get_and_writes_nothing() {
    let bed = bed("dryrun");
    let first = run(bed.parabyte().args([
        "cp",
        "--exclude",
        "sub/*",
        "--exclude",
        ".parabyte-*",
        &bed.url("imgs/"),
        "out",
    ]));
    assert!(first.status.success(), "{}", stderr(&first));
    let before = files_under(&bed.path("out"));
    bed.proxy.reset();
    let output = run(bed.parabyte().args([
        "cp",
        "--dryrun",
        "--exclude",
        "*.png",
        "--exclude",
        ".parabyte-*",
        &bed.url("imgs/"),
        "out",
    ]));
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(bed.proxy.counts().get, 0);
    assert_eq!(files_under(&bed.path("out")), before);
    let text = stdout(&output);
    let expect = [
        format!(
            "(dryrun) download: {} to {}",
            bed.url("imgs/sub/b.jpg"),
            "out/sub/b.jpg"
        ),
        format!(
            "(dryrun) skip: {} ({} holds this version from an earlier run)",
            bed.url("imgs/a.jpg"),
            "out/a.jpg"
        ),
    ];
    for line in &expect {
        assert!(text.lines().any(|l| l == line), "{line} not in\n{text}");
    }
    // What the filters leave out is counted; -v lists it.
    let excluded = format!(
        "(dryrun) skip: {} (excluded by --exclude '*.png')",
        bed.url("imgs/c.png")
    );
    assert!(!text.lines().any(|l| l == excluded), "{text}");
    assert!(
        stderr(&output).contains("(dryrun) 1 object(s) would be copied, 4 left as they are, "),
        "{}",
        stderr(&output)
    );
    assert!(
        stderr(&output).contains("excluded by filters (-v lists them)"),
        "{}",
        stderr(&output)
    );
    let verbose = run(bed.parabyte().args([
        "cp",
        "-v",
        "--dryrun",
        "--exclude",
        "*.png",
        "--exclude",
        ".parabyte-*",
        &bed.url("imgs/"),
        "out",
    ]));
    assert!(verbose.status.success(), "{}", stderr(&verbose));
    let listed = stdout(&verbose);
    assert!(
        listed.lines().any(|l| l == excluded),
        "{excluded} not in\n{listed}"
    );
    // With --json, each line is a JSON object, then the summary.
    let output = run(bed.parabyte().args([
        "cp",
        "--dryrun",
        "--json",
        "--exclude",
        ".parabyte-*",
        &bed.url("imgs/"),
        "out",
    ]));
    assert!(output.status.success(), "{}", stderr(&output));
    let lines: Vec<serde_json::Value> = stdout(&output)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let copy = lines.iter().find(|l| l["dryrun"] == "copy").unwrap();
    assert_eq!(copy["source"], bed.url("imgs/sub/b.jpg"));
    assert_eq!(copy["destination"], "out/sub/b.jpg");
    assert_eq!(lines.last().unwrap()["objects"], 1);
    assert_eq!(bed.proxy.counts().get, 0);

    // One object, no listing: no request at all, no file, no temporary file.
    bed.proxy.reset();
    let output = run(bed
        .parabyte()
        .args(["cp", "--dryrun", &bed.url("imgs/a.jpg"), "new.jpg"]));
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(bed.proxy.counts().get, 0);
    assert!(
        stdout(&output).contains("(dryrun) download:"),
        "{}",
        stdout(&output)
    );
    assert!(!bed.path("new.jpg").exists());
    assert!(!bed.path(&temporary_name("new.jpg")).exists());

    // A local tree: nothing created, not even the destination directory.
    let src = bed.path("src");
    std::fs::create_dir_all(src.join("deep")).unwrap();
    std::fs::write(src.join("deep/f.txt"), b"local").unwrap();
    let output = run(bed.parabyte().args(["cp", "--dryrun", "src", "copy"]));
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(!bed.path("copy").exists());
    assert!(
        stdout(&output).contains("(dryrun) copy: src/deep/f.txt to copy/deep/f.txt"),
        "{}",
        stdout(&output)
    );
}

#[test]
fn sources_that_match_nothing_warn_and_exit_1_in_cp_and_ls() {
    let bed = bed("empty");
    let cases = [
        (
            vec!["cp", "PREFIX", "out"],
            "nothing/",
            "no object under this prefix",
        ),
        (
            vec!["cp", "PREFIX", "out"],
            "imgs/*.gif",
            "no key matches this wildcard pattern",
        ),
        (
            vec!["cp", "-r", "PREFIX", "out"],
            "nothing",
            "no object under this prefix",
        ),
        (
            vec!["ls", "PREFIX"],
            "nothing/",
            "nothing listed under this prefix",
        ),
        (
            vec!["ls", "-r", "PREFIX"],
            "nothing/",
            "nothing listed under this prefix",
        ),
    ];
    for (args, prefix, says) in cases {
        let url = bed.url(prefix);
        let args: Vec<&str> = args
            .iter()
            .map(|a| if *a == "PREFIX" { url.as_str() } else { a })
            .collect();
        let output = run(bed.parabyte().args(&args));
        let err = stderr(&output);
        assert_eq!(output.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains("warning: "), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(err.contains(&bed.bucket), "{args:?}: {err}");
    }
    // A prefix named without '/' and without -r: say what to add, not "check the spelling".
    let output = run(bed.parabyte().args(["cp", &bed.url("imgs"), "out"]));
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let err = stderr(&output);
    assert!(
        err.contains(&format!(
            "{0}: no such object, but {0}/ holds objects; add '/'",
            bed.url("imgs")
        )),
        "{err}"
    );
    assert!(err.contains("--recursive"), "{err}");
    assert!(!err.contains("check the spelling"), "{err}");
    // The error names the object itself: the failure line does not name it twice.
    assert!(
        !err.contains(&format!("{0}: {0}", bed.url("imgs"))),
        "{err}"
    );
}

#[test]
fn ls_json_lines_piped_in_are_a_manifest() {
    let bed = bed("stdin");
    let etag = |key: &str| {
        let head = bed
            .admin
            .block_on(
                bed.admin
                    .client()
                    .request(http::Method::HEAD, &bed.bucket, key)
                    .send(),
            )
            .unwrap();
        head.headers["etag"].to_str().unwrap().to_owned()
    };
    // The shape `ls --recursive --json` prints (with a field this version does not know).
    let line = |key: &str| {
        serde_json::json!({
            "url": bed.url(key),
            "key": key,
            "size": content(key).len(),
            "etag": etag(key),
            "last_modified": "2026-01-01T00:00:00.000Z",
            "storage_class": "STANDARD",
        })
        .to_string()
    };
    let lines = [
        line("imgs/a.jpg"),
        line("imgs/sub/b.jpg"),
        line("other/d.jpg"),
    ];
    let output = run(bed
        .parabyte()
        .args(["cp", "--json", "--manifest", "-", "out"])
        .write_stdin(lines.join("\n")));
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(summary(&output)["objects"], 3);
    // Directories kept; sizes and ETags from the lines: one pinned GET each, no probe.
    assert_eq!(
        files_under(&bed.path("out")),
        vec!["imgs/a.jpg", "imgs/sub/b.jpg", "other/d.jpg"]
    );
    assert!(std::fs::read(bed.path("out/imgs/sub/b.jpg")).unwrap() == content("imgs/sub/b.jpg"));
    let gets: Vec<_> = bed
        .proxy
        .requests()
        .into_iter()
        .filter(|r| r.kind != RequestKind::List)
        .collect();
    assert_eq!(gets.len(), 3, "{gets:?}");
    assert!(gets.iter().all(|r| r.if_match.is_some()), "{gets:?}");
    // Bad lines from stdin are named by line number.
    let output = run(bed
        .parabyte()
        .args(["cp", "--manifest", "-", "bad"])
        .write_stdin(format!(
            "{}\n{{\"prefix\":\"imgs/\"}}\n",
            line("imgs/a.jpg")
        )));
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("stdin:2: a \"prefix\" line"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn local_wildcards_and_filters_choose_files() {
    let bed = Bed::new(ServerKind::Versitygw, "localwild");
    let src = bed.path("src");
    std::fs::create_dir_all(src.join("sub")).unwrap();
    std::fs::create_dir_all(src.join("empty")).unwrap();
    for (name, body) in [
        ("a.txt", "a"),
        ("sub/b.txt", "b"),
        ("c.log", "c"),
        ("[x].txt", "x"),
    ] {
        std::fs::write(src.join(name), body).unwrap();
    }
    let output = run(bed.parabyte().args(["cp", "src/*.txt", "dst/"]));
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(
        files_under(&bed.path("dst")),
        vec!["[x].txt", "a.txt", "sub/b.txt"]
    );
    // Only the directories the chosen files need are created.
    assert!(!bed.path("dst/empty").exists());
    let output = run(bed.parabyte().args([
        "cp",
        "--exclude",
        "sub/*",
        "--exclude",
        "*.log",
        "src",
        "filtered",
    ]));
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(files_under(&bed.path("filtered")), vec!["[x].txt", "a.txt"]);
    // Read as a pattern, `[x].txt` is `x.txt`: the warning points to the file and --raw.
    let output = run(bed.parabyte().args(["cp", "src/[x].txt", "as-pattern/"]));
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("a file of exactly this name exists; add --raw"),
        "{}",
        stderr(&output)
    );
    let output = run(bed
        .parabyte()
        .args(["cp", "--raw", "src/[x].txt", "raw.txt"]));
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(std::fs::read(bed.path("raw.txt")).unwrap(), b"x");
    let output = run(bed.parabyte().args(["cp", "src/*.gif", "none/"]));
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("warning: src/*.gif: no file matches"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn a_wildcard_download_starts_before_the_listing_ends() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let bed = bed("streams");
    // The second listing page is held until the first match is in place: a copy that
    // collected the whole listing before downloading would never get there.
    let first_match = bed.path("out/*.jpg");
    let arrived_first = Arc::new(AtomicBool::new(false));
    let arrived = arrived_first.clone();
    bed.proxy.inject(
        Rule::list().nth(2),
        Fault::hook(move |_, _| {
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
            while !first_match.exists() && std::time::Instant::now() < deadline {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            arrived.store(first_match.exists(), Ordering::SeqCst);
        }),
    );
    // Page 1: `*.jpg`, `.parabyte-…` (refused) and `a.jpg`, which releases `*.jpg`; `a.jpg`
    // itself waits for page 2 (a later key could make it a "folder"), so wait for `*.jpg`.
    let output = run(bed.parabyte().args([
        "cp",
        "--list-page-size",
        "3",
        "--list-parallelism",
        "1",
        &bed.url("imgs/*.jpg"),
        "out/",
    ]));
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(arrived_first.load(Ordering::SeqCst));
}
