//! `parabyte ls` against a real server.

mod common;

use common::{run, stderr, Bed};
use parabyte_testkit::{payload, ServerKind};

#[test]
fn lists_one_level_or_everything() {
    let bed = Bed::new(ServerKind::Versitygw, "ls");
    bed.admin
        .fill(
            &bed.bucket,
            [
                ("p/a.txt", payload(1, 12)),
                ("p/sub/b.txt", payload(2, 3456)),
                ("q", payload(3, 1)),
            ],
        )
        .unwrap();

    let output = run(bed.parabyte().args(["ls", &bed.url("p/")]));
    assert!(output.status.success(), "{}", stderr(&output));
    let text = String::from_utf8(output.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert!(lines[0].ends_with("          12 a.txt"), "{text}");
    assert!(lines[1].trim_start().starts_with("PRE sub/"), "{text}");

    let output = run(bed
        .parabyte()
        .args(["ls", "--recursive", "--json", &bed.url("")]));
    assert!(output.status.success(), "{}", stderr(&output));
    let entries: Vec<serde_json::Value> = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let keys: Vec<_> = entries
        .iter()
        .map(|e| e["key"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(keys, vec!["p/a.txt", "p/sub/b.txt", "q"]);
    assert_eq!(entries[1]["size"], 3456);
    assert!(entries[1]["last_modified"].as_str().unwrap().ends_with('Z'));
}
