//! `testbed up`: a real S3 server on loopback filled with demo data, kept alive for `make demo`
//! and the benchmarks, with its address and credentials in an env file. `testbed list-server`:
//! the kit's listing server over a bucket of generated keys (and twins of it that differ in a
//! share of them, taking and counting the writes of a sync or rm), for the scale benchmarks.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::{Parser, Subcommand};
use parabyte_testkit::{
    keys_to_delete, operation, payload, AdminClient, Change, KeySpace, ListingServer, ServerKind,
    TestServer,
};

/// The seed of `large/big.bin`; small object `i` uses seed `i`.
const LARGE_SEED: u64 = 0xB16;
const LARGE_KEY: &str = "large/big.bin";
/// SigV4 presigned URLs live at most a week.
const MAX_PRESIGN_SECONDS: u64 = 7 * 24 * 3600;

#[derive(Debug, Parser)]
#[command(about = "Real S3-compatible servers on loopback for demos and benchmarks")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Start a server, fill a bucket, write the env file, print "ready" and wait.
    ///
    /// Stops on SIGTERM or SIGINT, when stdin is a pipe that closes, or after --max-seconds.
    Up(UpArgs),
    /// Serve generated keys with the kit's listing server (ListObjectsV2, reads of the
    /// keys' bytes, and writes taken and counted but not kept; any credentials), print
    /// "ready ENDPOINT" and wait; stops as `up` does.
    ListServer(ListServerArgs),
}

#[derive(Debug, clap::Args)]
struct ListServerArgs {
    #[arg(long, default_value = "parabyte-demo")]
    bucket: String,
    /// How many keys: PREFIXdNNN/kNNNNNN (key i in folder i % --folders), generated from
    /// their place in the order, none held in memory.
    #[arg(long, default_value_t = 100_000)]
    keys: u64,
    #[arg(long, default_value = "w4/")]
    prefix: String,
    /// 0: a flat prefix, PREFIXkNNNNNN.
    #[arg(long, default_value_t = 100)]
    folders: u64,
    /// The size every listed object has.
    #[arg(long, default_value_t = 64)]
    size: u64,
    /// Another bucket over the same keys, a share of them changed: NAME:FRACTION
    /// (`changed:0.01`), spread evenly through the order. Repeatable.
    #[arg(long, value_parser = parse_twin)]
    twin: Vec<(String, u64)>,
    /// How a twin's changed keys differ: `size` (one byte longer) or `content` (as long,
    /// later, another ETag).
    #[arg(long, default_value = "size", value_parser = parse_change)]
    change: Change,
    /// Append a line per request, shaped like versitygw's access log (` s3_ListObjectsV2 - -
    /// 200 `) so the benchmarks count requests the same way, with the raw query at its end.
    #[arg(long)]
    access_log: Option<PathBuf>,
    #[arg(long, default_value_t = 3600)]
    max_seconds: u64,
}

#[derive(Debug, clap::Args)]
struct UpArgs {
    /// versitygw, seaweedfs or minio.
    #[arg(long, default_value = "versitygw")]
    server: ServerKind,
    /// Serve HTTPS with a certificate from a fresh private CA; the env file then also sets
    /// AWS_CA_BUNDLE to that CA's certificate.
    #[arg(long)]
    tls: bool,
    #[arg(long, default_value = "parabyte-demo")]
    bucket: String,
    /// How many small objects to create under small/.
    #[arg(long, default_value_t = 1000)]
    small: u64,
    #[arg(long, default_value_t = 16 * 1024)]
    small_size: usize,
    /// Size of large/big.bin; 0 for none.
    #[arg(long, default_value_t = 256 << 20)]
    large_size: u64,
    /// Where to write `export AWS_ENDPOINT_URL=...` and friends; removed again on shutdown.
    #[arg(long, default_value = ".testbed/env")]
    env_file: PathBuf,
    #[arg(long, default_value_t = 3600)]
    max_seconds: u64,
}

fn main() -> ExitCode {
    let result = match Cli::parse().command {
        Command::Up(args) => up(&args),
        Command::ListServer(args) => list_server(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("testbed: {message}");
            ExitCode::from(2)
        }
    }
}

