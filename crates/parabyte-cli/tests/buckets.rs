//! `mb` and `rb` as aws and s5cmd have them, through the real binary on real servers: a
//! bucket is made once (a second `mb` says it exists), an empty one is removed, a full one
//! is refused with a message naming --force, `rb --force` deletes every object then the
//! bucket, and a listing that fails or breaks off deletes nothing and keeps the bucket.

mod common;

use common::{bare_parabyte, run, stderr, Bed};
use http::Method;
use parabyte_testkit::{
    unique_bucket_name, Fault, HostileServer, ListPage, Reply, Rule, ServerKind,
};

const SERVERS: [ServerKind; 2] = [ServerKind::Versitygw, ServerKind::Minio];

#[test]
fn mb_makes_a_bucket_once_and_then_says_it_exists() {
    for kind in SERVERS {
        let bed = Bed::new(kind, "mb-bed");
        let bucket = unique_bucket_name("mb-new");
        let url = format!("s3://{bucket}");
        let made = run(bed.parabyte().args(["mb", &url]));
        let said = stderr(&made);
        assert_eq!(made.status.code(), Some(0), "{kind:?}: {said}");
        assert!(said.contains(&format!("make_bucket: {url}")), "{said}");
        bed.admin.put_object(&bucket, "k", "v").unwrap();
        let again = run(bed.parabyte().args(["mb", &format!("{url}/")]));
        let said = stderr(&again);
        assert_eq!(again.status.code(), Some(1), "{kind:?}: {said}");
        assert!(
            said.contains(&format!("bucket '{bucket}' already exists")),
            "{said}"
        );
        assert_eq!(bed.admin.get_object(&bucket, "k").unwrap(), "v");
        // A key is not a bucket.
        let keyed = run(bed.parabyte().args(["mb", &format!("{url}/k")]));
        assert_eq!(keyed.status.code(), Some(2), "{}", stderr(&keyed));
        assert!(
            stderr(&keyed).contains("takes a bucket"),
            "{}",
            stderr(&keyed)
        );
        bed.admin.delete_object(&bucket, "k").unwrap();
        bed.admin.delete_bucket(&bucket).unwrap();
    }
}

#[test]
fn rb_refuses_a_full_bucket_and_with_force_empties_it_then_removes_it() {
    for kind in SERVERS {
        let bed = Bed::new(kind, "rb");
        let url = format!("s3://{}", bed.bucket);
        for key in ["a", "dir/b", "dir/c"] {
            bed.admin.put_object(&bed.bucket, key, key).unwrap();
        }
        let refused = run(bed.parabyte().args(["rb", &url]));
        let said = stderr(&refused);
        assert_eq!(refused.status.code(), Some(1), "{kind:?}: {said}");
        assert!(
            said.contains("not empty") && said.contains("--force"),
            "{said}"
        );
        assert_eq!(bed.admin.get_object(&bed.bucket, "dir/b").unwrap(), "dir/b");
        let forced = run(bed.parabyte().args(["rb", "--force", &url]));
        let said = stderr(&forced);
        assert_eq!(forced.status.code(), Some(0), "{kind:?}: {said}");
        for key in ["a", "dir/b", "dir/c"] {
            assert!(said.contains(&format!("delete: {url}/{key}")), "{said}");
        }
        assert!(said.contains(&format!("remove_bucket: {url}")), "{said}");
        // The bucket is gone: removing it again names it as missing.
        let gone = run(bed.parabyte().args(["rb", &url]));
        let said = stderr(&gone);
        assert_eq!(gone.status.code(), Some(2), "{kind:?}: {said}");
        assert!(said.contains("does not exist"), "{said}");
    }
}

#[test]
fn rb_removes_an_empty_bucket() {
    for kind in SERVERS {
        let bed = Bed::new(kind, "rb-empty");
        let url = format!("s3://{}", bed.bucket);
        let removed = run(bed.parabyte().args(["rb", &url]));
        let said = stderr(&removed);
        assert_eq!(removed.status.code(), Some(0), "{kind:?}: {said}");
        assert!(said.contains(&format!("remove_bucket: {url}")), "{said}");
        assert!(bed.admin.put_object(&bed.bucket, "k", "v").is_err());
    }
}

#[test]
fn rb_force_through_a_failing_listing_deletes_nothing_and_keeps_the_bucket() {
    for kind in SERVERS {
        let bed = Bed::new(kind, "rb-list");
        let url = format!("s3://{}", bed.bucket);
        for key in ["a", "b"] {
            bed.admin.put_object(&bed.bucket, key, key).unwrap();
        }
        let failing = bed
            .proxy
            .inject(Rule::list(), Fault::error(500, "InternalError"));
        let output = run(bed.parabyte().args(["rb", "--force", &url]));
        let said = stderr(&output);
        assert_eq!(output.status.code(), Some(1), "{kind:?}: {said}");
        assert!(failing.fired() > 0, "{said}");
        assert!(said.contains("nothing was deleted"), "{said}");
        assert!(
            !said.contains("delete:") && !said.contains("remove_bucket"),
            "{said}"
        );
        let deletes: Vec<_> = bed
            .proxy
            .requests()
            .into_iter()
            .filter(|request| matches!(request.method, Method::DELETE | Method::POST))
            .collect();
        assert!(deletes.is_empty(), "{deletes:?}");
        failing.remove();
        for key in ["a", "b"] {
            assert_eq!(bed.admin.get_object(&bed.bucket, key).unwrap(), key);
        }
    }
}

#[test]
fn rb_force_whose_listing_breaks_after_a_page_deletes_not_even_that_page() {
    // Page one lists two keys; the page after it fails every time it is asked for.
    let store = HostileServer::start(|request| {
        if request.is_listing() {
            match request.query_param("continuation-token") {
                None => ListPage::new("")
                    .object("a", 1)
                    .object("b", 1)
                    .truncated(Some("next"))
                    .reply(request),
                Some(_) => Reply::s3_error(500, "InternalError", "page two is lost"),
            }
        } else {
            Reply::s3_error(500, "InternalError", "nothing else answers")
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let output = bare_parabyte(dir.path())
        .env("AWS_ACCESS_KEY_ID", "hostile")
        .env("AWS_SECRET_ACCESS_KEY", "hostile-secret")
        .env("AWS_REGION", "us-east-1")
        .env("AWS_ENDPOINT_URL", store.endpoint())
        .args(["rb", "--force", "s3://bucket"])
        .output()
        .unwrap();
    let said = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{said}");
    assert!(said.contains("nothing was deleted"), "{said}");
    let sent: Vec<_> = store.requests();
    assert!(sent.iter().all(|request| request.is_listing()), "{sent:?}");
    assert!(
        sent.iter()
            .any(|request| request.query_param("continuation-token").is_some()),
        "{sent:?}"
    );
}
