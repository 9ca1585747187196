//! A server binary running as a child process that cannot outlive the process that started it.

use std::ffi::OsString;
use std::fs::File;
use std::io;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};

/// Overrides where the server binaries are looked for first.
pub(crate) const TOOLS_BIN_ENV: &str = "PARABYTE_TOOLS_BIN";

#[derive(Debug)]
pub(crate) struct ServerProcess {
    child: Mutex<Option<Child>>,
    log_path: PathBuf,
}

impl ServerProcess {
    /// Starts `binary` with a clean environment (so no stray `AWS_*` or `VGW_*` variable changes
    /// its behaviour), stdout and stderr appended to `log_path`, and `home` as HOME and TMPDIR.
    pub(crate) fn spawn(
        name: &'static str,
        binary: &Path,
        args: &[OsString],
        home: &Path,
        log_path: PathBuf,
    ) -> Result<Self> {
        Self::spawn_with_env(name, binary, args, &[], home, log_path)
    }

    /// Like [`ServerProcess::spawn`], with `env` added to the clean environment, for servers
    /// that take some settings only from variables.
    pub(crate) fn spawn_with_env(
        name: &'static str,
        binary: &Path,
        args: &[OsString],
        env: &[(&str, OsString)],
        home: &Path,
        log_path: PathBuf,
    ) -> Result<Self> {
        let log = File::create(&log_path)?;
        let mut command = Command::new(binary);
        command
            .args(args)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", home)
            .env("TMPDIR", home)
            .envs(env.iter().map(|(name, value)| (name, value)))
            .current_dir(home)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            // Its own process group: a Ctrl-C meant for the test or testbed does not reach it
            // directly, so shutdown stays in our hands.
            .process_group(0);
        let parent = std::process::id() as libc::pid_t;
        // SAFETY: the closure runs between fork and exec and only makes async-signal-safe calls.
        unsafe {
            command.pre_exec(move || {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(io::Error::last_os_error());
                }
                // The parent may have died before prctl took effect; then nobody would kill us.
                if libc::getppid() != parent {
                    return Err(io::Error::other("parent exited before the server started"));
                }
                Ok(())
            });
        }
        let child = spawn_from_launcher(command).map_err(|source| Error::Spawn {
            binary: name,
            source,
        })?;
        Ok(Self {
            child: Mutex::new(Some(child)),
            log_path,
        })
    }

    /// `Some` once the process has exited (or was stopped).
    pub(crate) fn exit_status(&self) -> Option<String> {
        match self.lock().as_mut().map(Child::try_wait) {
            None => Some("stopped".to_owned()),
            Some(Ok(Some(status))) => Some(status.to_string()),
            Some(Ok(None)) => None,
            Some(Err(e)) => Some(format!("unknown: {e}")),
        }
    }

    /// Asks the server to stop (SIGTERM), waits up to `grace`, then kills it. Idempotent.
    pub(crate) fn stop(&self, grace: Duration) {
        let Some(mut child) = self.lock().take() else {
            return;
        };
        if !grace.is_zero() && terminate_within(&mut child, grace).is_some() {
            return;
        }
        let _ = child.kill();
        let _ = child.wait();
    }

    /// The start and end of the server's log for error messages: a usage error is at the top,
    /// the reason it stopped at the bottom.
    pub(crate) fn log_excerpt(&self) -> String {
        const HEAD: usize = 10;
        const TAIL: usize = 25;
        let text = match std::fs::read(&self.log_path) {
            Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            Err(e) => return format!("(could not read {}: {e})", self.log_path.display()),
        };
        let lines: Vec<&str> = text.lines().collect();
        if lines.len() <= HEAD + TAIL {
            return lines.join("\n");
        }
        let head = lines[..HEAD].join("\n");
        let tail = lines[lines.len() - TAIL..].join("\n");
        format!("{head}\n  [...]\n{tail}")
    }

    pub(crate) fn log_path(&self) -> &Path {
        &self.log_path
    }

    fn lock(&self) -> MutexGuard<'_, Option<Child>> {
        // A panic elsewhere must not stop us from killing the server.
        self.child
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

