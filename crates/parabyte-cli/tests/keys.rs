//! S3 keys are opaque: a key is requested exactly as it is or not at all. The test kit's
//! HostileServer shows the raw request target each request arrived with.

mod common;

use std::process::Output;

use common::{bare_parabyte, files_under, stderr};
use parabyte_testkit::{HostileServer, ListPage, Reply};

/// A store that serves any key, with the key as its content, and lists `listed` under `p/`.
fn store(listed: &'static [&'static str]) -> HostileServer {
    HostileServer::start(move |request| {
        if request.is_listing() {
            let page = listed.iter().fold(ListPage::new("p/"), |page, key| {
                page.object(key, key.len() as u64)
            });
            return page.reply(request);
        }
        let (_, key) = request.bucket_and_key();
        Reply::object(request, key.as_bytes(), Some("\"hostile-1\""))
    })
}

fn parabyte(store: &HostileServer, dir: &std::path::Path, args: &[&str]) -> Output {
    bare_parabyte(dir)
        .env("AWS_ACCESS_KEY_ID", "hostile")
        .env("AWS_SECRET_ACCESS_KEY", "hostile-secret")
        .env("AWS_REGION", "us-east-1")
        .env("AWS_ENDPOINT_URL", store.endpoint())
        .args(args)
        .output()
        .unwrap()
}

/// The raw targets of the object GETs the store received.
fn object_gets(store: &HostileServer) -> Vec<String> {
    store
        .requests()
        .iter()
        .filter(|request| !request.is_listing())
        .map(|request| request.target.clone())
        .collect()
}

#[test]
fn a_dot_segment_key_is_never_fetched_as_another_object() {
    let store = store(&[]);
    let dir = tempfile::tempdir().unwrap();

    // Normalised, `dir/../x` would be `x`: another object saved under the name.
    let output = parabyte(
        &store,
        dir.path(),
        &["cp", "s3://bucket/dir/../x", "out.bin"],
    );
    let text = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(
        text.contains("key 'dir/../x' cannot be requested: it has a '..' path segment"),
        "{text}"
    );
    assert!(object_gets(&store).is_empty(), "{:?}", object_gets(&store));
    assert!(
        files_under(dir.path()).is_empty(),
        "{:?}",
        files_under(dir.path())
    );
}

#[test]
fn a_key_ending_in_a_dot_segment_leaves_nothing_beside_the_destination() {
    let store = store(&[]);
    let parent = tempfile::tempdir().unwrap();
    let dest = parent.path().join("dest");
    std::fs::create_dir(&dest).unwrap();

    for key in ["x/..", "x/."] {
        let url = format!("s3://bucket/{key}");
        let output = parabyte(&store, parent.path(), &["cp", &url, "dest/"]);
        let text = stderr(&output);
        assert_eq!(output.status.code(), Some(1), "{key}: {text}");
        assert!(
            text.contains(&format!("key '{key}' cannot be saved as a file")),
            "{text}"
        );
        assert!(
            files_under(parent.path()).is_empty(),
            "{key}: {:?}",
            files_under(parent.path())
        );
    }
    assert!(object_gets(&store).is_empty(), "{:?}", object_gets(&store));
}

#[test]
fn a_listed_dot_segment_key_is_reported_unsafe_and_the_rest_is_saved() {
    let store = store(&["p/a", "p/a/../b", "p/c"]);
    let dir = tempfile::tempdir().unwrap();

    let output = parabyte(
        &store,
        dir.path(),
        &["cp", "--recursive", "s3://bucket/p/", "dest"],
    );
    let text = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(
        text.contains("key 'p/a/../b' cannot be saved as a file: it has a '..' path segment"),
        "{text}"
    );
    assert!(!text.contains("collides"), "{text}");
    assert_eq!(files_under(&dir.path().join("dest")), vec!["a", "c"]);
    let mut gets = object_gets(&store);
    gets.sort();
    assert_eq!(gets, vec!["/bucket/p/a", "/bucket/p/c"]);
}
