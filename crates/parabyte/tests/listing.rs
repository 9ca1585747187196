//! Parallel listing returns exactly the sequential listing — no key missing, none twice,
//! same order — on many key shapes, against the three real servers; so do the key ranges a
//! job spread over machines cuts a prefix into, listed one after another.

use futures::TryStreamExt;
mod common;

use common::store_config;
use parabyte::{Client, KeyBounds, Listed, S3Url, TransferConfig};
use parabyte_testkit::{
    shared, unique_bucket_name, AdminClient, CountingProxy, RequestKind, ServerKind, TestServer,
};

/// About 21,000 keys in six shapes, each under its own prefix.
fn shapes() -> Vec<(&'static str, Vec<String>)> {
    // A small deterministic generator: the same "random" names on every run.
    let mut state = 0x9E37_79B9_7F4A_7C15_u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let flat = (0..4000).map(|_| format!("flat/{:016x}", next())).collect();
    let deep = (0..4000)
        .map(|i| {
            let r = next();
            format!(
                "deep/{}/{}/{}/leaf-{i}",
                r % 7,
                (r >> 8) % 11,
                (r >> 16) % 5
            )
        })
        .collect();
    let mut huge: Vec<String> = (0..4000)
        .map(|_| format!("tree/b/huge/{:x}.dat", next()))
        .collect();
    huge.extend(["tree/a/one", "tree/b/hugf", "tree/c/two"].map(String::from));
    let sequential = (0..4000).map(|i| format!("seq/{i:06}")).collect();
    let unicode = (0..2000)
        .map(|i| {
            format!(
                "uni/{}-{i}",
                ["ü", "中文", "🎉", "é/ø", "Ω", "a b+c"][i % 6]
            )
        })
        .collect();
    let slashes = (0..500)
        .flat_map(|i| {
            [
                format!("sl/{i}/a"),
                format!("sl/{i}/b"),
                format!("sl/{i}-x"),
                format!("sl/{i}.y"),
            ]
        })
        .collect();
    vec![
        ("flat/", flat),
        ("deep/", deep),
        ("tree/", huge),
        ("seq/", sequential),
        ("uni/", unicode),
        ("sl/", slashes),
    ]
}

async fn client(server: &TestServer, parallelism: usize, page_size: usize) -> Client {
    let store = store_config(server);
    let transfer = TransferConfig {
        list_parallelism: parallelism,
        list_page_size: page_size,
        ..TransferConfig::default()
    };
    Client::connect(&store, transfer).await.unwrap()
}

async fn keys(client: &Client, bucket: &str, prefix: &str) -> Vec<String> {
    let url = S3Url {
        bucket: bucket.to_owned(),
        key: prefix.to_owned(),
    };
    let entries: Vec<Listed> = client.list(&url, true).try_collect().await.unwrap();
    entries
        .into_iter()
        .map(|entry| match entry {
            Listed::Object(object) => object.key,
            Listed::Prefix(prefix) => panic!("recursive listings have no prefixes: {prefix}"),
        })
        .collect()
}

/// The prefix cut into up to `parts` key ranges (as a job spread over machines cuts it),
/// each listed on its own, concatenated; every range held keys when it was found.
async fn keys_in_ranges(client: &Client, bucket: &str, prefix: &str, parts: usize) -> Vec<String> {
    let url = S3Url {
        bucket: bucket.to_owned(),
        key: prefix.to_owned(),
    };
    // SeaweedFS answers a guessed start-after by skipping whole "directories", so a guess
    // may find nothing and a shape may stay one range there: fewer ranges, never wrong ones.
    let boundaries = client.split_key_space(&url, parts).await.unwrap();
    assert!(boundaries.len() < parts, "{prefix}: {boundaries:?}");
    let lows = std::iter::once(None).chain(boundaries.iter().cloned().map(Some));
    let highs = boundaries
        .iter()
        .cloned()
        .map(Some)
        .chain(std::iter::once(None));
    let mut all = Vec::new();
    for (after, until_after) in lows.zip(highs) {
        let bounds = KeyBounds { after, until_after };
        let entries: Vec<Listed> = client
            .list_range(&url, bounds.clone())
            .try_collect()
            .await
            .unwrap();
        assert!(!entries.is_empty(), "{prefix}: {bounds:?} is empty");
        all.extend(entries.into_iter().map(|entry| match entry {
            Listed::Object(object) => object.key,
            Listed::Prefix(prefix) => panic!("recursive listings have no prefixes: {prefix}"),
        }));
    }
    all
}