fn terminate_within(child: &mut Child, grace: Duration) -> Option<ExitStatus> {
    // SAFETY: kill(2) on the pid of a child we have not yet reaped, so it cannot be reused.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline {
        if let Ok(Some(status)) = child.try_wait() {
            return Some(status);
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    None
}

/// PR_SET_PDEATHSIG fires when the *thread* that forked the child exits, and test harnesses
/// run each test on a short-lived thread; so every server is forked from one thread that lives
/// as long as the process.
fn spawn_from_launcher(command: Command) -> io::Result<Child> {
    type Request = (Command, mpsc::Sender<io::Result<Child>>);
    static LAUNCHER: OnceLock<mpsc::Sender<Request>> = OnceLock::new();
    let launcher = LAUNCHER.get_or_init(|| {
        let (requests, incoming) = mpsc::channel::<Request>();
        std::thread::Builder::new()
            .name("testkit-launcher".to_owned())
            .spawn(move || {
                for (mut command, reply) in incoming {
                    let _ = reply.send(command.spawn());
                }
            })
            .expect("spawn the testkit launcher thread");
        requests
    });
    let (reply, answer) = mpsc::channel();
    launcher
        .send((command, reply))
        .map_err(|_| io::Error::other("the testkit launcher thread is gone"))?;
    answer
        .recv()
        .map_err(|_| io::Error::other("the testkit launcher thread is gone"))?
}

/// Finds `name` in `$PARABYTE_TOOLS_BIN`, then `<repo>/.tools/bin` (where
/// scripts/install-test-servers.sh puts it), then `$PATH`, then `/usr/sbin`.
pub(crate) fn find_binary(name: &'static str) -> Result<PathBuf> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    if let Some(dir) = std::env::var_os(TOOLS_BIN_ENV) {
        dirs.push(dir.into());
    }
    dirs.push(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.tools/bin"));
    if let Some(path) = std::env::var_os("PATH") {
        dirs.extend(std::env::split_paths(&path));
    }
    // Debian's nginx lives in sbin, which a normal user's PATH may lack.
    dirs.push(PathBuf::from("/usr/sbin"));
    dirs.iter()
        .map(|dir| dir.join(name))
        .find(|candidate| is_executable(candidate))
        .ok_or_else(|| Error::ToolMissing {
            binary: name,
            searched: format!("${TOOLS_BIN_ENV}, <repo>/.tools/bin and $PATH"),
        })
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sleeper(dir: &Path) -> ServerProcess {
        ServerProcess::spawn(
            "sleep",
            Path::new("/bin/sleep"),
            &["30".into()],
            dir,
            dir.join("log"),
        )
        .unwrap()
    }

    #[test]
    fn stop_terminates_and_is_idempotent() {
        let dir = tempfile::tempdir().unwrap();
        let process = sleeper(dir.path());
        assert_eq!(process.exit_status(), None);
        process.stop(Duration::from_secs(5));
        assert_eq!(process.exit_status().as_deref(), Some("stopped"));
        process.stop(Duration::from_secs(5));
    }

    #[test]
    fn child_forked_from_a_finished_thread_keeps_running() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().to_owned();
        let process = std::thread::spawn(move || sleeper(&path)).join().unwrap();
        std::thread::sleep(Duration::from_millis(100));
        assert_eq!(
            process.exit_status(),
            None,
            "PDEATHSIG fired with the short-lived thread"
        );
        process.stop(Duration::ZERO);
    }

    #[test]
    fn missing_binary_names_the_install_script() {
        let message = find_binary("parabyte-no-such-server")
            .unwrap_err()
            .to_string();
        assert!(
            message.contains("scripts/install-test-servers.sh"),
            "{message}"
        );
    }
}