fn up(args: &UpArgs) -> Result<(), String> {
    let started = Instant::now();
    eprintln!("testbed: starting {}...", args.server);
    let server = if args.tls {
        TestServer::start_tls(args.server)
    } else {
        TestServer::start(args.server)
    }
    .map_err(|e| e.to_string())?;
    eprintln!(
        "testbed: {} answers at {} after {:.1}s (log: {})",
        args.server,
        server.endpoint(),
        started.elapsed().as_secs_f64(),
        server.log_path().display()
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let result = runtime.block_on(async {
        let admin = AdminClient::for_server(&server);
        fill(&admin, args).await?;
        // A presigned URL of the large object, for trying the plain-HTTPS path.
        let presigned = (args.large_size > 0)
            .then(|| {
                admin.presign_get(
                    &args.bucket,
                    LARGE_KEY,
                    Duration::from_secs(args.max_seconds.min(MAX_PRESIGN_SECONDS)),
                )
            })
            .transpose()
            .map_err(|e| e.to_string())?;
        write_env_file(&args.env_file, &server, &args.bucket, presigned.as_deref())
            .map_err(|e| format!("could not write {}: {e}", args.env_file.display()))?;
        println!("ready");
        std::io::stdout().flush().map_err(|e| e.to_string())?;
        let reason = wait_for_stop(Duration::from_secs(args.max_seconds)).await;
        eprintln!("testbed: {reason}; shutting down");
        Ok(())
    });
    let _ = std::fs::remove_file(&args.env_file);
    drop(server);
    result
}

fn list_server(args: &ListServerArgs) -> Result<(), String> {
    let started = Instant::now();
    let mut space = KeySpace::generated(
        &args.bucket,
        &args.prefix,
        args.keys,
        args.folders,
        args.size,
    )
    .change_by(args.change);
    for (twin, per_million) in &args.twin {
        space = space.with_twin(twin, *per_million);
    }
    let log = args
        .access_log
        .as_ref()
        .map(|path| {
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .map_err(|e| format!("could not open {}: {e}", path.display()))
        })
        .transpose()?;
    let server = ListingServer::start_logging(space, move |request, status| {
        if let Some(mut file) = log.as_ref() {
            let operation = operation(request);
            // A batch delete's line says how many keys it named.
            let query = match operation {
                "DeleteObjects" => {
                    format!("{} keys={}", request.query, keys_to_delete(request).len())
                }
                _ => request.query.clone(),
            };
            // One write per line: O_APPEND keeps lines whole for a reader tailing the file.
            let _ = file.write_all(format!("- s3_{operation} - - {status} - {query}\n").as_bytes());
        }
    });
    eprintln!(
        "testbed: {} keys listed at {} after {:.1}s",
        args.keys,
        server.endpoint(),
        started.elapsed().as_secs_f64()
    );
    println!("ready {}", server.endpoint());
    std::io::stdout().flush().map_err(|e| e.to_string())?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let reason = runtime.block_on(wait_for_stop(Duration::from_secs(args.max_seconds)));
    let tally = server.tally();
    eprintln!(
        "testbed: {reason}; {} requests answered ({} pages, {} reads, {} puts, {} copies, {} \
         keys deleted); shutting down",
        server.request_count(),
        tally.listed,
        tally.fetched,
        tally.put,
        tally.copied,
        tally.deleted
    );
    Ok(())
}

/// `NAME:FRACTION`, the fraction as parts per million.
fn parse_twin(text: &str) -> Result<(String, u64), String> {
    let (name, fraction) = text
        .rsplit_once(':')
        .ok_or_else(|| format!("'{text}': expected NAME:FRACTION, as changed:0.01"))?;
    let fraction: f64 = fraction
        .parse()
        .map_err(|_| format!("'{fraction}' is not a fraction"))?;
    if !(0.0..=1.0).contains(&fraction) {
        return Err(format!("{fraction}: a fraction lies between 0 and 1"));
    }
    Ok((name.to_owned(), (fraction * 1e6).round() as u64))
}

fn parse_change(text: &str) -> Result<Change, String> {
    match text {
        "size" => Ok(Change::Size),
        "content" => Ok(Change::Content),
        _ => Err(format!("'{text}': expected size or content")),
    }
}

async fn fill(admin: &AdminClient, args: &UpArgs) -> Result<(), String> {
    admin
        .create_bucket(&args.bucket)
        .await
        .map_err(|e| e.to_string())?;
    let started = Instant::now();
    let objects = (1..=args.small).map(|i| (small_key(i), payload(i, args.small_size)));
    let stored = admin
        .fill(&args.bucket, objects)
        .await
        .map_err(|e| e.to_string())?;
    eprintln!(
        "testbed: stored {stored} small objects of {} bytes in {:.1}s",
        args.small_size,
        started.elapsed().as_secs_f64()
    );
    if args.large_size > 0 {
        let started = Instant::now();
        admin
            .put_generated(&args.bucket, LARGE_KEY, LARGE_SEED, args.large_size)
            .await
            .map_err(|e| e.to_string())?;
        eprintln!(
            "testbed: stored large/big.bin ({} bytes) in {:.1}s",
            args.large_size,
            started.elapsed().as_secs_f64()
        );
    }
    Ok(())
}

/// Mostly flat, with a couple of nested folders so listings and local paths have some depth.
fn small_key(i: u64) -> String {
    match i % 8 {
        1 => format!("small/a/{i:05}.bin"),
        2 => format!("small/a/b/{i:05}.bin"),
        _ => format!("small/{i:05}.bin"),
    }
}

/// Written whole and renamed into place, so a script that sees the file sees all of it.
fn write_env_file(
    path: &Path,
    server: &TestServer,
    bucket: &str,
    presigned: Option<&str>,
) -> std::io::Result<()> {
    if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let mut contents = format!(
        "export AWS_ENDPOINT_URL={}\nexport AWS_ACCESS_KEY_ID={}\nexport AWS_SECRET_ACCESS_KEY={}\n\
         export AWS_REGION={}\nexport PARABYTE_BUCKET={bucket}\n",
        server.endpoint(),
        server.access_key(),
        server.secret_key(),
        server.region(),
    );
    if let Some(ca) = server.ca_pem_path() {
        contents.push_str(&format!("export AWS_CA_BUNDLE={}\n", ca.display()));
    }
    if let Some(url) = presigned {
        // Quoted: the query string has '&'. A URL never contains a single quote.
        contents.push_str(&format!("export PARABYTE_PRESIGNED_URL='{url}'\n"));
    }
    let partial = path.with_extension("partial");
    std::fs::write(&partial, contents)?;
    std::fs::rename(&partial, path)
}

async fn wait_for_stop(max: Duration) -> String {
    use tokio::signal::unix::{signal, SignalKind};
    let mut terminate = signal(SignalKind::terminate()).expect("install a SIGTERM handler");
    let mut interrupt = signal(SignalKind::interrupt()).expect("install a SIGINT handler");
    let stdin_closed = stdin_closed();
    tokio::select! {
        _ = terminate.recv() => "SIGTERM".to_owned(),
        _ = interrupt.recv() => "SIGINT".to_owned(),
        _ = stdin_closed => "stdin closed".to_owned(),
        _ = tokio::time::sleep(max) => format!("{}s passed", max.as_secs()),
    }
}

/// Resolves when stdin, if it is a pipe, reaches end of file: a parent that started us with a
/// pipe and died takes us with it. A terminal or /dev/null (a background job) never resolves.
async fn stdin_closed() {
    use std::os::unix::fs::FileTypeExt;
    let is_pipe = std::fs::metadata("/dev/stdin")
        .is_ok_and(|m| m.file_type().is_fifo() || m.file_type().is_socket());
    if !is_pipe {
        return std::future::pending().await;
    }
    let (closed, on_close) = tokio::sync::oneshot::channel::<()>();
    // A plain thread: a blocking read would hold up the runtime's shutdown.
    std::thread::spawn(move || {
        let mut stdin = std::io::stdin();
        let mut sink = [0u8; 1024];
        loop {
            match stdin.read(&mut sink) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        let _ = closed.send(());
    });
    let _ = on_close.await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn twins_are_named_with_a_fraction() {
        assert_eq!(
            parse_twin("changed:0.01"),
            Ok(("changed".to_owned(), 10_000))
        );
        assert_eq!(parse_twin("same:0"), Ok(("same".to_owned(), 0)));
        assert!(parse_twin("changed").is_err());
        assert!(parse_twin("changed:2").is_err());
    }

    #[test]
    fn small_keys_are_numbered_in_a_few_folders() {
        assert_eq!(small_key(1), "small/a/00001.bin");
        assert_eq!(small_key(2), "small/a/b/00002.bin");
        assert_eq!(small_key(3), "small/00003.bin");
        assert_eq!(small_key(12347), "small/12347.bin");
    }
}
