//! `parabyte cp --manifest FILE DEST`: S3 keys and URLs in one run, sizes known up front
//! (no probing), bad lines named by number while the rest is copied.

mod common;

use common::{files_under, run, stderr, summary, Bed};
use std::time::Duration;

use parabyte_testkit::{
    payload, CountingProxy, Fault, RequestKind, Rule, ServerKind, Serving, WebServer,
};

const MIB: u64 = 1 << 20;
const BIG: u64 = 3 * MIB + 5;
const SMALL: u64 = 5000;
const WEB: u64 = 2 * MIB + 1;

#[test]
fn a_manifest_mixes_stores_and_web_servers_and_reports_bad_lines() {
    let bed = Bed::new(ServerKind::Versitygw, "manifest");
    let etag = put_big_and_small(&bed, "a/big.bin", "a/small.txt");
    let web = WebServer::start().unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(web.root().join("w.bin"), payload(3, WEB as usize)).unwrap();
    let web_proxy = CountingProxy::start(&web.endpoint());
    let web_url = web
        .url(Serving::Ranges, "w.bin")
        .replace(&web.endpoint(), &web_proxy.endpoint());
    let manifest = format!(
        "# SOURCE DEST SIZE ETAG\n\
         {big} big.bin {BIG} {etag}\n\
         {small}\ttexts/small copy.txt\t{SMALL}\n\
         {web_url} web/w.bin {WEB}\n\
         {{\"source\": \"{small}\", \"dest\": \"json/small.txt\", \"size\": {SMALL}}}\n\
         {small} ../escape.txt\n\
         ./not-a-url\n\
         {web_url}\n",
        big = bed.url("a/big.bin"),
        small = bed.url("a/small.txt"),
    );
    std::fs::write(bed.path("list.txt"), manifest).unwrap();
    let output = run(bed.parabyte().args([
        "cp",
        "--json",
        "--part-size",
        "1MiB",
        "--manifest",
        "list.txt",
        "out",
    ]));
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let err = stderr(&output);
    assert!(
        err.contains(
            "list.txt:6: destination '../escape.txt' cannot be used: it has a '..' path segment"
        ),
        "{err}"
    );
    assert!(
        err.contains("list.txt:7: './not-a-url' is not a URL"),
        "{err}"
    );
    let json = summary(&output);
    assert_eq!(json["objects"], 5);
    assert_eq!(json["failed"], 2);

    let out = bed.path("out");
    assert_eq!(
        files_under(&out),
        vec![
            "big.bin",
            "json/small.txt",
            "texts/small copy.txt",
            "w.bin",
            "web/w.bin"
        ]
    );
    let read = |name: &str| std::fs::read(out.join(name)).unwrap();
    assert!(read("big.bin") == payload(1, BIG as usize));
    assert!(read("texts/small copy.txt") == payload(2, SMALL as usize));
    assert!(read("json/small.txt") == payload(2, SMALL as usize));
    assert!(read("web/w.bin") == payload(3, WEB as usize));
    assert!(read("w.bin") == payload(3, WEB as usize));

    // Known sizes: one GET per part and one HEAD for the checksum of the big one, pinned
    // from its first byte.
    let s3_gets: Vec<_> = bed
        .proxy
        .requests()
        .into_iter()
        .filter(|r| r.kind == RequestKind::Get)
        .collect();
    let big_gets: Vec<_> = s3_gets
        .iter()
        .filter(|r| r.path.ends_with("big.bin"))
        .collect();
    assert_eq!(big_gets.len(), 4, "{big_gets:?}");
    assert!(big_gets
        .iter()
        .all(|r| r.if_match.as_deref() == Some(etag.as_str())));
    assert_eq!(s3_gets.len(), 4 + 2);
    assert_eq!(bed.proxy.counts().head, 1);
    // web/w.bin (size known) is three parts; w.bin (size unknown) is a first part, then two.
    assert_eq!(web_proxy.counts().get, 3 + 3);
}

