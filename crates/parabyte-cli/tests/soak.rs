//! A bounded soak: the same prefix downloaded round after round through a proxy that keeps
//! throttling, resetting, truncating and stalling responses. Every round must end with every
//! byte right and nothing else on disk. `PARABYTE_SOAK_ROUNDS` runs longer (docs/LOAD.md).

mod common;

use std::time::Duration;

use common::{files_under, run, stderr, summary, Bed};
use parabyte_testkit::{payload, AfterStall, Fault, Rule, ServerKind};

const ROUNDS: u64 = 4;

#[test]
fn repeated_downloads_under_faults_lose_and_mix_nothing() {
    let rounds = std::env::var("PARABYTE_SOAK_ROUNDS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(ROUNDS)
        .min(10_000);
    let bed = Bed::new(ServerKind::Versitygw, "soak");
    let sizes = [0u64, 1, 1024, 300_000, 1 << 20, (3 << 20) + 17];
    let objects: Vec<(String, Vec<u8>)> = (0..36u64)
        .map(|i| {
            let size = sizes[i as usize % sizes.len()];
            (format!("set/{i:02}"), payload(i + 500, size as usize))
        })
        .collect();
    bed.admin.fill(&bed.bucket, objects.clone()).unwrap();

    let faults = [
        bed.proxy
            .inject(Rule::get().every_nth(7), Fault::error(503, "SlowDown")),
        bed.proxy
            .inject(Rule::get().every_nth(5), Fault::reset_after(100_000)),
        bed.proxy
            .inject(Rule::get().every_nth(11), Fault::truncate_after(50_000)),
        bed.proxy.inject(
            Rule::get().every_nth(13),
            Fault::stall_after(10_000, Duration::from_secs(3), AfterStall::Reset),
        ),
        bed.proxy.inject(
            Rule::list().every_nth(3),
            Fault::error(500, "InternalError"),
        ),
    ];
    let mut retries = 0;
    for round in 0..rounds {
        let out = format!("round-{round}");
        let output = run(bed.parabyte().args([
            "cp",
            "--json",
            "--part-size",
            "1MiB",
            "--timeout",
            "1",
            "--retries",
            "10",
            &bed.url("set/"),
            &out,
        ]));
        assert!(
            output.status.success(),
            "round {round}: {}",
            stderr(&output)
        );
        retries += summary(&output)["retries"].as_u64().unwrap();
        let mut names: Vec<String> = objects.iter().map(|(key, _)| key[4..].to_owned()).collect();
        names.sort();
        assert_eq!(
            files_under(&bed.path(&out)),
            names,
            "round {round}: no temp files"
        );
        for (key, bytes) in &objects {
            let written = std::fs::read(bed.path(&format!("{out}/{}", &key[4..]))).unwrap();
            assert!(written == *bytes, "round {round}: {key} differs");
        }
        std::fs::remove_dir_all(bed.path(&out)).unwrap();
    }
    let fired: Vec<u64> = faults.iter().map(|fault| fault.fired()).collect();
    assert!(
        fired.iter().all(|&n| n > 0),
        "every kind of fault happened: {fired:?}"
    );
    eprintln!("soak: {rounds} rounds, faults fired {fired:?}, {retries} retries");
}
