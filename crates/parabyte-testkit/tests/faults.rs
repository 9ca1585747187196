//! Every scripted fault of the proxy, in front of a real versitygw, as a plain client sees it:
//! the status and error document, the reset, the stall, the short body, the rewritten header,
//! the object replaced before the request goes on.

use std::error::Error as _;
use std::io;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use http::{HeaderMap, Method, StatusCode};
use http_body_util::BodyExt;
use parabyte_testkit::{
    payload, payload_at, shared, unique_bucket_name, AdminClient, AfterStall, BlockingAdmin,
    CountingProxy, Error, Fault, Rule, ServerKind,
};

const OBJECT: &str = "obj.bin";
const OBJECT_SEED: u64 = 7;
const OBJECT_LEN: usize = 256 << 10;
/// How long a test waits for the next piece of a body before calling it hung.
const BODY_WAIT: Duration = Duration::from_secs(10);

/// A bucket holding [`OBJECT`] on the shared versitygw, and a proxy in front of the server.
struct Bed {
    admin: BlockingAdmin,
    bucket: String,
    proxy: CountingProxy,
    /// The admin's credentials, pointed at the proxy.
    client: AdminClient,
}

impl Bed {
    fn new(name: &str) -> Bed {
        let server = shared(ServerKind::Versitygw);
        let admin = BlockingAdmin::for_server(server);
        let bucket = unique_bucket_name(name);
        admin.create_bucket(&bucket).unwrap();
        admin
            .put_object(&bucket, OBJECT, payload(OBJECT_SEED, OBJECT_LEN))
            .unwrap();
        let proxy = CountingProxy::start(&server.endpoint());
        let client = admin.client().with_endpoint(&proxy.endpoint());
        Bed {
            admin,
            bucket,
            proxy,
            client,
        }
    }

    fn get(&self, key: &str, headers: &[(&str, &str)]) -> Fetched {
        self.fetch(Method::GET, key, headers)
    }

    fn fetch(&self, method: Method, key: &str, headers: &[(&str, &str)]) -> Fetched {
        let request = headers.iter().fold(
            self.client.request(method, &self.bucket, key),
            |request, (name, value)| request.header(name, value),
        );
        self.admin.block_on(async {
            let started = Instant::now();
            let response = request.send_streaming().await.unwrap();
            let headers_after = started.elapsed();
            let (parts, mut body) = response.into_parts();
            let mut bytes = Vec::new();
            let mut broke = None;
            loop {
                let frame = tokio::time::timeout(BODY_WAIT, body.frame())
                    .await
                    .expect("the body stalled for longer than the test allows");
                match frame {
                    None => break,
                    Some(Ok(frame)) => {
                        bytes.extend_from_slice(&frame.into_data().unwrap_or_default())
                    }
                    Some(Err(e)) => {
                        broke = Some(Broke::of(&e));
                        break;
                    }
                }
            }
            Fetched {
                status: parts.status,
                headers: parts.headers,
                body: bytes,
                broke,
                headers_after,
                elapsed: started.elapsed(),
            }
        })
    }
}

/// A response as the client lived it.
#[derive(Debug)]
struct Fetched {
    status: StatusCode,
    headers: HeaderMap,
    body: Vec<u8>,
    /// How the body broke off, if it did.
    broke: Option<Broke>,
    headers_after: Duration,
    elapsed: Duration,
}

impl Fetched {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(|value| value.to_str().unwrap())
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// Asserts a whole, unbroken `200` with the test object.
    fn assert_whole_object(&self) {
        assert_eq!(self.status, StatusCode::OK, "{}", self.text());
        assert!(self.broke.is_none(), "{:?}", self.broke);
        assert!(
            self.body == payload(OBJECT_SEED, OBJECT_LEN),
            "the object came back changed"
        );
    }

    /// Asserts that the body broke off with `kind` after exactly the first `len` bytes.
    fn assert_cut(&self, len: usize, kind: io::ErrorKind) {
        let broke = self
            .broke
            .as_ref()
            .expect("the body should have broken off");
        assert_eq!(broke.kind, Some(kind), "{}", broke.message);
        assert_eq!(self.body.len(), len);
        assert!(
            self.body == payload_at(OBJECT_SEED, 0, len),
            "the bytes before the cut changed"
        );
    }
}

