//! Each command names what it does, one line per object on stderr as aws and s5cmd print
//! them (`upload: a to s3://b/a`, `download:`, `copy:`, `move:`, `delete:`), by default
//! wherever no progress bar is drawn (here stderr is not a terminal); `--object-lines never`
//! and `--quiet` leave them out. A dry run says what it would do, `mv`'s `move:`, and a dry
//! run of one key that is not there fails as aws's does.

mod common;

use common::{run, stderr, Bed};
use parabyte_testkit::ServerKind;

/// The lines of stderr that name an object with `verb:`.
fn named(output: &std::process::Output, verb: &str) -> Vec<String> {
    let prefix = format!("{verb}: ");
    stderr(output)
        .lines()
        .filter(|line| line.starts_with(&prefix))
        .map(str::to_owned)
        .collect()
}

fn sorted(mut lines: Vec<String>) -> Vec<String> {
    lines.sort();
    lines
}

#[test]
fn uploads_downloads_copies_syncs_and_moves_each_name_their_objects() {
    let bed = Bed::new(ServerKind::Versitygw, "object-lines");
    std::fs::create_dir_all(bed.path("src/sub")).unwrap();
    std::fs::write(bed.path("src/a.txt"), b"alpha").unwrap();
    std::fs::write(bed.path("src/sub/b.txt"), b"beta").unwrap();

    let up = run(bed.parabyte().args(["cp", "-r", "src", &bed.url("up/")]));
    assert!(up.status.success(), "{}", stderr(&up));
    assert_eq!(
        sorted(named(&up, "upload")),
        [
            format!("upload: src/a.txt to {}", bed.url("up/a.txt")),
            format!("upload: src/sub/b.txt to {}", bed.url("up/sub/b.txt")),
        ],
        "{}",
        stderr(&up)
    );

    let down = run(bed.parabyte().args(["cp", "-r", &bed.url("up/"), "down"]));
    assert!(down.status.success(), "{}", stderr(&down));
    assert_eq!(
        sorted(named(&down, "download")),
        [
            format!("download: {} to down/a.txt", bed.url("up/a.txt")),
            format!("download: {} to down/sub/b.txt", bed.url("up/sub/b.txt")),
        ],
        "{}",
        stderr(&down)
    );

    let copy = run(bed
        .parabyte()
        .args(["cp", &bed.url("up/a.txt"), &bed.url("copies/a.txt")]));
    assert!(copy.status.success(), "{}", stderr(&copy));
    assert_eq!(
        named(&copy, "copy"),
        [format!(
            "copy: {} to {}",
            bed.url("up/a.txt"),
            bed.url("copies/a.txt")
        )],
        "{}",
        stderr(&copy)
    );

    // A sync names only what it sends: the one file changed.
    std::fs::write(bed.path("src/a.txt"), b"alpha, longer now").unwrap();
    let sync = run(bed.parabyte().args(["sync", "src", &bed.url("up/")]));
    assert!(sync.status.success(), "{}", stderr(&sync));
    assert_eq!(
        named(&sync, "upload"),
        [format!("upload: src/a.txt to {}", bed.url("up/a.txt"))],
        "{}",
        stderr(&sync)
    );

    // A move is named once, as a move: no separate copy or delete line.
    let moved = run(bed
        .parabyte()
        .args(["mv", "-r", &bed.url("up/"), &bed.url("moved/")]));
    assert!(moved.status.success(), "{}", stderr(&moved));
    assert_eq!(
        sorted(named(&moved, "move")),
        [
            format!(
                "move: {} to {}",
                bed.url("up/a.txt"),
                bed.url("moved/a.txt")
            ),
            format!(
                "move: {} to {}",
                bed.url("up/sub/b.txt"),
                bed.url("moved/sub/b.txt")
            ),
        ],
        "{}",
        stderr(&moved)
    );
    for verb in ["copy", "delete"] {
        assert!(named(&moved, verb).is_empty(), "{}", stderr(&moved));
    }
    let home = run(bed
        .parabyte()
        .args(["mv", &bed.url("moved/a.txt"), "home.txt"]));
    assert!(home.status.success(), "{}", stderr(&home));
    assert_eq!(
        named(&home, "move"),
        [format!("move: {} to home.txt", bed.url("moved/a.txt"))],
        "{}",
        stderr(&home)
    );
    let back = run(bed
        .parabyte()
        .args(["mv", "home.txt", &bed.url("moved/a.txt")]));
    assert!(back.status.success(), "{}", stderr(&back));
    assert_eq!(
        named(&back, "move"),
        [format!("move: home.txt to {}", bed.url("moved/a.txt"))],
        "{}",
        stderr(&back)
    );

    // --object-lines never: the summary alone; --quiet: nothing at all.
    let never = run(bed.parabyte().args([
        "cp",
        "-r",
        "--object-lines",
        "never",
        &bed.url("moved/"),
        "never",
    ]));
    assert!(never.status.success(), "{}", stderr(&never));
    assert!(named(&never, "download").is_empty(), "{}", stderr(&never));
    assert!(stderr(&never).contains("2 object(s)"), "{}", stderr(&never));
    let quiet = run(bed
        .parabyte()
        .args(["mv", "-r", "--quiet", &bed.url("moved/"), "quiet"]));
    assert!(quiet.status.success(), "{}", stderr(&quiet));
    assert_eq!(stderr(&quiet), "");
}