async fn parallel_equals_sequential(kind: ServerKind) {
    let server = shared(kind);
    let admin = AdminClient::for_server(server);
    let bucket = unique_bucket_name("listing");
    admin.create_bucket(&bucket).await.unwrap();
    let shapes = shapes();
    let all: Vec<String> = shapes
        .iter()
        .flat_map(|(_, keys)| keys.iter().cloned())
        .collect();
    admin
        .fill(&bucket, all.iter().map(|key| (key.clone(), b"x".to_vec())))
        .await
        .unwrap();

    // Small pages make every shape span many pages, so ranges really are split.
    let sequential = client(server, 1, 100).await;
    let parallel = client(server, 8, 100).await;
    let default = client(server, 16, 1000).await;
    for (prefix, written) in &shapes {
        let one_by_one = keys(&sequential, &bucket, prefix).await;
        assert_same_keys(
            &one_by_one,
            written,
            &format!("{kind}: sequential listing of {prefix}"),
        );
        let in_parallel = keys(&parallel, &bucket, prefix).await;
        assert_eq!(
            in_parallel.len(),
            one_by_one.len(),
            "{kind}: parallel listing of {prefix}"
        );
        assert!(
            in_parallel == one_by_one,
            "{kind}: parallel listing of {prefix} differs from the sequential one"
        );
        let in_ranges = keys_in_ranges(&parallel, &bucket, prefix, 6).await;
        assert!(
            in_ranges == one_by_one,
            "{kind}: the key ranges of {prefix}, one after another, differ from the sequential listing"
        );
    }
    let one_by_one = keys(&sequential, &bucket, "").await;
    assert_same_keys(&one_by_one, &all, &format!("{kind}: whole bucket"));
    assert!(
        keys(&parallel, &bucket, "").await == one_by_one,
        "{kind}: whole bucket, parallel"
    );
    assert!(
        keys(&default, &bucket, "").await == one_by_one,
        "{kind}: whole bucket, defaults"
    );
}

