"""Smoke test of an installed wheel, run by scripts/wheel-smoke.sh with the fresh virtualenv's
python: `import parabyte` and the `parabyte` command both download from a real S3 server
(the test kit's `testbed`), and Ctrl-C stops the command mid-download with status 130,
leaving nothing under the final name.

    wheel_smoke.py TESTBED WORK_DIR
"""

from __future__ import annotations

import hashlib
import http.server
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

BUCKET = "smoke"
SMALL = 20
LARGE = 4 << 20
LIMIT_S = 60
STALL_AFTER = 64 << 10
STALLED_SIZE = 32 << 20


def wait_until(what: str, event, limit_s: float = LIMIT_S) -> None:
    deadline = time.monotonic() + limit_s
    while not event():
        if time.monotonic() > deadline:
            sys.exit(f"wheel smoke: gave up waiting for {what} after {limit_s}s")
        time.sleep(0.05)


def run(*command: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        command, check=False, env=env, capture_output=True, text=True, timeout=LIMIT_S
    )
    if done.returncode != 0:
        sys.exit(f"wheel smoke: {' '.join(command)} exited {done.returncode}:\n{done.stderr}")
    return done


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def files_in(directory: Path) -> list[str]:
    return sorted(str(p.relative_to(directory)) for p in directory.rglob("*") if p.is_file())


def start_testbed(testbed: Path, work: Path) -> tuple[subprocess.Popen, dict[str, str], Path]:
    env_file = work / "testbed.env"
    log_path = work / "testbed.log"
    # A pipe on stdin: testbed stops when it closes, so it cannot outlive this script.
    server = subprocess.Popen(
        [
            str(testbed),
            "up",
            "--bucket",
            BUCKET,
            "--small",
            str(SMALL),
            "--small-size",
            "1024",
            "--large-size",
            str(LARGE),
            "--env-file",
            str(env_file),
            "--max-seconds",
            "600",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=log_path.open("w"),
    )
    wait_until("testbed to start", lambda: env_file.exists() or server.poll() is not None)
    if not env_file.exists():
        sys.exit(f"wheel smoke: testbed did not start:\n{log_path.read_text()}")
    values = {}
    for line in env_file.read_text().splitlines():
        name, _, value = line.removeprefix("export ").partition("=")
        values[name] = value.strip("'")
    found = re.search(r"\(log: (.+)/server\.log\)", log_path.read_text())
    if not found:
        sys.exit("wheel smoke: testbed no longer says where the server keeps its files")
    return server, values, Path(found.group(1)) / "root" / BUCKET


class StallingHandler(http.server.BaseHTTPRequestHandler):
    """Answers any ranged GET of a STALLED_SIZE file with its first STALL_AFTER bytes, then
    holds the connection open until the test ends."""

    sent = threading.Event()
    release = threading.Event()

    def do_GET(self) -> None:
        first, _, last = self.headers.get("Range", "bytes=0-").removeprefix("bytes=").partition("-")
        start = int(first)
        end = min(int(last) if last else STALLED_SIZE - 1, STALLED_SIZE - 1)
        self.send_response(206)
        self.send_header("Content-Range", f"bytes {start}-{end}/{STALLED_SIZE}")
        self.send_header("Content-Length", str(end - start + 1))
        self.send_header("ETag", '"stalled"')
        self.end_headers()
        try:
            self.wfile.write(b"s" * min(STALL_AFTER, end - start + 1))
            self.wfile.flush()
        except ConnectionError:
            return  # parabyte was interrupted before this part's bytes went out
        StallingHandler.sent.set()
        StallingHandler.release.wait(LIMIT_S)

    def log_message(self, *args) -> None:
        pass


def main() -> None:
    testbed, work = Path(sys.argv[1]), Path(sys.argv[2])
    bin_dir = Path(sys.executable).parent
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    server, store, root = start_testbed(testbed, work)
    try:
        env.update(store)
        os.environ.update(store)

        # The module, from the wheel, not from the source tree.
        import parabyte

        assert Path(parabyte.__file__).is_relative_to(sys.prefix), parabyte.__file__
        summary = parabyte.download(f"s3://{BUCKET}/large/big.bin", str(work / "py" / "big.bin"))
        assert summary.ok and summary.objects == 1, summary
        assert digest(work / "py" / "big.bin") == digest(root / "large" / "big.bin")
        data = parabyte.get_bytes(f"s3://{BUCKET}/small/00003.bin")
        assert bytes(data) == (root / "small" / "00003.bin").read_bytes()
        print(f"wheel smoke: import parabyte {parabyte.__version__} downloads", flush=True)

        # The command, installed by the same wheel.
        command = bin_dir / "parabyte"
        version = run(str(command), "--version", env=env).stdout.strip()
        assert version == f"parabyte {parabyte.__version__}", version
        out = work / "cli"
        run(str(command), "cp", "--quiet", f"s3://{BUCKET}/", str(out), env=env)
        assert files_in(out) == files_in(root), (files_in(out), files_in(root))
        assert all(digest(out / name) == digest(root / name) for name in files_in(root))
        run(str(command), "completions", "bash", env=env)
        print(f"wheel smoke: {version} copies {len(files_in(out))} objects", flush=True)

        interrupt_mid_download(command, work, env)
        print("wheel smoke: Ctrl-C ends the command with 130, nothing partial", flush=True)
    finally:
        server.stdin.close()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()


def interrupt_mid_download(command: Path, work: Path, env: dict[str, str]) -> None:
    web = http.server.ThreadingHTTPServer(("127.0.0.1", 0), StallingHandler)
    web.daemon_threads = True
    threading.Thread(target=web.serve_forever, daemon=True).start()
    out = work / "interrupted"
    url = f"http://127.0.0.1:{web.server_address[1]}/stalled.bin"
    try:
        child = subprocess.Popen(
            [str(command), "cp", "--part-size", "8MiB", url, f"{out}/"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        wait_until("the download to be mid-body", StallingHandler.sent.is_set)
        child.send_signal(signal.SIGINT)
        try:
            _, stderr = child.communicate(timeout=LIMIT_S / 2)
        except subprocess.TimeoutExpired:
            child.kill()
            sys.exit("wheel smoke: parabyte ignored Ctrl-C")
    finally:
        StallingHandler.release.set()
        web.shutdown()
    assert child.returncode == 130, (child.returncode, stderr)
    assert "interrupted" in stderr and "Traceback" not in stderr, stderr
    # At most the hidden part file kept to resume from; never a file under the final name.
    left = files_in(out) if out.exists() else []
    assert all(name.startswith(".parabyte-") for name in left), left


if __name__ == "__main__":
    main()
