//! `parabyte cp http(s)://...` against a real nginx on loopback (with the counting proxy in
//! front, to see every request): parallel ranges pinned to the first response's version,
//! servers without ranges or length, redirects to presigned URLs, and files that change.

mod common;

use std::path::Path;
use std::process::Output;
use std::time::{Duration, SystemTime};

use common::{bare_parabyte, files_under, stderr, summary};
use parabyte_testkit::{
    payload, shared, shared_tls, unique_bucket_name, AfterStall, BlockingAdmin, CountingProxy,
    Fault, HostileServer, Reply, RequestKind, Rule, SeenRequest, ServerKind, Serving, TestServer,
    WebServer,
};

const MIB: u64 = 1 << 20;
const SIZE: u64 = 6 * MIB + 4321;

/// nginx serving `big.bin` (SIZE bytes of seed 1), a proxy in front, a clean directory.
struct Site {
    server: WebServer,
    proxy: CountingProxy,
    dir: tempfile::TempDir,
}

impl Site {
    fn new() -> Site {
        Site::with_server(WebServer::start().unwrap_or_else(|e| panic!("{e}")))
    }

    fn with_server(server: WebServer) -> Site {
        std::fs::write(server.root().join("big.bin"), payload(1, SIZE as usize)).unwrap();
        let proxy = CountingProxy::start(&server.endpoint());
        Site {
            server,
            proxy,
            dir: tempfile::tempdir().unwrap(),
        }
    }

    /// The URL of `path` served the `serving` way, through the proxy.
    fn url(&self, serving: Serving, path: &str) -> String {
        self.server
            .url(serving, path)
            .replace(&self.server.endpoint(), &self.proxy.endpoint())
    }

    /// `parabyte cp --json --threads 8 <extra...>` in the clean directory, with 1 MiB parts
    /// unless `extra` says otherwise (eight at a time, so those of a 6 MiB file need not
    /// grow to keep the ranges busy).
    fn cp(&self, extra: &[&str]) -> Output {
        let mut command = bare_parabyte(self.dir.path());
        command.args(["cp", "--json", "--threads", "8"]);
        if !extra.contains(&"--part-size") {
            command.args(["--part-size", "1MiB"]);
        }
        command.args(extra);
        command.output().unwrap()
    }

    fn gets(&self) -> Vec<SeenRequest> {
        self.proxy
            .requests()
            .into_iter()
            .filter(|r| r.kind == RequestKind::Get)
            .collect()
    }

    /// Replace `big.bin` with the content of `seed`, same size, a later modification time:
    /// only its ETag and Last-Modified tell the versions apart. Written aside and renamed
    /// over, as deployments do, so nginx never serves a half-written file.
    fn replace_file(root: &Path, seed: u64) {
        let staged = root.join(format!(".big.bin.{seed}"));
        std::fs::write(&staged, payload(seed, SIZE as usize)).unwrap();
        let later = SystemTime::now() + Duration::from_secs(100 * seed);
        std::fs::File::options()
            .write(true)
            .open(&staged)
            .unwrap()
            .set_modified(later)
            .unwrap();
        std::fs::rename(&staged, root.join("big.bin")).unwrap();
    }
}

fn assert_file(site: &Site, name: &str, expected: &[u8]) {
    let written = std::fs::read(site.dir.path().join(name)).unwrap();
    assert!(written == expected, "{name}: content differs");
    assert_eq!(files_under(site.dir.path()), vec![name], "no temp files");
}

