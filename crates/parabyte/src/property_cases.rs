//! How many cases a property test runs: `make test` runs each property's own default (with
//! the fixed seed the Makefile sets), `make fuzz` as many as `PROPTEST_CASES` asks, for as
//! long as it runs (`scripts/fuzz.sh`).

pub(crate) fn property_cases(default: u32) -> u32 {
    let asked = std::env::var("PROPTEST_CASES").ok();
    asked
        .and_then(|cases| cases.parse().ok())
        .unwrap_or(default)
}