/// The seeds' headline path: sizes known up front must keep as many requests in flight as a
/// listing does. The first GET settles the bucket's region; the objects that waited for it
/// then go together, not each holding the turn for its own round trip (which made 1000 small
/// objects from a manifest three times slower than the same objects listed).
#[test]
fn objects_of_known_size_go_out_together_once_the_region_is_settled() {
    let bed = Bed::new(ServerKind::Versitygw, "known-sizes");
    const OBJECTS: u64 = 24;
    let objects: Vec<(String, Vec<u8>)> = (0..OBJECTS)
        .map(|i| (format!("k/{i:03}"), payload(i, 1024)))
        .collect();
    bed.admin.fill(&bed.bucket, objects).unwrap();
    let manifest: String = (0..OBJECTS)
        .map(|i| format!("{} - 1024\n", bed.url(&format!("k/{i:03}"))))
        .collect();
    std::fs::write(bed.path("known.txt"), manifest).unwrap();
    // Every GET waits for its headers, so requests overlap as they do over a network.
    bed.proxy.inject(
        Rule::get(),
        Fault::delay_headers(Duration::from_millis(200)),
    );
    let output = run(bed.parabyte().args([
        "cp",
        "--json",
        "--workers",
        "16",
        "--manifest",
        "known.txt",
        "out",
    ]));
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(summary(&output)["objects"], OBJECTS);
    assert_eq!(summary(&output)["requests"]["get"], OBJECTS);
    let most = bed.proxy.in_flight_at_arrivals().into_iter().max().unwrap();
    // One at a time, each request arrives alone (at most the one before still finishing).
    assert!(most >= 8, "at most {most} GETs in flight of 16 workers");
}

/// A hostile value fails its own object only: an ETag no request header can carry (it used
/// to stop the whole run with exit 2, "cannot sign GET request") and a size beyond any
/// object (it used to abort the process on the allocation of its plan of parts).
#[test]
fn a_hostile_etag_or_size_fails_its_own_object_and_the_rest_goes_on() {
    let bed = Bed::new(ServerKind::Versitygw, "hostile-values");
    for (i, key) in ["v/good", "v/etag", "v/size"].iter().enumerate() {
        bed.admin
            .put_object(&bed.bucket, key, payload(i as u64, 5000))
            .unwrap();
    }
    let manifest = format!(
        "{good} good.bin 5000\n\
         {{\"source\": \"{etag}\", \"dest\": \"etag.bin\", \"size\": 5000, \"etag\": \"\\\"ab\\u0001c\\\"\"}}\n\
         {size} size.bin 1000000000000000000\n",
        good = bed.url("v/good"),
        etag = bed.url("v/etag"),
        size = bed.url("v/size"),
    );
    std::fs::write(bed.path("hostile.txt"), manifest).unwrap();
    let output = run(bed
        .parabyte()
        .args(["cp", "--json", "--manifest", "hostile.txt", "out"]));
    let text = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert_eq!(summary(&output)["objects"], 1, "{text}");
    assert_eq!(
        std::fs::read(bed.path("out/good.bin")).unwrap(),
        payload(0, 5000)
    );
    assert!(text.contains(&bed.url("v/etag")) && text.contains("no request header can carry"));
    assert!(text.contains(&bed.url("v/size")) && text.contains("more than the 5 TiB"));
    assert!(
        !text.contains('\u{1}'),
        "the control character is escaped: {text}"
    );
    assert_eq!(files_under(&bed.path("out")), vec!["good.bin"]);
}

