//! Shared set-up for the CLI tests: a fresh bucket on a real server, a counting proxy in
//! front of it, and the real `parabyte` binary run in a clean environment.

#![allow(dead_code)] // each test file uses its own subset

use std::path::{Path, PathBuf};
use std::process::Output;

use parabyte_testkit::{
    payload, shared, unique_bucket_name, BlockingAdmin, CountingProxy, Refusal, RefusingStore,
    ServerKind, TestServer,
};

#[derive(Debug)]
pub struct Bed {
    pub server: &'static TestServer,
    pub admin: BlockingAdmin,
    pub bucket: String,
    pub proxy: CountingProxy,
    pub dir: tempfile::TempDir,
    /// Between the proxy and the server when the bed is a store that refuses checksum
    /// headers ([`Bed::refusing_checksums`]).
    pub refusing: Option<RefusingStore>,
}

impl Bed {
    pub fn new(kind: ServerKind, name: &str) -> Bed {
        let server = shared(kind);
        let admin = BlockingAdmin::for_server(server);
        let bucket = unique_bucket_name(name);
        admin.create_bucket(&bucket).unwrap();
        Bed {
            server,
            admin,
            bucket,
            proxy: CountingProxy::start(&server.endpoint()),
            dir: tempfile::tempdir().unwrap(),
            refusing: None,
        }
    }

    /// A bed whose store refuses checksum headers on writes, as `refusal` words it: the
    /// counting proxy (which tests fault and count) in front of the refusing store, in
    /// front of the server. The admin client talks to the server itself.
    pub fn refusing_checksums(kind: ServerKind, name: &str, refusal: Refusal) -> Bed {
        let mut bed = Bed::new(kind, name);
        let refusing = RefusingStore::start(&bed.server.endpoint(), refusal);
        bed.proxy = CountingProxy::start(&refusing.endpoint());
        bed.refusing = Some(refusing);
        bed
    }

    pub fn url(&self, key: &str) -> String {
        format!("s3://{}/{}", self.bucket, key)
    }

    pub fn path(&self, relative: &str) -> PathBuf {
        self.dir.path().join(relative)
    }

    /// The binary, through the proxy, with nothing from this machine's AWS set-up.
    pub fn parabyte(&self) -> assert_cmd::Command {
        self.parabyte_with_secret(self.server.secret_key())
    }

    pub fn parabyte_with_secret(&self, secret: &str) -> assert_cmd::Command {
        assert_cmd::Command::from_std(self.parabyte_process(secret))
    }

    /// The same, as a plain process (for tests that signal it while it runs).
    pub fn parabyte_process(&self, secret: &str) -> std::process::Command {
        let mut command = bare_parabyte(self.dir.path());
        command
            .env("AWS_ACCESS_KEY_ID", self.server.access_key())
            .env("AWS_SECRET_ACCESS_KEY", secret)
            .env("AWS_REGION", self.server.region())
            .env("AWS_ENDPOINT_URL", self.proxy.endpoint());
        command
    }
}

/// The binary in `dir`, with nothing from this machine's environment or AWS set-up.
pub fn bare_parabyte(dir: &Path) -> std::process::Command {
    let mut command = std::process::Command::new(assert_cmd::cargo::cargo_bin("parabyte"));
    command
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", dir)
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .current_dir(dir);
    command
}

/// Run and return the output, whatever the exit status.
pub fn run(command: &mut assert_cmd::Command) -> Output {
    command.output().unwrap()
}

pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The `--json` summary printed on stdout.
pub fn summary(output: &Output) -> serde_json::Value {
    let text = String::from_utf8_lossy(&output.stdout);
    serde_json::from_str(text.trim()).unwrap_or_else(|e| {
        panic!(
            "no JSON summary ({e}) in {text:?}; stderr: {}",
            stderr(output)
        )
    })
}

/// Every file under `dir`, relative, sorted.
pub fn files_under(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(current) = stack.pop() {
        for entry in std::fs::read_dir(&current).unwrap() {
            let entry = entry.unwrap();
            if entry.file_type().unwrap().is_dir() {
                stack.push(entry.path());
            } else {
                found.push(
                    entry
                        .path()
                        .strip_prefix(dir)
                        .unwrap()
                        .to_string_lossy()
                        .into_owned(),
                );
            }
        }
    }
    found.sort();
    found
}

/// Wait for `event` (a file appearing, bytes seen by the proxy, a fault reached), checking
/// every few milliseconds; panics naming it if it has not happened within `limit`, a bound
/// far above what the event needs, so only a broken program reaches it.
pub fn wait_for(what: &str, limit: std::time::Duration, mut event: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + limit;
    while !event() {
        assert!(
            std::time::Instant::now() < deadline,
            "{what}: not within {limit:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// Wait for a child process to end; kills it and panics if it has not ended within `limit`.
pub fn wait_for_exit(
    child: &mut std::process::Child,
    limit: std::time::Duration,
) -> std::process::ExitStatus {
    let deadline = std::time::Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if std::time::Instant::now() >= deadline {
            let _ = child.kill();
            panic!("the process did not end within {limit:?}");
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// The hidden temporary name parabyte writes a file named `name` under until it is complete:
/// `.parabyte-` and the first 32 hex digits of the SHA-256 of the name's bytes.
pub fn temporary_name(name: &str) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(name.as_bytes());
    format!(".parabyte-{}.tmp", hex::encode(&digest[..16]))
}

/// A tree with a file at every size the uploader tells apart: empty, small, exactly one
/// part (one PUT), one byte more (two parts), several parts, and names that need encoding.
pub fn tree() -> Vec<(&'static str, Vec<u8>)> {
    vec![
        ("empty", Vec::new()),
        ("small.txt", payload(1, 1000)),
        ("one part.bin", payload(2, 5 * (1 << 20))),
        ("nested/two parts.bin", payload(3, 5 * (1 << 20) + 1)),
        (
            "nested/deeper/ünïcödé+%.bin",
            payload(4, 11 * (1 << 20) + 7),
        ),
    ]
}

pub fn write_tree(bed: &Bed, root: &str) {
    for (path, bytes) in tree() {
        let path = bed.path(root).join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }
}

/// [`tree`] written under `src` and uploaded by `cp -r --json` in parts of 5 MiB to
/// `s3://bucket/up/`; the run's output, which must have succeeded.
pub fn upload_tree(bed: &Bed) -> Output {
    write_tree(bed, "src");
    let output = run(bed.parabyte().args([
        "cp",
        "-r",
        "--json",
        "--part-size",
        "5MiB",
        "src",
        &bed.url("up"),
    ]));
    assert!(output.status.success(), "{}", stderr(&output));
    output
}
