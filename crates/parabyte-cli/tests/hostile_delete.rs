//! Deletes against a store that answers DeleteObjects as a failing or lying one may: errors
//! for some keys inside a 200, a 200 that is an `<Error>`, an answer that is no XML. A key
//! is reported deleted only where the store said so (in quiet mode: by not naming it);
//! every other one is a failure of its own (exit 1), for `rm` and `sync --delete` alike.

mod common;

use std::process::Output;

use common::{bare_parabyte, stderr};
use parabyte_testkit::{HostileServer, ListPage, Received, Reply};

/// A store listing `p/a` and `p/b`, whose DeleteObjects answer is `answer`.
fn store(answer: fn(&Received) -> Reply) -> HostileServer {
    HostileServer::start(move |request| {
        if request.is_listing() {
            ListPage::new("p/")
                .object("p/a", 1)
                .object("p/b", 1)
                .reply(request)
        } else if request.query_param("delete").is_some() {
            answer(request)
        } else {
            Reply::s3_error(404, "NoSuchKey", "nothing else is here")
        }
    })
}

fn parabyte(store: &HostileServer, args: &[&str]) -> (Output, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("empty")).unwrap();
    let output = bare_parabyte(dir.path())
        .env("AWS_ACCESS_KEY_ID", "hostile")
        .env("AWS_SECRET_ACCESS_KEY", "hostile-secret")
        .env("AWS_REGION", "us-east-1")
        .env("AWS_ENDPOINT_URL", store.endpoint())
        .args(args)
        .output()
        .unwrap();
    (output, dir)
}

fn xml(body: &str) -> Reply {
    Reply::status(200)
        .header("content-type", "application/xml")
        .body(body.to_owned())
}

#[test]
fn errors_for_some_keys_inside_a_200_fail_those_keys_only() {
    let store = store(|_| {
        xml(
            "<DeleteResult><Error><Key>p/b</Key><Code>AccessDenied</Code>\
             <Message>not yours</Message></Error></DeleteResult>",
        )
    });
    let (rm, _dir) = parabyte(&store, &["rm", "-r", "s3://bucket/p/"]);
    let said = stderr(&rm);
    assert_eq!(rm.status.code(), Some(1), "{said}");
    assert!(said.contains("delete: s3://bucket/p/a"), "{said}");
    assert!(!said.contains("delete: s3://bucket/p/b"), "{said}");
    assert!(said.contains("s3://bucket/p/b") && said.contains("AccessDenied"));
    // An empty directory synced with --delete, asked to empty the prefix: both keys go,
    // one is refused.
    let (sync, _dir) = parabyte(
        &store,
        &[
            "sync",
            "--json",
            "--delete",
            "--delete-if-source-empty",
            "empty",
            "s3://bucket/p/",
        ],
    );
    assert_eq!(sync.status.code(), Some(1), "{}", stderr(&sync));
    let summary: serde_json::Value = serde_json::from_slice(&sync.stdout).unwrap();
    assert_eq!(
        (summary["deleted"].as_u64(), summary["failed"].as_u64()),
        (Some(1), Some(1))
    );
    assert!(summary["failures"][0]["source"]
        .as_str()
        .unwrap()
        .ends_with("p/b"));
}

#[test]
fn an_answer_that_is_no_result_deletes_nothing_it_can_vouch_for() {
    let answers: [fn(&Received) -> Reply; 2] = [
        |_| xml("<Error><Code>InternalError</Code><Message>inside a 200</Message></Error>"),
        |_| xml("<DeleteResult><Error><Key>p/a"),
    ];
    for answer in answers {
        let store = store(answer);
        let (rm, _dir) = parabyte(&store, &["rm", "-r", "s3://bucket/p/"]);
        assert_eq!(rm.status.code(), Some(1), "{}", stderr(&rm));
        assert!(
            !stderr(&rm).contains("delete:"),
            "reported deleted: {}",
            stderr(&rm)
        );
        assert!(
            stderr(&rm).contains("p/a") && stderr(&rm).contains("p/b"),
            "{}",
            stderr(&rm)
        );
    }
}