/// `cp --manifest FILE s3://bucket/prefix/`: local files uploaded, objects copied inside the
/// store and web files streamed in, each to the key its line names; bad lines and sources
/// that cannot go (a link, a missing file, a missing object) reported, the rest stored.
fn a_manifest_into_s3_mixes_files_objects_and_web_files(kind: ServerKind) {
    let bed = Bed::new(kind, "manifest-up");
    let etag = put_big_and_small(&bed, "src/obj.bin", "src/small.txt");
    std::fs::create_dir_all(bed.path("files")).unwrap();
    std::fs::write(bed.path("files/a.txt"), payload(4, 1000)).unwrap();
    std::fs::write(bed.path("files/b.bin"), payload(5, 2 * MIB as usize)).unwrap();
    std::os::unix::fs::symlink("a.txt", bed.path("files/link")).unwrap();
    let web = WebServer::start().unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(web.root().join("w.bin"), payload(3, WEB as usize)).unwrap();
    let web_url = web.url(Serving::Ranges, "w.bin");
    let manifest = format!(
        "files/a.txt\n\
         {b}\tsub/b copy.bin\n\
         {obj} copies/obj.bin {BIG} {etag}\n\
         {small} {elsewhere}\n\
         {web_url} web/w.bin {WEB}\n\
         files/a.txt ../escape.txt\n\
         files/link\n\
         files/missing.txt\n\
         {absent} gone.bin\n",
        b = bed.path("files/b.bin").display(),
        obj = bed.url("src/obj.bin"),
        small = bed.url("src/small.txt"),
        elsewhere = bed.url("elsewhere/small.txt"),
        absent = bed.url("src/absent"),
    );
    std::fs::write(bed.path("up.txt"), manifest).unwrap();

    // A dry run says what each line would send, and sends nothing.
    let dry = run(bed
        .parabyte()
        .args(["cp", "--dryrun", "--manifest", "up.txt", &bed.url("in/")]));
    let stdout = String::from_utf8_lossy(&dry.stdout);
    for line in [
        format!("(dryrun) upload: files/a.txt to {}", bed.url("in/a.txt")),
        format!(
            "(dryrun) copy: {} to {}",
            bed.url("src/obj.bin"),
            bed.url("in/copies/obj.bin")
        ),
        format!("(dryrun) copy: {web_url} to {}", bed.url("in/web/w.bin")),
    ] {
        assert!(stdout.contains(&line), "{line} not in {stdout}");
    }
    let sent = bed.proxy.counts();
    assert_eq!((sent.put, sent.other, sent.get), (0, 0, 0), "{sent:?}");

    let output = run(bed.parabyte().args([
        "cp",
        "--json",
        "--part-size",
        "1MiB",
        "--manifest",
        "up.txt",
        &bed.url("in/"),
    ]));
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{err}");
    assert!(
        err.contains("up.txt:6: destination '../escape.txt' cannot be used: it has a '..' segment"),
        "{err}"
    );
    assert!(
        err.contains("files/link") && err.contains("symbolic link"),
        "{err}"
    );
    assert!(err.contains("files/missing.txt"), "{err}");
    assert!(err.contains(&bed.url("src/absent")), "{err}");
    let json = summary(&output);
    assert_eq!(
        (json["objects"].as_u64(), json["failed"].as_u64()),
        (Some(5), Some(4)),
        "{err}"
    );

    let stored = |key: &str| bed.admin.get_object(&bed.bucket, key).unwrap();
    assert!(stored("in/a.txt") == payload(4, 1000));
    assert!(stored("in/sub/b copy.bin") == payload(5, 2 * MIB as usize));
    assert!(stored("in/copies/obj.bin") == payload(1, BIG as usize));
    assert!(stored("elsewhere/small.txt") == payload(2, SMALL as usize));
    assert!(stored("in/web/w.bin") == payload(3, WEB as usize));
    for key in ["in/escape.txt", "escape.txt", "in/link", "in/gone.bin"] {
        assert!(bed.admin.get_object(&bed.bucket, key).is_err(), "{key}");
    }
    // The known-size object is copied inside the store: none of its bytes came through here.
    let fetched: Vec<_> = bed
        .proxy
        .requests()
        .into_iter()
        .filter(|r| r.kind == RequestKind::Get && r.path.ends_with("obj.bin"))
        .collect();
    assert_eq!(fetched, vec![]);
    assert_eq!(bed.admin.open_uploads(&bed.bucket).unwrap(), 0);
}

#[test]
fn a_manifest_into_s3_mixes_files_objects_and_web_files_versitygw() {
    a_manifest_into_s3_mixes_files_objects_and_web_files(ServerKind::Versitygw);
}

#[test]
fn a_manifest_into_s3_mixes_files_objects_and_web_files_minio() {
    a_manifest_into_s3_mixes_files_objects_and_web_files(ServerKind::Minio);
}

/// A large object and a small one; the large one's ETag, as its HEAD names it.
fn put_big_and_small(bed: &Bed, big: &str, small: &str) -> String {
    bed.admin.put_generated(&bed.bucket, big, 1, BIG).unwrap();
    bed.admin
        .put_generated(&bed.bucket, small, 2, SMALL)
        .unwrap();
    let head = bed
        .admin
        .block_on(
            bed.admin
                .client()
                .request(http::Method::HEAD, &bed.bucket, big)
                .send(),
        )
        .unwrap();
    head.headers["etag"].to_str().unwrap().to_owned()
}
