//! A bucket in another region than the one parabyte was given: the store's answer names
//! the right region (MinIO and S3 in `x-amz-bucket-region`, all three in the error body, S3
//! also as a 301 PermanentRedirect), parabyte signs the request again for it once, and
//! remembers it for the rest of the run, so only the first request fails. The region never
//! moves requests to another host.

mod common;

use std::process::Output;

use common::{bare_parabyte, files_under, run, stderr, Bed};
use parabyte_testkit::{
    payload, unique_bucket_name, BlockingAdmin, CountingProxy, HostileServer, ListPage, Received,
    Reply, ServerKind, TestServer,
};

const OBJECTS: u64 = 6;

/// `parabyte ARGS` through `proxy` with the server's keys and no region: us-east-1.
fn parabyte(
    server: &TestServer,
    proxy: &CountingProxy,
    dir: &std::path::Path,
) -> assert_cmd::Command {
    let mut command = bare_parabyte(dir);
    command
        .env("AWS_ACCESS_KEY_ID", server.access_key())
        .env("AWS_SECRET_ACCESS_KEY", server.secret_key())
        .env("AWS_ENDPOINT_URL", proxy.endpoint());
    assert_cmd::Command::from_std(command)
}

fn succeeded(output: &Output) {
    assert_eq!(output.status.code(), Some(0), "{}", stderr(output));
}

#[test]
fn a_minio_in_another_region_is_signed_for_after_one_refusal() {
    let server = TestServer::start_in_region(ServerKind::Minio, "eu-central-1").unwrap();
    let admin = BlockingAdmin::for_server(&server);
    let bucket = unique_bucket_name("region");
    admin.create_bucket(&bucket).unwrap();
    admin
        .fill(
            &bucket,
            (0..OBJECTS).map(|i| (format!("d/{i}"), payload(i, 100 + i as usize))),
        )
        .unwrap();
    let proxy = CountingProxy::start(&server.endpoint());
    let dir = tempfile::tempdir().unwrap();

    // A prefix: the first listing page is refused, then every request is signed right.
    let output = run(parabyte(&server, &proxy, dir.path()).args([
        "cp",
        &format!("s3://{bucket}/d/"),
        "out",
    ]));
    succeeded(&output);
    let counts = proxy.counts();
    assert_eq!((counts.list, counts.get), (2, OBJECTS), "{counts:?}");
    assert_eq!(files_under(&dir.path().join("out")).len(), OBJECTS as usize);
    for i in 0..OBJECTS {
        let file = dir.path().join(format!("out/{i}"));
        assert_eq!(std::fs::read(file).unwrap(), payload(i, 100 + i as usize));
    }

    // One object: its first GET is refused, the second arrives.
    proxy.reset();
    let output = run(parabyte(&server, &proxy, dir.path()).args([
        "cp",
        &format!("s3://{bucket}/d/3"),
        "one",
    ]));
    succeeded(&output);
    assert_eq!(proxy.counts().get, 2);
    assert_eq!(
        std::fs::read(dir.path().join("one")).unwrap(),
        payload(3, 103)
    );

    // A manifest: its objects start together, yet only the first is refused.
    proxy.reset();
    let manifest: String = (0..OBJECTS)
        .map(|i| format!("s3://{bucket}/d/{i}\n"))
        .collect();
    std::fs::write(dir.path().join("list.txt"), manifest).unwrap();
    let output =
        run(parabyte(&server, &proxy, dir.path()).args(["cp", "--manifest", "list.txt", "many"]));
    succeeded(&output);
    assert_eq!(proxy.counts().get, OBJECTS + 1);
    assert_eq!(
        files_under(&dir.path().join("many")).len(),
        OBJECTS as usize
    );

    // ls, one level and recursive.
    proxy.reset();
    for args in [&["ls"][..], &["ls", "-r"][..]] {
        let output = run(parabyte(&server, &proxy, dir.path())
            .args(args)
            .arg(format!("s3://{bucket}/d/")));
        succeeded(&output);
        let text = String::from_utf8(output.stdout).unwrap();
        assert_eq!(text.lines().count() as u64, OBJECTS, "{text}");
    }
    assert_eq!(proxy.counts().list, 4, "one refusal per run");
}

#[test]
fn versitygw_names_the_region_in_its_error_body_and_parabyte_follows() {
    let bed = Bed::new(ServerKind::Versitygw, "region");
    bed.admin
        .fill(
            &bed.bucket,
            [("d/k", payload(1, 10)), ("d/l", payload(2, 20))],
        )
        .unwrap();
    // versitygw sends no x-amz-bucket-region: only the error body's <Region> names it.
    for (source, destination, requests) in [(bed.url("d/k"), "one/", 2), (bed.url("d/"), "all/", 4)]
    {
        bed.proxy.reset();
        let output =
            run(bed
                .parabyte()
                .env("AWS_REGION", "eu-west-1")
                .args(["cp", &source, destination]));
        succeeded(&output);
        let counts = bed.proxy.counts();
        assert_eq!(counts.get + counts.list, requests, "{source}: {counts:?}");
    }
    assert_eq!(std::fs::read(bed.path("one/k")).unwrap(), payload(1, 10));
    assert_eq!(files_under(&bed.path("all")), ["k", "l"]);
    assert_eq!(std::fs::read(bed.path("all/l")).unwrap(), payload(2, 20));
}

