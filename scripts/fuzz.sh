#!/usr/bin/env bash
# make fuzz: each fuzz property (the `fuzz` test modules of crates/parabyte: listing pages in
# chunks, bucket lists and error documents, checksum headers, Content-Range answers, manifest
# lines, arguments and URLs, wildcard patterns) and each write-side property (sync's and
# mv's deletes, the multipart writers' commits) and the download's strongest check run alone with endless cases for
# FUZZ_SECONDS (default 60) each, in a release build. A property that runs out its time has
# found nothing; one that fails prints its smallest failing input and the script exits 1.
# proptest keeps each failure in crates/parabyte/proptest-regressions/: make it a test.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_EACH="${FUZZ_SECONDS:-60}"
PROPERTIES=(
  source::s3::fuzz::a_listing_page_in_any_chunks_reads_as_the_whole_page
  source::s3::fuzz::bucket_lists_and_error_documents_never_panic
  source::s3::fuzz::checksum_headers_never_panic
  source::answer::tests::fuzz::any_status_and_range_headers_give_a_shape_or_an_error
  manifest::download::tests::fuzz::every_line_is_an_item_or_a_named_error
  location::tests::fuzz::any_argument_is_classified
  pattern::tests::fuzz::any_pattern_against_any_name_answers
  # The write side's gates: what a sync deletes, what a move deletes, what a writer commits.
  driver::tests::sync::sync_sends_and_deletes_exactly_the_difference_and_nothing_after_a_broken_listing
  driver::tests::sync::a_sync_up_deletes_only_what_a_source_read_whole_lacks
  driver::tests::sync::a_sync_down_deletes_only_what_a_source_read_whole_lacks
  driver::tests::moves::a_move_deletes_exactly_the_sources_whose_copies_were_compared_equal
  transfer::upload::tests::every_writer_stores_the_whole_source_or_nothing_and_leaves_no_upload_open
  # The read side's check: the strongest the store offered, whatever its HEADs do.
  transfer::engine::tests::strongest_check::a_saved_object_was_checked_by_the_strongest_check_the_store_offered
)
cargo test --release --locked -p parabyte --lib --no-run
# A property renamed or moved would otherwise match no test and "pass" in no time.
listed=$(cargo test --release --locked -p parabyte --lib -- --list --format terse 2>/dev/null)
for property in "${PROPERTIES[@]}"; do
  if ! grep -qxF "$property: test" <<< "$listed"; then
    echo "fuzz: no property $property in crates/parabyte (renamed? fix PROPERTIES)" >&2
    exit 2
  fi
done
failed=0
for property in "${PROPERTIES[@]}"; do
  started=$(date +%s)
  status=0
  PROPTEST_CASES=1000000000 timeout "$SECONDS_EACH" \
    cargo test --release --locked -p parabyte --lib -- --exact "$property" --quiet \
    > "/tmp/parabyte-fuzz.log" 2>&1 || status=$?
  elapsed=$(( $(date +%s) - started ))
  case "$status" in
    124) echo "fuzz: $property: ${elapsed}s, no failure" ;;
    0) echo "fuzz: $property: finished its cases in ${elapsed}s, no failure" ;;
    *) echo "fuzz: $property FAILED after ${elapsed}s:"; tail -40 /tmp/parabyte-fuzz.log; failed=1 ;;
  esac
done
exit "$failed"
