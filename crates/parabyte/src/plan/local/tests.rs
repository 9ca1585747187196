//! The planner's own checks, before any walk.

use std::fs;

use super::*;

#[test]
fn a_destination_inside_the_source_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("src");
    fs::create_dir(&source).unwrap();
    let error = refuse_copy_into_itself(&source, &source.join("new/deeper"))
        .unwrap_err()
        .to_string();
    assert!(error.contains("inside it"), "{error}");
    assert!(refuse_copy_into_itself(&source, &dir.path().join("dst")).is_ok());
}