#[test]
fn a_large_file_comes_as_parallel_ranges_pinned_to_its_etag() {
    let site = Site::new();
    let output = site.cp(&[&site.url(Serving::Ranges, "big.bin"), "out.bin"]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_file(&site, "out.bin", &payload(1, SIZE as usize));
    let gets = site.gets();
    assert_eq!(gets.len(), 7, "{gets:?}");
    assert_eq!(site.proxy.counts().head, 0);
    let first = gets
        .iter()
        .find(|r| r.range.as_deref() == Some("bytes=0-1048575"))
        .expect("a first part");
    assert_eq!(first.if_match, None);
    let etag = gets
        .iter()
        .find_map(|r| r.if_match.clone())
        .expect("later parts carry If-Match");
    assert!(etag.starts_with('"'), "{etag}");
    assert_eq!(
        gets.iter()
            .filter(|r| r.if_match.as_deref() == Some(etag.as_str()))
            .count(),
        6
    );
    assert_eq!(summary(&output)["requests"]["get"], 7);
}

#[test]
fn a_file_of_a_mebibyte_or_less_is_one_request_whatever_the_part_size() {
    let site = Site::new();
    let small = payload(5, MIB as usize);
    std::fs::write(site.server.root().join("small.bin"), &small).unwrap();
    let output = site.cp(&[
        "--part-size",
        "64KiB",
        &site.url(Serving::Ranges, "small.bin"),
        "./",
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_file(&site, "small.bin", &small);
    assert_eq!(site.gets().len(), 1);
}

#[test]
fn an_empty_file_is_one_request_and_an_empty_file() {
    let site = Site::new();
    std::fs::write(site.server.root().join("empty"), b"").unwrap();
    let output = site.cp(&[&site.url(Serving::Ranges, "empty"), "./"]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_file(&site, "empty", b"");
    assert_eq!(site.gets().len(), 1);
}

/// A server without Range support (a 200 with the whole file to every GET) whose body
/// breaks once: asked again, it sends the whole file again, and the bytes already written
/// are skipped, not written twice (this failed with "the server ignored the Range header").
#[test]
fn a_server_without_ranges_whose_body_breaks_is_fetched_again_whole() {
    let site = Site::new();
    site.proxy
        .inject(Rule::get().first(1), Fault::reset_after(2 * MIB + 12_345));
    let output = site.cp(&[&site.url(Serving::NoRanges, "big.bin"), "out.bin"]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_file(&site, "out.bin", &payload(1, SIZE as usize));
    let gets = site.gets();
    assert_eq!(
        gets.len(),
        2,
        "the first and the one after the break: {gets:?}"
    );
}

/// A size known from a manifest, on a server without Range support: one GET, whose whole
/// answer streams as one (this took six attempts and failed, each part answered whole).
#[test]
fn a_known_size_on_a_server_without_ranges_is_one_get() {
    let site = Site::new();
    let url = site.url(Serving::NoRanges, "big.bin");
    std::fs::write(
        site.dir.path().join("list.txt"),
        format!("{url} big.bin {SIZE}\n"),
    )
    .unwrap();
    let output = site.cp(&["--manifest", "list.txt", "out"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let written = std::fs::read(site.dir.path().join("out/big.bin")).unwrap();
    assert!(written == payload(1, SIZE as usize), "content differs");
    assert_eq!(site.gets().len(), 1, "{:?}", site.gets());
}

/// s3rver answers a range of an empty object `206 Content-Range: bytes 0-0/0`: that is an
/// empty object, one request and an empty file (it used to be retried six times, exit 1).
#[test]
fn a_206_of_nothing_is_an_empty_object_after_one_request() {
    let server = HostileServer::start(|_| {
        Reply::status(206)
            .header("content-range", "bytes 0-0/0")
            .header("etag", "\"d41d8cd98f00b204e9800998ecf8427e\"")
    });
    let dir = tempfile::tempdir().unwrap();
    let output = bare_parabyte(dir.path())
        .args([
            "cp",
            &format!("{}/empty.bin", server.endpoint()),
            "empty.bin",
        ])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(std::fs::read(dir.path().join("empty.bin")).unwrap(), b"");
    assert_eq!(server.request_count(), 1);
}

/// A server without ranges (200 with a length) or with a chunked answer of unknown length:
/// one request, streamed as one.
#[test]
fn whole_answers_stream_as_one_request() {
    for serving in [Serving::NoRanges, Serving::Chunked] {
        let site = Site::new();
        let output = site.cp(&[&site.url(serving, "big.bin"), "out.bin"]);
        assert!(output.status.success(), "{serving:?}: {}", stderr(&output));
        assert_file(&site, "out.bin", &payload(1, SIZE as usize));
        assert_eq!(site.gets().len(), 1, "{serving:?}");
        assert_eq!(summary(&output)["bytes"], SIZE, "{serving:?}");
    }
}

#[test]
fn a_file_changed_between_parts_is_fetched_again_whole() {
    for serving in [Serving::Ranges, Serving::NoEtag] {
        let site = Site::new();
        let root = site.server.root().to_owned();
        // Before the third GET reaches nginx, the file gets new content.
        let replace = site.proxy.inject(
            Rule::get().nth(3),
            Fault::hook(move |_, _| Site::replace_file(&root, 2)),
        );
        let output = site.cp(&[&site.url(serving, "big.bin"), "out.bin"]);
        assert!(output.status.success(), "{serving:?}: {}", stderr(&output));
        assert_eq!(replace.fired(), 1);
        // All of it is the new version: nothing stitched from two.
        assert_file(&site, "out.bin", &payload(2, SIZE as usize));
        let gets = site.gets();
        assert!(gets.len() > 7, "{serving:?}: fetched again: {gets:?}");
        let pinned = |r: &SeenRequest| match serving {
            Serving::NoEtag => r.if_unmodified_since.is_some(),
            _ => r.if_match.is_some(),
        };
        assert!(gets.iter().filter(|r| pinned(r)).count() >= 6, "{gets:?}");
    }
}

#[test]
fn a_file_that_keeps_changing_fails_and_leaves_nothing() {
    let site = Site::new();
    let root = site.server.root().to_owned();
    site.proxy.inject(
        Rule::get(),
        Fault::hook(move |n, _| {
            if n % 3 == 0 {
                Site::replace_file(&root, 10 + n);
            }
        }),
    );
    let output = site.cp(&[&site.url(Serving::Ranges, "big.bin"), "out.bin"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("changed during the download"),
        "{}",
        stderr(&output)
    );
    assert!(files_under(site.dir.path()).is_empty());
}

/// A fresh bucket on `store` holding `key` (SIZE bytes of `seed`).
fn bucket_with(store: &TestServer, name: &str, key: &str, seed: u64) -> (BlockingAdmin, String) {
    let admin = BlockingAdmin::for_server(store);
    let bucket = unique_bucket_name(name);
    admin.create_bucket(&bucket).unwrap();
    admin.put_generated(&bucket, key, seed, SIZE).unwrap();
    (admin, bucket)
}

/// A presigned URL of `big.bin` (SIZE bytes of seed 9) in a fresh bucket on versitygw over
/// HTTPS, and that server.
fn presigned_over_https(name: &str) -> (&'static TestServer, String) {
    let store = shared_tls(ServerKind::Versitygw);
    let (admin, bucket) = bucket_with(store, name, "big.bin", 9);
    let url = admin
        .client()
        .presign_get(&bucket, "big.bin", Duration::from_secs(600))
        .unwrap();
    (store, url)
}

#[test]
fn a_redirect_to_a_presigned_url_is_followed_once_and_secrets_never_print() {
    let store = shared(ServerKind::Versitygw);
    let (admin, bucket) = bucket_with(store, "presigned", "data/big.bin", 7);
    let store_proxy = CountingProxy::start(&store.endpoint());
    let presigned = admin
        .client()
        .with_endpoint(&store_proxy.endpoint())
        .presign_get(&bucket, "data/big.bin", Duration::from_secs(600))
        .unwrap();
    assert!(presigned.contains("X-Amz-Signature="), "{presigned}");
    let missing = admin
        .client()
        .with_endpoint(&store_proxy.endpoint())
        .presign_get(&bucket, "data/missing.bin", Duration::from_secs(600))
        .unwrap();
    let server = WebServer::start_with_redirects(&[
        ("go/big.bin", presigned.as_str()),
        ("go/missing.bin", missing.as_str()),
    ])
    .unwrap_or_else(|e| panic!("{e}"));
    let site = Site::with_server(server);
    let url = format!("{}/go/big.bin", site.proxy.endpoint());
    let output = site.cp(&[&url, "out.bin"]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_file(&site, "out.bin", &payload(7, SIZE as usize));
    // Only the first part goes through the redirect; the others go straight to the store.
    assert_eq!(site.gets().len(), 1);
    assert_eq!(store_proxy.counts().get, 7);
    let signature = presigned.split("X-Amz-Signature=").nth(1).unwrap();

    let url = format!("{}/go/missing.bin", site.proxy.endpoint());
    let output = site.cp(&[&url, "missing.bin"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let shown = format!(
        "{}{}",
        stderr(&output),
        String::from_utf8_lossy(&output.stdout)
    );
    assert!(shown.contains("go/missing.bin"), "{shown}");
    assert!(shown.contains("not found (404"), "{shown}");
    let missing_signature = missing.split("X-Amz-Signature=").nth(1).unwrap();
    for secret in [signature, missing_signature] {
        assert!(!shown.contains(secret), "secret printed: {shown}");
    }
}

#[test]
fn a_missing_file_fails_alone_with_its_url_redacted() {
    let site = Site::new();
    let url = site.url(Serving::Ranges, "nothing.bin?X-Amz-Signature=topsecret&v=1");
    let output = site.cp(&[&url, "out.bin"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let shown = format!(
        "{}{}",
        stderr(&output),
        String::from_utf8_lossy(&output.stdout)
    );
    assert!(
        shown.contains("nothing.bin?X-Amz-Signature=REDACTED&v=1 bytes=0-1048575: not found (404"),
        "{shown}"
    );
    assert!(!shown.contains("topsecret"), "{shown}");
    assert!(files_under(site.dir.path()).is_empty());
}

#[test]
fn https_urls_trust_the_system_roots_plus_the_ca_bundle() {
    let (store, url) = presigned_over_https("https-url");
    let dir = tempfile::tempdir().unwrap();
    let ca = store.ca_pem_path().unwrap().to_str().unwrap();
    let cp = |extra: &[&str]| {
        let mut command = bare_parabyte(dir.path());
        command.args(["cp", "--part-size", "1MiB"]).args(extra);
        command.args([url.as_str(), "out.bin"]).output().unwrap()
    };
    let refused = cp(&[]);
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    assert!(
        stderr(&refused).contains("--ca-bundle"),
        "{}",
        stderr(&refused)
    );
    let trusted = cp(&["--ca-bundle", ca]);
    assert!(trusted.status.success(), "{}", stderr(&trusted));
    assert!(std::fs::read(dir.path().join("out.bin")).unwrap() == payload(9, SIZE as usize));
}

/// A machine without CA certificates (a slim container) still fetches over plain HTTP: the
/// trusted roots are read at the first HTTPS handshake, which then says what to do. (They
/// were read whenever a client was made, so every run failed there.)
#[test]
fn without_trusted_roots_plain_http_works_and_https_says_what_to_do() {
    let site = Site::new();
    let nowhere = site.dir.path().join("no-certificates-here");
    let cp = |url: &str, to: &str| {
        let mut command = bare_parabyte(site.dir.path());
        command
            .env("SSL_CERT_FILE", &nowhere)
            .env("SSL_CERT_DIR", &nowhere);
        command
            .args(["cp", "--part-size", "1MiB", url, to])
            .output()
            .unwrap()
    };
    let plain = cp(&site.url(Serving::Ranges, "big.bin"), "plain.bin");
    assert!(plain.status.success(), "{}", stderr(&plain));
    assert_file(&site, "plain.bin", &payload(1, SIZE as usize));

    let (_, url) = presigned_over_https("no-roots");
    let refused = cp(&url, "secure.bin");
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    let said = stderr(&refused);
    assert!(
        said.contains("cannot read the trusted certificates"),
        "{said}"
    );
    assert!(said.contains("--ca-bundle"), "{said}");
    assert!(!site.dir.path().join("secure.bin").exists());
}

/// Ctrl-C in the middle of a large file from a web server: the next run fetches only what
/// had not reached the file, pinned to the same version (it used to fetch the whole file).
#[test]
fn an_interrupted_web_download_resumes_from_the_bytes_it_kept() {
    let site = Site::new();
    // One request for the whole file (8 MiB parts), hung after 5 MiB: the journal on the
    // temporary file records the first 4 MiB while it hangs.
    site.proxy.inject(
        Rule::get(),
        Fault::stall_after(5 * MIB, Duration::from_secs(60), AfterStall::Close),
    );
    let url = site.url(Serving::Ranges, "big.bin");
    let mut child = bare_parabyte(site.dir.path())
        .args(["cp", "--part-size", "8MiB", &url, "out.bin"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let temp = site.dir.path().join(common::temporary_name("out.bin"));
    common::wait_for("4 MiB journaled", Duration::from_secs(20), || {
        journaled(&temp) >= 4 * MIB
    });
    // SAFETY: kill only sends a signal to the child we spawned.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    let status = common::wait_for_exit(&mut child, Duration::from_secs(20));
    assert_eq!(status.code(), Some(130));
    let kept = journaled(&temp);
    assert!(kept >= 4 * MIB, "{kept} bytes kept");
    site.proxy.clear_faults();
    site.proxy.reset();
    let resumed = site.cp(&["--part-size", "8MiB", &url, "out.bin"]);
    assert!(resumed.status.success(), "{}", stderr(&resumed));
    assert_file(&site, "out.bin", &payload(1, SIZE as usize));
    assert_eq!(
        summary(&resumed)["bytes"],
        SIZE - kept,
        "only what was missing"
    );
    assert!(
        site.gets().iter().all(|get| get.if_match.is_some()),
        "pinned to the interrupted version: {:?}",
        site.gets()
    );
}

/// Bytes the journal on a temporary file vouches for (`ETAG\nSIZE\nSTART-END,...`).
fn journaled(temp: &Path) -> u64 {
    let Ok(Some(journal)) = xattr::get(temp, "user.parabyte.journal") else {
        return 0;
    };
    let journal = String::from_utf8_lossy(&journal).into_owned();
    let ranges = journal
        .splitn(3, '\n')
        .nth(2)
        .unwrap_or_default()
        .to_owned();
    ranges
        .split(',')
        .filter_map(|stretch| stretch.split_once('-'))
        .map(|(start, end)| end.parse::<u64>().unwrap() - start.parse::<u64>().unwrap())
        .sum()
}
