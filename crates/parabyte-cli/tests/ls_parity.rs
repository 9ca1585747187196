//! `parabyte ls` prints what `aws s3 ls` prints: names relative to the prefix's last '/'
//! (a prefix without a trailing '/' included), aws's columns, the buckets for `ls s3://`,
//! and `--json` lines that carry the full URL next to the key.

mod common;

use common::{run, stderr, Bed};
use parabyte_testkit::{payload, ServerKind};

/// `YYYY-MM-DD HH:MM:SS`, as aws prints a time.
fn is_date_column(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.len() == 19
        && bytes.iter().enumerate().all(|(at, byte)| match at {
            4 | 7 => *byte == b'-',
            10 => *byte == b' ',
            13 | 16 => *byte == b':',
            _ => byte.is_ascii_digit(),
        })
}

/// The lines of `parabyte ls ARGS`, which must succeed.
fn ls(bed: &Bed, args: &[&str]) -> Vec<String> {
    let output = run(bed.parabyte().arg("ls").args(args));
    assert!(output.status.success(), "{args:?}: {}", stderr(&output));
    String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// An object line without its date: aws's `%10s` size, a space, the name.
fn object_line(line: &str) -> &str {
    let (date, rest) = line.split_at(19);
    assert!(is_date_column(date), "{line:?}");
    rest.strip_prefix(' ').unwrap_or_else(|| panic!("{line:?}"))
}

fn names_are_relative_to_the_prefixs_last_slash(kind: ServerKind) {
    let bed = Bed::new(kind, "lsparity");
    bed.admin
        .fill(
            &bed.bucket,
            [
                ("imgs/p1.jpg", payload(1, 5)),
                ("imgs/p2.jpg", payload(2, 1234)),
                ("small/a", payload(3, 7)),
                ("smx", payload(4, 12)),
                ("a.txt", payload(5, 1)),
            ],
        )
        .unwrap();
    let pre = |name: &str| format!("{:>30} {name}", "PRE");

    // Without a trailing '/', the last segment is part of the name shown.
    assert_eq!(ls(&bed, &[&bed.url("imgs")]), vec![pre("imgs/")]);
    let lines = ls(&bed, &[&bed.url("imgs/p1")]);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(object_line(&lines[0]), "         5 p1.jpg");
    let lines = ls(&bed, &[&bed.url("sm")]);
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_eq!(lines[0], pre("small/"));
    assert_eq!(object_line(&lines[1]), "        12 smx");

    // With it, and at the top of the bucket.
    let lines = ls(&bed, &[&bed.url("imgs/")]);
    let shown: Vec<&str> = lines.iter().map(|line| object_line(line)).collect();
    assert_eq!(shown, ["         5 p1.jpg", "      1234 p2.jpg"]);
    // Each page's folders first, then its objects, as aws prints them.
    let lines = ls(&bed, &[&bed.url("")]);
    assert_eq!(lines.len(), 4, "{lines:?}");
    assert_eq!(lines[..2], [pre("imgs/"), pre("small/")]);
    assert_eq!(object_line(&lines[2]), "         1 a.txt");
    assert_eq!(object_line(&lines[3]), "        12 smx");

    // Recursive listings show full keys, whatever the prefix.
    let lines = ls(&bed, &["--recursive", &bed.url("sm")]);
    let shown: Vec<&str> = lines.iter().map(|line| object_line(line)).collect();
    assert_eq!(shown, ["         7 small/a", "        12 smx"]);
}

#[test]
fn names_are_relative_to_the_prefixs_last_slash_versitygw() {
    names_are_relative_to_the_prefixs_last_slash(ServerKind::Versitygw);
}

#[test]
fn names_are_relative_to_the_prefixs_last_slash_minio() {
    names_are_relative_to_the_prefixs_last_slash(ServerKind::Minio);
}

fn json_lines_carry_the_full_url(kind: ServerKind) {
    let bed = Bed::new(kind, "lsjson");
    bed.admin
        .fill(
            &bed.bucket,
            [("p/k", payload(1, 5)), ("p/sub/x", payload(2, 3))],
        )
        .unwrap();
    let lines = ls(&bed, &["--json", &bed.url("p/")]);
    let entries: Vec<serde_json::Value> = lines
        .iter()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(entries.len(), 2, "{lines:?}");
    let object = &entries[0];
    assert_eq!(object["url"], bed.url("p/k"));
    assert_eq!(object["key"], "p/k");
    assert_eq!(object["size"], 5);
    assert!(
        object["etag"].as_str().unwrap().starts_with('"'),
        "{object}"
    );
    assert!(
        object["last_modified"].as_str().unwrap().ends_with('Z'),
        "{object}"
    );
    // The URL comes first, as `ls | jq` users read it.
    assert!(lines[0].starts_with(r#"{"url":"s3://"#), "{}", lines[0]);
    assert_eq!(entries[1]["url"], bed.url("p/sub/"));
    assert_eq!(entries[1]["prefix"], "p/sub/");
}

#[test]
fn json_lines_carry_the_full_url_versitygw() {
    json_lines_carry_the_full_url(ServerKind::Versitygw);
}

#[test]
fn json_lines_carry_the_full_url_minio() {
    json_lines_carry_the_full_url(ServerKind::Minio);
}

fn buckets_are_listed_with_their_creation_dates(kind: ServerKind) {
    let bed = Bed::new(kind, "lsbuckets");
    for args in [&["s3://"][..], &[][..]] {
        let lines = ls(&bed, args);
        let ours: Vec<&String> = lines
            .iter()
            .filter(|line| line.ends_with(&format!(" {}", bed.bucket)))
            .collect();
        assert_eq!(ours.len(), 1, "{args:?}: {lines:?}");
        assert!(is_date_column(&ours[0][..19]), "{}", ours[0]);
        assert_eq!(ours[0].len(), 20 + bed.bucket.len(), "{}", ours[0]);
    }
    let lines = ls(&bed, &["--json", "s3://"]);
    let ours: Vec<serde_json::Value> = lines
        .iter()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .filter(|entry| entry["name"] == bed.bucket.as_str())
        .collect();
    assert_eq!(ours.len(), 1, "{lines:?}");
    assert_eq!(ours[0]["url"], bed.url(""));
    assert!(
        ours[0]["creation_date"].as_str().unwrap().ends_with('Z'),
        "{}",
        ours[0]
    );
}

#[test]
fn buckets_are_listed_with_their_creation_dates_versitygw() {
    buckets_are_listed_with_their_creation_dates(ServerKind::Versitygw);
}

#[test]
fn buckets_are_listed_with_their_creation_dates_minio() {
    buckets_are_listed_with_their_creation_dates(ServerKind::Minio);
}

#[test]
fn human_readable_sizes_and_totals_as_aws_prints_them() {
    let bed = Bed::new(ServerKind::Versitygw, "lshuman");
    bed.admin
        .fill(
            &bed.bucket,
            [
                ("a", payload(1, 1)),
                ("b", payload(2, 10)),
                ("c", payload(3, 1536)),
                ("d", payload(4, 2_726_297)),
            ],
        )
        .unwrap();
    // `-rh` as aws users type it: recursive and human-readable, not help.
    let lines = ls(&bed, &["-rh", "--summarize", &bed.url("")]);
    let sizes: Vec<&str> = lines[..4].iter().map(|line| object_line(line)).collect();
    assert_eq!(
        sizes,
        [
            "    1 Byte a",
            "  10 Bytes b",
            "   1.5 KiB c",
            "   2.6 MiB d"
        ]
    );
    assert_eq!(
        lines[4..],
        ["", "Total Objects: 4", "   Total Size: 2.6 MiB"]
    );
}

#[test]
fn times_are_shown_in_the_local_time_zone_as_aws_does() {
    let bed = Bed::new(ServerKind::Versitygw, "lstz");
    bed.admin
        .put_object(&bed.bucket, "k", payload(1, 3))
        .unwrap();
    // POSIX TZ strings need no time zone database: UTC, and five and a half hours east.
    let date_in = |tz: &str| {
        let output = run(bed.parabyte().env("TZ", tz).args(["ls", &bed.url("")]));
        assert!(output.status.success(), "{}", stderr(&output));
        String::from_utf8(output.stdout).unwrap()[..19].to_owned()
    };
    let (utc, india) = (date_in("UTC0"), date_in("<+0530>-5:30"));
    assert!(
        is_date_column(&utc) && is_date_column(&india),
        "{utc} {india}"
    );
    let minute = |date: &str| date[14..16].parse::<u32>().unwrap();
    assert_eq!(minute(&india), (minute(&utc) + 30) % 60, "{utc} {india}");
    assert_eq!(utc[17..], india[17..], "{utc} {india}");
    assert_ne!(utc[11..13], india[11..13], "{utc} {india}");
}
