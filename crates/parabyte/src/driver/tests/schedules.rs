//! Random schedules of faults and lies through the in-memory store: requests that fail,
//! bodies cut short, objects replaced between two requests, servers that ignore the pin or
//! drop the ETag. Whatever the schedule, each key ends as exactly one version under its
//! name, byte for byte, or as one reported failure; never a file mixing two versions.

use proptest::prelude::*;

use super::*;
use crate::disk::paths::is_reserved;

/// One fault on the `nth` GET of one object.
#[derive(Debug, Clone)]
enum Fault {
    /// A network error instead of an answer.
    Fail,
    /// The body ends after this many bytes.
    Cut(usize),
    /// The object is replaced (new bytes, new ETag) before this request is answered.
    Replace,
    /// Replaced, and the server ignores the pin: it serves the new version.
    ReplaceIgnoringPin,
    /// Replaced, the pin ignored, and no ETag on the answer.
    ReplaceWithoutEtag,
}

fn fault() -> impl Strategy<Value = Fault> {
    prop_oneof![
        Just(Fault::Fail),
        (0usize..400_000).prop_map(Fault::Cut),
        Just(Fault::Replace),
        Just(Fault::ReplaceIgnoringPin),
        Just(Fault::ReplaceWithoutEtag),
    ]
}

const MIB: usize = 1 << 20;

fn network_error() -> Error {
    Error::Network {
        what: "GET".into(),
        detail: "connection reset by the schedule".into(),
    }
}

/// The second version of `key`: other bytes, mostly of the same size (a new size is caught
/// by the size alone; the same size is what only the version pin tells apart).
fn replaced(key: &str, size: usize) -> Vec<u8> {
    let size = if size % 4 != 0 { size } else { size + 70_000 };
    format!("{key}~v2~").bytes().cycle().take(size).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]

    #[test]
    fn a_schedule_of_faults_and_lies_never_leaves_a_mixed_file(
        objects in prop::collection::vec(
            // Past the size fetched in one request, so objects come in several ranges.
            (MIB..MIB + MIB / 4, prop::collection::vec((1usize..5, fault()), 0..3)),
            1..4,
        ),
    ) {
        let runtime = two_thread_runtime();
        let outside = tempfile::tempdir().unwrap();
        let dir = outside.path().join("dest");
        let store = Arc::new(MemoryStore::new());
        let mut versions = Vec::new();
        for (i, (size, faults)) in objects.iter().enumerate() {
            let key = format!("p/k{i}");
            let url = format!("s3://b/{key}");
            let first = content(&key, *size);
            store.put(&url, &first, Some(&format!("\"e{i}\"")));
            let second = replaced(&key, *size);
            let etag = format!("\"e{i}-v2\"");
            for (nth, fault) in faults {
                let when = When::nth(*nth).key(&url);
                let answer = match fault {
                    Fault::Fail => Answer::default().fail(network_error),
                    Fault::Cut(bytes) => Answer::default().break_after(*bytes),
                    Fault::Replace => Answer::default().replace(&second, Some(&etag)),
                    Fault::ReplaceIgnoringPin => {
                        Answer::default().replace(&second, Some(&etag)).ignore_pin()
                    }
                    Fault::ReplaceWithoutEtag => Answer::default()
                        .replace(&second, Some(&etag))
                        .ignore_pin()
                        .validator(None),
                };
                store.script(when, answer);
            }
            versions.push((key, url, first, second));
        }
        let transfer = TransferConfig {
            part_size: 64 * 1024,
            ranges_per_object: 4,
            ..transfer()
        };
        let options = CopyOptions::default();
        let summary = runtime
            .block_on(copy_with(&store, "s3://b/p/", &dir, options, transfer))
            .summary
            .unwrap();
        let failed: Vec<&str> = summary.failures.iter().map(|f| f.source.as_str()).collect();
        let mut landed = 0;
        for (key, url, first, second) in &versions {
            let reported = failed.iter().filter(|source| **source == url).count();
            let name = key.trim_start_matches("p/");
            match std::fs::read(dir.join(name)) {
                Ok(bytes) => {
                    prop_assert!(
                        bytes == *first || bytes == *second,
                        "{key}: {} bytes, neither version", bytes.len()
                    );
                    prop_assert_eq!(reported, 0, "{} landed and failed", key);
                    landed += 1;
                }
                Err(_) => prop_assert_eq!(reported, 1, "{} neither landed nor reported", key),
            }
        }
        prop_assert_eq!(landed as u64, summary.objects);
        // What a failure may leave is its resumable temporary file, under a reserved name.
        for file in files(&dir) {
            let reserved = file.file_name().is_some_and(is_reserved);
            let name = file.to_string_lossy();
            prop_assert!(
                reserved || versions.iter().any(|(key, ..)| key.ends_with(&*name)),
                "{} is no key's file", name
            );
        }
        prop_assert_eq!(files(outside.path()).len(), files(&dir).len(), "nothing outside");
    }
}