/// Every written key exactly once (the order is the store's: SeaweedFS lists "directories"
/// before names that sort below '/', unlike S3).
fn assert_same_keys(listed: &[String], written: &[String], what: &str) {
    let mut listed = listed.to_vec();
    let mut written = written.to_vec();
    listed.sort();
    written.sort();
    assert_eq!(listed.len(), written.len(), "{what}: count");
    assert!(listed == written, "{what}: keys differ");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_equals_sequential_versitygw() {
    parallel_equals_sequential(ServerKind::Versitygw).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_equals_sequential_seaweedfs() {
    parallel_equals_sequential(ServerKind::SeaweedFs).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_equals_sequential_minio() {
    parallel_equals_sequential(ServerKind::Minio).await;
}

/// A bucket of `keys` (one byte each) on versitygw, and a client that lists it through a
/// proxy counting its requests.
async fn behind_a_counting_proxy(
    name: &str,
    keys: &[String],
    parallelism: usize,
    page_size: usize,
) -> (String, CountingProxy, Client) {
    let server = shared(ServerKind::Versitygw);
    let admin = AdminClient::for_server(server);
    let bucket = unique_bucket_name(name);
    admin.create_bucket(&bucket).await.unwrap();
    admin
        .fill(&bucket, keys.iter().map(|key| (key.clone(), b"x".to_vec())))
        .await
        .unwrap();
    let proxy = CountingProxy::start(&server.endpoint());
    let store = parabyte::StoreConfig {
        endpoint_url: Some(proxy.endpoint()),
        ..store_config(server)
    };
    let transfer = TransferConfig {
        list_parallelism: parallelism,
        list_page_size: page_size,
        ..TransferConfig::default()
    };
    let client = Client::connect(&store, transfer).await.unwrap();
    (bucket, proxy, client)
}

/// Sequential names in "folders" (`dNNN/kNNNNNN`, as the bench's W4): a split is looked for
/// with guesses of one key each, and a part starts only where a guess found keys. Guessing
/// one page at a time from an unknown top sent a page request per empty guess (`w4/o`,
/// `w4/i`, `w4/f`, ... before the first useful split), one after another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn splits_of_sequential_names_send_no_page_request_that_finds_nothing() {
    const PAGE: usize = 100;
    const PARALLELISM: usize = 8;
    let written: Vec<String> = (0..30)
        .flat_map(|dir| (0..PAGE).map(move |k| format!("w4/d{dir:03}/k{:06}", dir * PAGE + k)))
        .collect();
    let (bucket, proxy, client) =
        behind_a_counting_proxy("guesses", &written, PARALLELISM, PAGE).await;
    assert!(keys(&client, &bucket, "w4/").await == written);

    let lists: Vec<(usize, Option<String>)> = proxy
        .requests()
        .iter()
        .filter(|request| request.kind == RequestKind::List)
        .map(|request| {
            (
                query_value(&request.query, "max-keys"),
                request.query.clone(),
            )
        })
        .map(|(max_keys, query)| {
            let max_keys = max_keys.and_then(|n| n.parse().ok()).unwrap_or(0);
            (max_keys, query_value(&query, "start-after"))
        })
        .collect();
    let pages: Vec<&Option<String>> = lists
        .iter()
        .filter(|(max_keys, _)| *max_keys == PAGE)
        .map(|(_, start_after)| start_after)
        .collect();
    let empty = pages
        .iter()
        .filter_map(|start_after| start_after.as_deref())
        .filter(|after| !written.iter().any(|key| key.as_str() > *after))
        .count();
    assert_eq!(
        empty, 0,
        "page requests after a guess with no key above it: {lists:?}"
    );
    // Every page once, plus for each part at most its first page (which may start inside
    // the part before) and one read past its end.
    let parts = 1 + pages
        .iter()
        .filter(|start_after| start_after.is_some())
        .count();
    assert!(
        pages.len() <= written.len() / PAGE + 2 * parts,
        "{} page requests for {} pages in {parts} parts: {lists:?}",
        pages.len(),
        written.len() / PAGE
    );
    // No page is asked for twice: a part prefetching while its split was pending asked for
    // the page after the split's guess, which the new part lists too.
    let page_queries: Vec<String> = proxy
        .requests()
        .into_iter()
        .filter(|request| request.kind == RequestKind::List)
        .map(|request| request.query)
        .filter(|query| query_value(query, "max-keys").as_deref() == Some("100"))
        .collect();
    let mut asked = std::collections::HashSet::new();
    let twice: Vec<&String> = page_queries
        .iter()
        .filter(|query| !asked.insert(*query))
        .collect();
    assert!(twice.is_empty(), "pages asked for twice: {twice:?}");
    let guesses = lists.iter().filter(|(max_keys, _)| *max_keys == 1).count();
    assert!(
        guesses <= 4 * 3 * PARALLELISM,
        "{guesses} guesses: {lists:?}"
    );
}

/// A parameter of a query string, percent-decoded.
fn query_value(query: &str, name: &str) -> Option<String> {
    let value = query
        .split('&')
        .find_map(|pair| pair.strip_prefix(name)?.strip_prefix('='))?;
    let mut bytes = Vec::new();
    let mut rest = value.as_bytes();
    while let Some((&byte, tail)) = rest.split_first() {
        let hex = tail.get(..2).and_then(|hex| std::str::from_utf8(hex).ok());
        match hex.and_then(|hex| u8::from_str_radix(hex, 16).ok()) {
            Some(decoded) if byte == b'%' => {
                bytes.push(decoded);
                rest = &tail[2..];
            }
            _ => {
                bytes.push(byte);
                rest = tail;
            }
        }
    }
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// While the consumer has not reached them, parts further on keep listing, up to a room
/// they share: with room for two pages each, they stopped after two or three pages, and
/// the listing ran almost in sequence unless it was cut into many short parts (each of
/// which costs the store a page more). Here the consumer stops reading once the listing
/// has split; the part behind the one it reads must still bring in most of the pages.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parts_ahead_of_the_consumer_keep_listing() {
    const PAGE: usize = 20;
    const PAGES: usize = 40;
    let written: Vec<String> = (0..PAGES * PAGE).map(|i| format!("k/{i:06}")).collect();
    let (bucket, proxy, client) = behind_a_counting_proxy("ahead", &written, 2, PAGE).await;
    let url = S3Url {
        bucket: bucket.clone(),
        key: "k/".to_owned(),
    };
    let pages = |started_after: bool| {
        proxy
            .requests()
            .iter()
            .filter(|r| r.kind == RequestKind::List)
            .filter(|r| query_value(&r.query, "max-keys").as_deref() == Some("20"))
            .filter(|r| !started_after || query_value(&r.query, "start-after").is_some())
            .count()
    };
    // The consumer reads until a second part has asked for its first page, then holds.
    let mut listing = Box::pin(client.list(&url, true));
    let mut all = Vec::new();
    while pages(true) == 0 {
        match listing.try_next().await.unwrap() {
            Some(Listed::Object(object)) => all.push(object.key),
            other => panic!("the listing ended before it was split: {other:?}"),
        }
    }
    // The second part lists every page above its start (it cannot split again: two
    // workers); with room for two pages of its own it stopped after three.
    let split_at = proxy
        .requests()
        .iter()
        .filter(|r| query_value(&r.query, "max-keys").as_deref() == Some("20"))
        .find_map(|r| query_value(&r.query, "start-after"))
        .unwrap();
    let above = written.iter().filter(|key| **key > split_at).count();
    let wanted = above / PAGE;
    assert!(
        wanted >= 8,
        "split at {split_at}: too few pages above to tell"
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    // Waits on the requests the store saw, bounded in time.
    // The first page, and those of the second part at least.
    let wanted = 1 + wanted;
    while pages(false) < wanted && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(
        pages(false) >= wanted,
        "{} page requests while the consumer held its place at key {} (split after {split_at}); wanted {wanted}",
        pages(false),
        all.len()
    );
    // And the listing is still whole and in order when the consumer goes on.
    while let Some(entry) = listing.try_next().await.unwrap() {
        let Listed::Object(object) = entry else {
            panic!("recursive listings have no prefixes")
        };
        all.push(object.key);
    }
    assert!(
        all == written,
        "{} keys listed of {}",
        all.len(),
        written.len()
    );
}