#[test]
fn a_dry_run_of_mv_says_move_and_moves_nothing() {
    let bed = Bed::new(ServerKind::Versitygw, "mv-dryrun");
    bed.admin
        .fill(&bed.bucket, ["d/a", "d/b"].map(|key| (key, "x")))
        .unwrap();
    let dry = run(bed
        .parabyte()
        .args(["mv", "--dryrun", "-r", &bed.url("d/"), &bed.url("e/")]));
    assert!(dry.status.success(), "{}", stderr(&dry));
    let said = String::from_utf8_lossy(&dry.stdout).into_owned();
    let mut lines: Vec<&str> = said.lines().collect();
    lines.sort();
    assert_eq!(
        lines,
        [
            format!("(dryrun) move: {} to {}", bed.url("d/a"), bed.url("e/a")),
            format!("(dryrun) move: {} to {}", bed.url("d/b"), bed.url("e/b")),
        ]
    );
    assert!(
        stderr(&dry).contains("(dryrun) 2 object(s) would be moved"),
        "{}",
        stderr(&dry)
    );
    assert_eq!(bed.admin.get_object(&bed.bucket, "d/a").unwrap(), "x");
    assert!(bed.admin.get_object(&bed.bucket, "e/a").is_err());

    // Down, and as JSON.
    let json = run(bed
        .parabyte()
        .args(["mv", "--dryrun", "--json", &bed.url("d/a"), "a"]));
    assert!(json.status.success(), "{}", stderr(&json));
    let first: serde_json::Value = serde_json::from_str(
        String::from_utf8_lossy(&json.stdout)
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(first["dryrun"], "move");
    assert_eq!(first["source"], bed.url("d/a"));
    assert!(!bed.path("a").exists());
    assert_eq!(bed.admin.get_object(&bed.bucket, "d/a").unwrap(), "x");
}

#[test]
fn a_dry_run_of_a_key_that_is_not_there_fails_naming_it() {
    let bed = Bed::new(ServerKind::Versitygw, "dryrun-missing");
    bed.admin.fill(&bed.bucket, [("there", "x")]).unwrap();
    let missing = bed.url("not-there");
    for args in [
        ["cp", "--dryrun", &missing, "out"],
        ["cp", "--dryrun", &missing, &bed.url("copy")],
        ["mv", "--dryrun", &missing, "out"],
    ] {
        bed.proxy.reset();
        let output = run(bed.parabyte().args(args));
        assert_eq!(
            output.status.code(),
            Some(1),
            "{args:?}: {}",
            stderr(&output)
        );
        let said = stderr(&output);
        assert!(
            said.lines()
                .any(|line| line.contains(&missing) && line.contains("not found")),
            "{args:?}: {said}"
        );
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(!stdout.contains("(dryrun) "), "{args:?}: {stdout}");
        assert_eq!(bed.proxy.counts().get, 0, "{args:?}");
    }
    // A key that is there: one HEAD, no GET, its line, exit 0.
    bed.proxy.reset();
    let there = run(bed
        .parabyte()
        .args(["cp", "--dryrun", &bed.url("there"), "out"]));
    assert!(there.status.success(), "{}", stderr(&there));
    assert!(
        String::from_utf8_lossy(&there.stdout)
            .contains(&format!("(dryrun) download: {} to out", bed.url("there"))),
        "{}",
        String::from_utf8_lossy(&there.stdout)
    );
    assert!(
        stderr(&there).contains("0 LIST, 1 HEAD and no GET request sent"),
        "{}",
        stderr(&there)
    );
    let counts = bed.proxy.counts();
    assert_eq!((counts.get, counts.head), (0, 1));
}