/// The I/O error under a body error, as a client would classify it.
#[derive(Debug)]
struct Broke {
    kind: Option<io::ErrorKind>,
    message: String,
}

impl Broke {
    fn of(error: &hyper::Error) -> Broke {
        let mut source: Option<&(dyn std::error::Error + 'static)> = error.source();
        let mut kind = None;
        while let Some(cause) = source {
            if let Some(io) = cause.downcast_ref::<io::Error>() {
                kind = Some(io.kind());
            }
            source = cause.source();
        }
        Broke {
            kind,
            message: format!("{error:?}"),
        }
    }
}

#[test]
fn error_replies_are_s3_documents_and_never_reach_the_server() {
    let bed = Bed::new("fault-errors");
    let slow = bed.proxy.inject(
        Rule::get().key_contains(OBJECT).first(2),
        Fault::error(503, "SlowDown").with_header("retry-after", "1"),
    );
    for _ in 0..2 {
        let answer = bed.get(OBJECT, &[]);
        assert_eq!(answer.status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(answer.header("retry-after"), Some("1"));
        assert_eq!(answer.header("content-type"), Some("application/xml"));
        assert!(
            answer.text().contains("<Code>SlowDown</Code>"),
            "{}",
            answer.text()
        );
    }
    bed.get(OBJECT, &[]).assert_whole_object();
    assert_eq!((slow.matched(), slow.fired()), (3, 2));

    let statuses = [
        (500, "InternalError"),
        (429, "SlowDown"),
        (403, "AccessDenied"),
        (404, "NoSuchKey"),
    ];
    for (n, (status, code)) in (1..).zip(statuses) {
        bed.proxy.inject(
            Rule::get().key_contains("ghost").nth(n),
            Fault::error(status, code),
        );
    }
    for (status, code) in statuses {
        let answer = bed.get("ghost.bin", &[]);
        assert_eq!(answer.status.as_u16(), status);
        assert!(
            answer.text().contains(&format!("<Code>{code}</Code>")),
            "{}",
            answer.text()
        );
    }
    let listing = bed
        .proxy
        .inject(Rule::list().nth(1), Fault::error(500, "InternalError"));
    let list = |bed: &Bed| {
        bed.admin
            .block_on(
                bed.client
                    .request(Method::GET, &bed.bucket, "")
                    .query("list-type", "2")
                    .send(),
            )
            .unwrap()
            .status
    };
    assert_eq!(list(&bed), StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(list(&bed), StatusCode::OK);
    assert_eq!(listing.fired(), 1);

    // A refused PUT is not forwarded, and its body is read so the client gets the answer.
    bed.proxy.inject(
        Rule::kind(parabyte_testkit::RequestKind::Put),
        Fault::error(500, "InternalError"),
    );
    match bed.admin.block_on(
        bed.client
            .put_object(&bed.bucket, "never.bin", payload(1, 1 << 20)),
    ) {
        Err(Error::Status { status, .. }) => assert_eq!(status, 500),
        other => panic!("the PUT should have been refused: {other:?}"),
    }
    match bed.admin.get_object(&bed.bucket, "never.bin") {
        Err(Error::Status { status, .. }) => assert_eq!(status, 404),
        other => panic!("the refused PUT reached the server: {other:?}"),
    }

    // Faulted requests are counted and recorded like any other.
    let counts = bed.proxy.counts();
    assert_eq!((counts.get, counts.list, counts.put), (3 + 4, 2, 1));
    // Once cleared, requests go through untouched again.
    bed.proxy.clear_faults();
    assert_eq!(bed.get("ghost.bin", &[]).status, StatusCode::NOT_FOUND);
}

#[test]
fn an_error_document_can_come_with_200_ok() {
    let bed = Bed::new("fault-200");
    let fault = bed
        .proxy
        .inject(Rule::get().nth(1), Fault::error_in_200("SlowDown"));
    let answer = bed.get(OBJECT, &[("range", "bytes=0-1023")]);
    assert_eq!(answer.status, StatusCode::OK);
    assert!(answer.text().starts_with("<?xml"), "{}", answer.text());
    assert!(
        answer.text().contains("<Code>SlowDown</Code>"),
        "{}",
        answer.text()
    );
    assert_eq!(fault.fired(), 1);
}

#[test]
fn a_reset_cuts_the_body_after_exactly_n_bytes() {
    let bed = Bed::new("fault-reset");
    let reset = bed.proxy.inject(
        Rule::get().key_contains(OBJECT).nth(2),
        Fault::reset_after(100_000),
    );
    bed.get(OBJECT, &[]).assert_whole_object();
    let cut = bed.get(OBJECT, &[]);
    assert_eq!(cut.status, StatusCode::OK);
    cut.assert_cut(100_000, io::ErrorKind::ConnectionReset);
    bed.get(OBJECT, &[]).assert_whole_object();
    assert_eq!(reset.fired(), 1);

    // Deep in a larger body, with more in flight: still exactly the bytes before the cut.
    bed.admin
        .put_generated(&bed.bucket, "big.bin", OBJECT_SEED, 3 << 20)
        .unwrap();
    bed.proxy.inject(
        Rule::get().key_contains("big.bin").nth(1),
        Fault::reset_after(1 << 20),
    );
    bed.get("big.bin", &[])
        .assert_cut(1 << 20, io::ErrorKind::ConnectionReset);

    // A body that ends before the cut passes, and the fault does not count as fired.
    let never = bed
        .proxy
        .inject(Rule::get().range_start(0), Fault::reset_after(5000));
    let short = bed.get(OBJECT, &[("range", "bytes=0-4999")]);
    assert_eq!(
        (short.status, short.body.len()),
        (StatusCode::PARTIAL_CONTENT, 5000)
    );
    assert!(short.broke.is_none(), "{:?}", short.broke);
    assert_eq!((never.matched(), never.fired()), (1, 0));
    // A removed fault stops applying.
    never.remove();
    let whole = bed.get(OBJECT, &[("range", "bytes=0-9999")]);
    assert_eq!((whole.body.len(), whole.broke.is_none()), (10_000, true));
}

#[test]
fn a_truncated_body_keeps_its_full_length_and_ends_early() {
    let bed = Bed::new("fault-truncate");
    bed.proxy.inject(
        Rule::get().range_start(0).nth(1),
        Fault::truncate_after(50_000),
    );
    let cut = bed.get(OBJECT, &[("range", "bytes=0-199999")]);
    assert_eq!(cut.status, StatusCode::PARTIAL_CONTENT);
    assert_eq!(cut.header("content-length"), Some("200000"));
    cut.assert_cut(50_000, io::ErrorKind::UnexpectedEof);

    // A listing, whatever its framing, is cut too: the client never sees it end.
    bed.proxy.inject(Rule::list(), Fault::truncate_after(100));
    let listing = bed.fetch(Method::GET, "", &[]);
    assert_eq!(listing.status, StatusCode::OK);
    assert_eq!(listing.body.len(), 100);
    assert!(
        listing.broke.is_some(),
        "the listing arrived whole: {}",
        listing.text()
    );
}

#[test]
fn a_stall_pauses_the_body_then_goes_on_closes_or_resets() {
    let bed = Bed::new("fault-stall");
    let pause = Duration::from_millis(400);
    let stalls = [AfterStall::Continue, AfterStall::Close, AfterStall::Reset];
    for (n, then) in (1..).zip(stalls) {
        bed.proxy.inject(
            Rule::get().nth(n),
            Fault::stall_after(64 << 10, pause, then),
        );
    }
    for then in stalls {
        let answer = bed.get(OBJECT, &[]);
        assert!(
            answer.elapsed >= pause,
            "{then:?} took only {:?}",
            answer.elapsed
        );
        match then {
            AfterStall::Continue => answer.assert_whole_object(),
            AfterStall::Close => answer.assert_cut(64 << 10, io::ErrorKind::UnexpectedEof),
            AfterStall::Reset => answer.assert_cut(64 << 10, io::ErrorKind::ConnectionReset),
        }
    }
}

#[test]
fn response_headers_can_be_set_and_rewritten() {
    let bed = Bed::new("fault-headers");
    let range = bed.proxy.inject(
        Rule::get().range_start(1000),
        Fault::set_header("content-range", "bytes 0-999/5"),
    );
    let total = bed.proxy.inject(
        Rule::get().range_start(2000),
        Fault::rewrite_header("content-range", |value| value.replace("/262144", "/262145")),
    );
    let etag = bed.proxy.inject(
        Rule::get().range_start(3000),
        Fault::set_header("etag", "\"changed\""),
    );

    let honest = bed.get(OBJECT, &[("range", "bytes=0-999")]);
    assert_eq!(honest.header("content-range"), Some("bytes 0-999/262144"));
    let moved = bed.get(OBJECT, &[("range", "bytes=1000-1999")]);
    assert_eq!(moved.status, StatusCode::PARTIAL_CONTENT);
    assert_eq!(moved.header("content-range"), Some("bytes 0-999/5"));
    // Only the header lies: the bytes are still those asked for.
    assert!(moved.body == payload_at(OBJECT_SEED, 1000, 1000));
    let grown = bed.get(OBJECT, &[("range", "bytes=2000-2999")]);
    assert_eq!(
        grown.header("content-range"),
        Some("bytes 2000-2999/262145")
    );
    let changed = bed.get(OBJECT, &[("range", "bytes=3000-3999")]);
    assert_eq!(changed.header("etag"), Some("\"changed\""));
    assert_ne!(honest.header("etag"), Some("\"changed\""));
    assert_eq!((range.fired(), total.fired(), etag.fired()), (1, 1, 1));
}

#[test]
fn a_hook_replaces_the_object_before_the_request_goes_on() {
    let bed = Bed::new("fault-hook");
    let calls = Arc::new(Mutex::new(Vec::new()));
    let replacer = BlockingAdmin::for_server(shared(ServerKind::Versitygw));
    let (bucket, seen_calls) = (bed.bucket.clone(), Arc::clone(&calls));
    let hook = bed.proxy.inject(
        Rule::get().key_contains(OBJECT).nth(2),
        Fault::hook(move |n, request| {
            seen_calls.lock().unwrap().push((n, request.key()));
            replacer
                .put_object(&bucket, OBJECT, payload(99, 1000))
                .unwrap();
        }),
    );

    let before = bed.get(OBJECT, &[]);
    before.assert_whole_object();
    let after = bed.get(OBJECT, &[]);
    assert_eq!(after.status, StatusCode::OK);
    assert!(
        after.body == payload(99, 1000),
        "the hook did not run before forwarding"
    );
    assert_ne!(after.header("etag"), before.header("etag"));
    assert_eq!(*calls.lock().unwrap(), [(2, OBJECT.to_owned())]);
    assert_eq!(hook.fired(), 1);

    // A hook that panics fails its request instead of letting it through.
    let broken = bed.proxy.inject(
        Rule::get().nth(1),
        Fault::hook(|_, _| panic!("the hook failed on purpose")),
    );
    let refused = bed.get(OBJECT, &[]);
    assert_eq!(refused.status, StatusCode::INTERNAL_SERVER_ERROR);
    assert!(refused.text().contains("panicked"), "{}", refused.text());
    assert_eq!(broken.fired(), 0);
}

#[test]
fn the_first_byte_can_be_late() {
    let bed = Bed::new("fault-delay");
    let delay = Duration::from_millis(400);
    let late = bed.proxy.inject(
        Rule::kind(parabyte_testkit::RequestKind::Head).nth(1),
        Fault::delay_headers(delay),
    );
    let answer = bed.fetch(Method::HEAD, OBJECT, &[]);
    assert_eq!(answer.status, StatusCode::OK);
    assert!(
        answer.headers_after >= delay,
        "headers after {:?}",
        answer.headers_after
    );
    assert_eq!(late.fired(), 1);
}