/// The credential scope's region in a SigV4 Authorization header.
fn signed_region(request: &Received) -> String {
    let authorization = request.header("authorization").unwrap_or_default();
    let scope = authorization
        .split("Credential=")
        .nth(1)
        .and_then(|rest| rest.split(',').next())
        .unwrap_or_default();
    scope.split('/').nth(2).unwrap_or_default().to_owned()
}

/// What S3 answers a request for a bucket elsewhere: 301 PermanentRedirect, the bucket's
/// region in `x-amz-bucket-region`, and in the body an endpoint at another host.
fn permanent_redirect(region: &str) -> Reply {
    Reply::status(301)
        .header("x-amz-bucket-region", region)
        .header("content-type", "application/xml")
        .body(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>PermanentRedirect</Code>\
             <Message>The bucket you are attempting to access must be addressed using the specified endpoint.</Message>\
             <Endpoint>bucket.s3.eu-west-2.amazonaws.invalid</Endpoint><Bucket>bucket</Bucket></Error>",
        )
}

#[test]
fn a_permanent_redirect_naming_the_region_is_signed_again_at_the_same_host() {
    let store = HostileServer::start(|request| {
        if signed_region(request) != "eu-west-2" {
            return permanent_redirect("eu-west-2");
        }
        if request.is_listing() {
            ListPage::new("p/")
                .object("p/a", 3)
                .object("p/b", 3)
                .reply(request)
        } else {
            Reply::object(request, b"abc", Some("\"e\""))
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let output = bare_parabyte(dir.path())
        .env("AWS_ACCESS_KEY_ID", "id")
        .env("AWS_SECRET_ACCESS_KEY", "secret")
        .env("AWS_REGION", "us-east-1")
        .env("AWS_ENDPOINT_URL", store.endpoint())
        .args(["cp", "s3://bucket/p/", "out"])
        .output()
        .unwrap();
    succeeded(&output);
    assert_eq!(files_under(&dir.path().join("out")), ["a", "b"]);
    let requests = store.requests();
    let regions: Vec<String> = requests.iter().map(signed_region).collect();
    assert_eq!(
        regions,
        ["us-east-1", "eu-west-2", "eu-west-2", "eu-west-2"]
    );
    let host = store.endpoint().trim_start_matches("http://").to_owned();
    assert!(
        requests
            .iter()
            .all(|seen| seen.header("host") == Some(&host)),
        "{requests:?}"
    );
}

#[test]
fn a_region_answer_that_points_elsewhere_sends_nothing_there() {
    // S3's 301 names the region, and this one also carries a Location at another host that
    // serves other bytes: the region changes the signature, and nothing else.
    let elsewhere = HostileServer::start(|request| Reply::object(request, b"evil", Some("\"x\"")));
    let location = format!("{}/bucket/k.bin", elsewhere.endpoint());
    let store = HostileServer::start(move |request| {
        if signed_region(request) != "eu-west-2" {
            return permanent_redirect("eu-west-2").header("location", &location);
        }
        Reply::object(request, b"abc", Some("\"e\""))
    });
    let dir = tempfile::tempdir().unwrap();
    let output = bare_parabyte(dir.path())
        .env("AWS_ACCESS_KEY_ID", "id")
        .env("AWS_SECRET_ACCESS_KEY", "secret")
        .env("AWS_REGION", "us-east-1")
        .env("AWS_ENDPOINT_URL", store.endpoint())
        .args(["cp", "s3://bucket/k.bin", "out.bin"])
        .output()
        .unwrap();
    succeeded(&output);
    assert_eq!(std::fs::read(dir.path().join("out.bin")).unwrap(), b"abc");
    assert_eq!(elsewhere.request_count(), 0, "the Location was never asked");
}

#[test]
fn a_region_answer_is_followed_once_and_only_when_it_is_a_region_name() {
    let dir = tempfile::tempdir().unwrap();
    for (named, requests) in [("eu-west-2", 2), ("evil.example:80/x", 1)] {
        // Refuses every signature, whatever its region.
        let answer = named.to_owned();
        let store = HostileServer::start(move |_| permanent_redirect(&answer));
        let output = bare_parabyte(dir.path())
            .env("AWS_ACCESS_KEY_ID", "id")
            .env("AWS_SECRET_ACCESS_KEY", "secret")
            .env("AWS_REGION", "us-east-1")
            .env("AWS_ENDPOINT_URL", store.endpoint())
            .args(["ls", "s3://bucket/p/"])
            .output()
            .unwrap();
        let text = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{named}: {text}");
        assert!(
            text.contains("another region") && text.contains("PermanentRedirect"),
            "{named}: {text}"
        );
        assert_eq!(store.request_count(), requests, "{named}");
    }
}
