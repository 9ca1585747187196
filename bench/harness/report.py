"""docs/BENCHMARKS.md and its plots, from one run's results: medians, ratios to the fastest
peer and to the physical floor, and parabyte's targets, each met or missed by how much."""

from __future__ import annotations

import math
import re
import statistics
from pathlib import Path

from .setup import RATE_BYTES_PER_S, ROUND_TRIP_S

PEER_ORDER = ["parabyte", "s5cmd", "aws", "boto3", "rclone", "aria2c", "axel", "curl",
              "parabyte-py", "boto3-tm", "boto3-tm-sized", "obstore"]
OURS = ("parabyte", "parabyte-py")  # the CLI, and the Python package on the same engine


def ours(tool: str) -> bool:
    return tool in OURS


TOOL_NAMES = {
    "parabyte": "parabyte", "s5cmd": "s5cmd", "aws": "aws s3 (AWS CLI)",
    "boto3": "boto3 / s3transfer", "rclone": "rclone", "aria2c": "aria2c", "axel": "axel",
    "curl": "curl (baseline)", "parabyte-py": "parabyte from Python",
    "boto3-tm": "boto3 TransferManager", "boto3-tm-sized": "boto3 TransferManager, sizes given",
    "obstore": "obstore",
}
MIB = 1 << 20
GIB = 1 << 30


# -- numbers ---------------------------------------------------------------------------------


class Row:
    """One tool at one setting on one workload, summarised over its runs."""

    def __init__(self, record: dict):
        self.record = record
        self.workload = record["workload"]
        self.tool = record["tool"]
        self.setting = record["setting"]
        self.in_flight = record["in_flight"]
        self.skip = record["skip"]
        self.argv = record["argv"]
        runs = record["runs"]
        self.error = next((r["error"] for r in runs if r["error"]), None)
        self.good = [r for r in runs if not r["error"]]
        self.ok = bool(self.good) and not self.error

    def median(self, key: str) -> float | None:
        values = [r[key] for r in self.good]
        return statistics.median(values) if values else None

    @property
    def wall(self) -> float | None:
        return self.median("wall_s") if self.ok else None

    @property
    def cpu(self) -> float | None:
        return self.median("cpu_s") if self.ok else None

    @property
    def rss(self) -> float | None:
        return self.median("peak_rss_mib") if self.ok else None

    def requests(self) -> dict[str, float]:
        kinds = sorted({k for r in self.good for k in r["requests"]})
        return {k: statistics.median(r["requests"].get(k, 0) for r in self.good) for k in kinds}

    def connections(self) -> float | None:
        values = [r["connections"] for r in self.good if r["connections"] is not None]
        return statistics.median(values) if values else None

    def checked(self) -> str:
        """How parabyte checked the content (every run alike, or each way seen); "—" for the
        other tools, which do not say."""
        ways = sorted({r.get("checked") for r in self.good if r.get("checked")})
        return " / ".join(ways) or "—"

    @property
    def label(self) -> str:
        if self.setting == "pipelined":
            return "pipelined only (`--list-parallelism 1`)"
        if self.setting == "unverified":
            return "no flags but `--no-verify` (no content check)"
        return "no flags" if self.setting == "default" else f"{self.setting} in flight"

    @property
    def short(self) -> str:
        shown = self.setting if isinstance(self.setting, str) else f"@{self.setting}"
        return f"{self.tool} {shown}"


def floor_s(meta: dict, workload: str, in_flight: int | None) -> float | None:
    """The harness's physical floor: W1 ceil(N / in flight) round trips; W2 and W3 the bytes
    over (connections x per-connection rate). Both as measured through toxiproxy before the
    runs (a request's round trip is a little over the 20 ms of latency it adds, a connection's
    rate a little under its 50 MB/s cap), so no tool can beat them. TLS handshakes and
    toxiproxy's own CPU are not in it; neither is the first listing request."""
    if not in_flight:
        return None
    s = meta["sizes"]
    round_trip, rate = network(meta)
    if workload in ("W1", "W1m", "W6a", "W6m", "P1"):
        return math.ceil(s["w1_count"] / in_flight) * round_trip
    if workload == "W8":
        return math.ceil(s.get("w8_count", 0) / in_flight) * round_trip
    if workload in ("W2", "W2c", "W2o", "W7", "P2"):
        return s["w2_size"] / (in_flight * rate)
    if workload in ("W3", "W3c", "W3o", "W6b"):
        return s["w3_count"] * s["w3_size"] / (in_flight * rate)
    return None


def network(meta: dict) -> tuple[float, float]:
    """(round trip in seconds, one connection's bytes per second) as measured before the runs;
    the configured latency and cap where the run measured nothing."""
    measured = meta.get("emulation") or {}
    round_trip = measured.get("round_trip_ms")
    rate = measured.get("connection_rate_mb_s")
    return (round_trip / 1000 if round_trip else ROUND_TRIP_S,
            rate * 1e6 if rate else RATE_BYTES_PER_S)


def fastest_peer(rows: list[Row]) -> Row | None:
    peers = [r for r in rows if not ours(r.tool) and r.ok]
    return min(peers, key=lambda r: r.wall) if peers else None


def _fmt(x: float | None, digits: int = 2) -> str:
    if x is None:
        return "—"
    return f"{x:.{digits}f}"


def _size_name(n: int) -> str:
    return f"{n / GIB:g} GiB" if n >= GIB else f"{n / MIB:g} MiB"


def _ratio(x: float | None) -> str:
    return "—" if x is None else f"{x:.2f}x"


# -- targets ---------------------------------------------------------------------------------


def targets(meta: dict, by_wl: dict[str, list[Row]]) -> list[tuple[str, str, str]]:
    """(target, measured, verdict) for each of parabyte's targets that this run measured."""
    out = []

    def get(wl: str, tool: str, setting) -> Row | None:
        return next((r for r in by_wl.get(wl, []) if r.tool == tool and r.setting == setting
                     and r.ok), None)

    for n in meta["concurrencies"]:
        row = get("W1", "parabyte", n)
        if row:
            fl = floor_s(meta, "W1", n)
            ratio = row.wall / fl
            out.append((f"W1 within 1.05x of the floor at {n} in flight",
                        f"{row.wall:.2f} s vs floor {fl:.2f} s: {ratio:.2f}x",
                        "met" if ratio <= 1.05 else f"missed by {(ratio / 1.05 - 1) * 100:.0f}%"
                        f" ({row.wall - 1.05 * fl:.2f} s over 1.05x)"))

    # Sizes known up front (the seeds' headline path) need no listing: never slower.
    for setting in ["default"] + meta["concurrencies"]:
        known, listed = get("W1m", "parabyte", setting), get("W1", "parabyte", setting)
        if known and listed:
            ratio = known.wall / listed.wall
            out.append((f"W1m (sizes from a manifest) at least as fast as W1 (listed), {setting}",
                        f"{known.wall:.2f} s vs {listed.wall:.2f} s: {ratio:.2f}x",
                        "met" if ratio <= 1.0 else f"missed by {(ratio - 1) * 100:.0f}%"))

    # Many small objects over HTTPS against curl at equal connections: listed (W6a; curl is
    # handed the URLs) and from a manifest (W6m, the same work as curl's).
    for wl in ("W6a", "W6m"):
        for n in meta["concurrencies"]:
            row, curl = get(wl, "parabyte", n), get(wl, "curl", n)
            if row and curl:
                ratio = row.wall / curl.wall
                ours_conns, curl_conns = _fmt(row.connections(), 0), _fmt(curl.connections(), 0)
                out.append((f"{wl} within 1.1x of curl at {n} connections",
                            (f"parabyte {row.wall:.2f} s ({ours_conns} connections), "
                             f"curl {curl.wall:.2f} s ({curl_conns}): {ratio:.2f}x"),
                            "met" if ratio <= 1.1 else f"missed by {(ratio / 1.1 - 1) * 100:.0f}%"))

    # Python: many small objects, to files (P1) and into memory (P3), against obstore.
    for wl in ("P1", "P3"):
        for setting in ["default"] + meta["concurrencies"]:
            ours_row, theirs = get(wl, "parabyte-py", setting), get(wl, "obstore", setting)
            if ours_row and theirs:
                ratio = ours_row.wall / theirs.wall
                out.append((f"{wl} faster than obstore, {setting}",
                            f"parabyte {ours_row.wall:.2f} s, obstore {theirs.wall:.2f} s: "
                            f"{ratio:.2f}x", "met" if ratio < 1.0 else
                            f"missed: {ratio:.2f}x obstore's time"))

    row = get("W1", "parabyte", "default")
    peers = [r for r in by_wl.get("W1", []) if r.tool != "parabyte" and r.setting == "default"
             and r.ok]
    if row and peers:
        best = min(peers, key=lambda r: r.wall)
        verdict = ("met" if row.wall < best.wall else
                   f"missed: {row.wall / best.wall:.2f}x the time of {best.tool}")
        out.append(("W1 with no flags faster than every peer at its own defaults",
                    f"parabyte {row.wall:.2f} s; fastest peer at defaults: {best.tool} "
                    f"{best.wall:.2f} s ({best.wall / row.wall:.2f}x parabyte's time)", verdict))

    for wl in ("W2", "W3"):
        default = get(wl, "parabyte", "default")
        # Within 1.1x of curl at the same number of connections: no flags (curl at the
        # connections parabyte opens by default) and at each setting.
        compared = [("with no flags", default, default and get(wl, "curl", default.in_flight))]
        compared += [(f"at {n} in flight", get(wl, "parabyte", n), get(wl, "curl", n))
                     for n in meta["concurrencies"]]
        for label, row, curl in compared:
            if row and curl:
                ratio = row.wall / curl.wall
                out.append((f"{wl} {label} within 1.1x of curl at {curl.setting} connections, "
                            "content checked",
                            f"parabyte {row.wall:.2f} s (checked by {row.checked()}), curl "
                            f"{curl.wall:.2f} s: {ratio:.2f}x",
                            "met" if ratio <= 1.1 else f"missed by {(ratio / 1.1 - 1) * 100:.0f}%"
                            f" ({row.wall - 1.1 * curl.wall:.2f} s over 1.1x)"))
        # Faster than every peer (curl is the baseline, not a peer) at its defaults, and at
        # each equal setting.
        for setting in ["default"] + meta["concurrencies"]:
            row = get(wl, "parabyte", setting)
            peers = [r for r in by_wl.get(wl, []) if r.setting == setting and r.ok
                     and not ours(r.tool) and r.tool != "curl"]
            if row and peers:
                best = min(peers, key=lambda r: r.wall)
                shown = "its defaults" if setting == "default" else f"{setting} in flight"
                out.append((f"{wl} faster than every peer at {shown}",
                            f"parabyte {row.wall:.2f} s; fastest peer {best.tool} "
                            f"{best.wall:.2f} s",
                            "met" if row.wall < best.wall else
                            f"missed: {row.wall / best.wall:.2f}x {best.tool}'s time"))

    row = get("W7", "parabyte", "default")
    if row:
        fl = floor_s(meta, "W7", row.in_flight)
        share = fl / row.wall
        out.append(("W7 (HTTP, no flags) at least 90% of the floor",
                    f"{row.wall:.2f} s vs floor {fl:.2f} s at {row.in_flight} connections: "
                    f"{share * 100:.0f}%",
                    "met" if share >= 0.9 else f"missed: {share * 100:.0f}% of the floor"))
        aria = get("W7", "aria2c", 16)
        if aria:
            out.append(("W7 faster than aria2c -x 16 -s 16",
                        f"parabyte {row.wall:.2f} s, aria2c {aria.wall:.2f} s",
                        "met" if row.wall < aria.wall else
                        f"missed: {row.wall / aria.wall:.2f}x aria2c's time"))
    for setting in ["default"] + meta["concurrencies"]:
        row, aria = get("W8", "parabyte", setting), get("W8", "aria2c", setting)
        if row and aria:
            out.append((f"W8 manifest faster than aria2c -i ({setting})",
                        f"parabyte {row.wall:.2f} s, aria2c {aria.wall:.2f} s",
                        "met" if row.wall < aria.wall else
                        f"missed: {row.wall / aria.wall:.2f}x aria2c's time"))

    # Issue 14: listing at least 3x the fastest peer, and within 1.5x of the server's own
    # time for the pages: the sequential listing without toxiproxy (W4d, W4kd).
    for wl, direct_wl in (("W4k", "W4kd"), ("W4", "W4d")):
        row, best = get(wl, "parabyte", "default"), fastest_peer(by_wl.get(wl, []))
        if row and best:
            speedup = best.wall / row.wall
            out.append((f"{wl} listing at least 3x faster than the fastest peer",
                        f"parabyte {row.wall:.2f} s, {best.tool} {best.wall:.2f} s: "
                        f"{speedup:.2f}x",
                        "met" if speedup >= 3 else f"missed: {speedup:.2f}x of the 3x"))
        direct = get(direct_wl, "parabyte", "pipelined")
        if row and direct:
            ratio = row.wall / direct.wall
            out.append((f"{wl} listing within 1.5x of the server's own time for the pages",
                        f"parabyte {row.wall:.2f} s, the pages one after another without "
                        f"toxiproxy ({direct_wl}) {direct.wall:.2f} s: {ratio:.2f}x",
                        "met" if ratio <= 1.5 else f"missed: {ratio:.2f}x"))
    pipelined, direct = get("W4", "parabyte", "pipelined"), get("W4d", "parabyte", "pipelined")
    if pipelined and direct:
        # Sequential floor: every page costs a round trip plus the server's own time, which
        # the same page-after-page listing without toxiproxy measures.
        pages = math.ceil(meta["sizes"]["w4_dirs"] * meta["sizes"]["w4_per_dir"] / 1000)
        fl = pages * ROUND_TRIP_S + direct.wall
        ratio = pipelined.wall / fl
        out.append(("W4 pipelined alone within 1.1x of the sequential floor",
                    f"{pipelined.wall:.2f} s vs {pages} pages x {ROUND_TRIP_S * 1000:.0f} ms + "
                    f"{direct.wall:.2f} s of server time (W4d) = {fl:.2f} s: {ratio:.2f}x",
                    "met" if ratio <= 1.1 else f"missed by {(ratio / 1.1 - 1) * 100:.0f}%"))
    first = get("W4c", "parabyte", "default")
    if first and first.median("first_object_s") is not None and row:
        out.append(("Downloads start with the first page (time until the first object starts)",
                    f"{first.median('first_object_s'):.3f} s into a {first.wall:.2f} s run that "
                    f"lists and fetches {meta['sizes']['w4_dirs'] * meta['sizes']['w4_per_dir']:,}"
                    f" objects (the listing alone: {row.wall:.2f} s)", "reported"))

    for wl, unit, per in (("W5a", "object", meta["sizes"]["w1_count"]),
                          ("W5b", "GiB", meta["sizes"]["w2_size"] / GIB)):
        rows = [r for r in by_wl.get(wl, []) if r.ok]
        mine = [r for r in rows if r.tool == "parabyte" and r.setting != "unverified"]
        others = [r for r in rows if r.tool != "parabyte"]
        unverified = next((r for r in rows if r.tool == "parabyte"
                           and r.setting == "unverified"), None)
        if mine and unverified:
            row = min(mine, key=lambda r: r.cpu)
            out.append((f"{wl}: what checking the content (by the store's CRC64NVME) costs",
                        f"{row.cpu / per:.3g} s/{unit} checked, {unverified.cpu / per:.3g} s/{unit}"
                        " with `--no-verify`; peers do not check content", "reported"))
        curl = next((r for r in others if r.tool == "curl"), None)
        if mine and curl:
            # Per small object: at most curl's CPU; per GiB, with the content checked: at
            # most 1.1x curl's, which checks nothing.
            row = min(mine, key=lambda r: r.cpu)
            allowed = 1.0 if unit == "object" else 1.1
            scale = 1000 if unit == "object" else 1
            shown = "ms" if unit == "object" else "s"
            ratio = row.cpu / curl.cpu
            out.append((f"{wl}: CPU per {unit}"
                        + (", content checked," if unit == "GiB" else "")
                        + (" at most curl's" if allowed == 1.0 else f" at most {allowed}x curl's"),
                        f"parabyte {row.cpu / per * scale:.3g} {shown}/{unit}, curl "
                        f"{curl.cpu / per * scale:.3g} {shown}/{unit}: {ratio:.2f}x",
                        "met" if ratio <= allowed else
                        f"missed by {(ratio / allowed - 1) * 100:.0f}%"))

    size = meta["sizes"].get("w9_size")
    # The goal: parabyte's CPU per GiB no more than curl's (unchecked) plus this machine's
    # CRC64NVME cost, measured in the same run (examples/crc_rate.rs).
    crc = meta.get("crc_rate", {}).get("CRC64NVME")
    for setting in ["default", 1, 16]:
        row = get("W9", "parabyte", setting)
        curl = get("W9", "curl", row.in_flight if row else None)
        if row and size:
            gib = size / GIB
            measured = (f"parabyte {size / row.wall / 1e9:.2f} GB/s, {row.cpu / gib:.2f} CPU "
                        f"s/GiB (checked by {row.checked()})")
            if curl:
                measured += (f"; curl {size / curl.wall / 1e9:.2f} GB/s, "
                             f"{curl.cpu / gib:.2f} CPU s/GiB")
            shown = "no flags" if setting == "default" else f"{setting} in flight"
            ranges = "one stream" if row.in_flight == 1 else f"{row.in_flight} ranges"
            verdict = "reported"
            if curl and crc:
                allowed = curl.cpu / gib + crc["cpu_s_per_gib"]
                measured += (f"; this machine's CRC64NVME {crc['gib_s']:.1f} GiB/s, "
                             f"{crc['cpu_s_per_gib']:.3f} CPU s/GiB: at most {allowed:.2f}")
                ours_per_gib = row.cpu / gib
                verdict = ("met" if ours_per_gib <= allowed else
                           f"missed by {(ours_per_gib / allowed - 1) * 100:.0f}%")
            goal = ", CPU per GiB at most curl's plus the CRC" if curl and crc else ""
            out.append((f"W9: a {_size_name(size)} object straight from the server, "
                        f"discarded ({shown}; curl with {ranges}){goal}", measured, verdict))

    worst = None
    for wl, rows in by_wl.items():
        for row in rows:
            if not ours(row.tool) or not row.ok:
                continue
            s5 = next((r for r in rows if r.tool == "s5cmd" and r.setting == row.setting
                       and r.ok), None)
            if s5 and (worst is None or row.rss / s5.rss > worst[0]):
                worst = (row.rss / s5.rss, wl, row, s5)
    if worst:
        ratio, wl, row, s5 = worst
        out.append(("Peak memory no higher than s5cmd's (same workload and setting)",
                    f"worst case {wl} {row.label}: parabyte {row.rss:.0f} MiB, s5cmd "
                    f"{s5.rss:.0f} MiB ({ratio:.2f}x)",
                    "met" if ratio <= 1.0 else f"missed by {(ratio - 1) * 100:.0f}%"))
    return out


# -- plots -----------------------------------------------------------------------------------


def plot(meta: dict, wl: dict, rows: list[Row], path: Path, cpu: bool) -> bool:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in rows if r.ok]
    if not rows:
        return False
    key = (lambda r: r.cpu) if cpu else (lambda r: r.wall)
    rows = sorted(rows, key=key, reverse=True)
    fig, ax = plt.subplots(figsize=(8, 0.32 * len(rows) + 1.3))
    y = range(len(rows))
    values = [key(r) for r in rows]
    colors = ["#d95f02" if ours(r.tool) else
              ("#7f7f7f" if r.tool == "curl" else "#1b9e77") for r in rows]
    ax.barh(list(y), values, color=colors)
    if not cpu:
        lows = [min(g["wall_s"] for g in r.good) for r in rows]
        highs = [max(g["wall_s"] for g in r.good) for r in rows]
        ax.errorbar(values, list(y), xerr=[[v - lo for v, lo in zip(values, lows)],
                                          [hi - v for v, hi in zip(values, highs)]],
                    fmt="none", ecolor="black", elinewidth=0.8, capsize=2)
        floors = [floor_s(meta, wl["id"], r.in_flight) for r in rows]
        fy = [i for i, f in enumerate(floors) if f]
        if fy:
            ax.scatter([floors[i] for i in fy], fy, marker="|", s=160, color="black",
                       zorder=3, label="floor at that tool's concurrency")
            ax.legend(loc="lower right", fontsize=8)
    ax.set_yticks(list(y))
    ax.set_yticklabels([r.short for r in rows], fontsize=8)
    ax.set_xlabel("CPU seconds (user + sys), median" if cpu else "wall seconds, median (min–max)")
    ax.set_title(f"{wl['id']}: {wl['title']}", fontsize=10)
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


# -- the page --------------------------------------------------------------------------------


def _command_line(argv: list[str] | None) -> str:
    if not argv:
        return ""
    text = " ".join(argv)
    text = re.sub(r"https?://127\.0\.0\.1:\d+/bench/[^ ']*\?X-Amz-[^ ']*", "<presigned URL>", text)
    text = re.sub(r"\S*/parabyte-bench-\d+/scratch/dest/[^/ ]+", "DEST", text)
    text = re.sub(r"\S*/parabyte-bench-\d+/scratch/conf/[^/ ]+/", "", text)
    text = re.sub(r"\S*/parabyte-bench-\d+/certs/", "", text)
    text = re.sub(r"\S*/\.tools/venv-bench/bin/", "", text)
    text = re.sub(r"/usr/bin/time -f %U %S %M -o \S+ ", "", text)
    text = re.sub(r"\S*/target/(?:release|profiling)/parabyte", "parabyte", text)
    text = re.sub(r"\S*/bench/peers/", "bench/peers/", text)
    return text


def write(meta: dict, results: list[dict], md_path: Path, png_dir: Path) -> None:
    rows = [Row(r) for r in results]
    by_wl: dict[str, list[Row]] = {}
    for row in rows:
        by_wl.setdefault(row.workload, []).append(row)
    for wl_rows in by_wl.values():
        wl_rows.sort(key=lambda r: (PEER_ORDER.index(r.tool),
                                    r.setting if isinstance(r.setting, int) else -1))
    wls = {w["id"]: w for w in meta["workloads"]}
    em = meta["emulation"]
    v = meta["versions"]
    m = meta["machine"]
    sizes = meta["sizes"]
    lines: list[str] = []
    add = lines.append

    add("# Benchmarks")
    add("")
    add(f"Generated by `make bench` (`{meta['command']}`) on {meta['date']}, "
        f"{meta['minutes']} minutes. Every figure on this page comes from that run; rerun it "
        "rather than edit this page. Raw results: `bench/results/<date>/results.json` "
        "(not committed). To measure your own store the same way, see "
        "[MEASURING.md](MEASURING.md).")
    add("")
    if meta["quick"]:
        add("> **Quick run** (`--quick`): small data and one run per cell. Not the numbers "
            "to quote.")
        add("")
    add("parabyte downloads from a real S3 server (versitygw) on loopback, next to the tools "
        "its users would otherwise use: s5cmd, the AWS CLI (`aws s3`), boto3/s3transfer, "
        "rclone, aria2c, axel and raw curl. toxiproxy in front of the server makes loopback "
        f"behave like S3 over a network: {em['round_trip_ms']:.1f} ms measured round trip "
        f"(10 ms each way) and {em['connection_rate_mb_s']:.1f} MB/s measured per connection "
        "(a 50 MB/s cap, about what S3 gives one connection).")
    add("")

    # Headline.
    add("## Headline")
    add("")
    add("Median wall seconds (W5: CPU seconds). *Fastest peer* is the fastest other tool at "
        "any setting, curl included.")
    add("")
    header = ["workload", "parabyte, no flags"]
    header += [f"parabyte @{n}" for n in meta["concurrencies"]]
    header += ["fastest peer", "parabyte's best vs fastest peer"]
    add("| " + " | ".join(header) + " |")
    add("|" + "---|" * len(header))
    for wid, wl in wls.items():
        wl_rows = by_wl.get(wid, [])
        cpu = wid.startswith("W5")
        value = (lambda r: r.cpu) if cpu else (lambda r: r.wall)
        unit = " s CPU" if cpu else " s"

        def cell(setting, wl_rows=wl_rows, value=value, unit=unit):
            row = next((r for r in wl_rows if ours(r.tool) and r.setting == setting),
                       None)
            if row is None:
                return "—"
            if not row.ok:
                return "failed" if row.error else "—"
            return f"{value(row):.2f}{unit}"

        # parabyte as users get it: content checks on.
        mine = [r for r in wl_rows if ours(r.tool) and r.ok
                and r.setting != "unverified"]
        peers = [r for r in wl_rows if not ours(r.tool) and r.ok]
        best_peer = min(peers, key=value) if peers else None
        best_mine = min(mine, key=value) if mine else None
        vs = "—"
        if best_peer and best_mine:
            ratio = value(best_peer) / value(best_mine)
            vs = (f"{ratio:.2f}x faster" if not cpu else f"{ratio:.2f}x less CPU") \
                if ratio >= 1 else (f"{1 / ratio:.2f}x slower" if not cpu
                                    else f"{1 / ratio:.2f}x more CPU")
        peer_txt = (f"{best_peer.short}: {value(best_peer):.2f}{unit}" if best_peer else "—")
        add(f"| {wid}: {wl['title']} | {cell('default')} | "
            + " | ".join(cell(n) for n in meta["concurrencies"])
            + f" | {peer_txt} | {vs} |")
    add("")

    # Targets.
    add("## parabyte's targets")
    add("")
    add("| target | measured | verdict |")
    add("|---|---|---|")
    for target, measured, verdict in targets(meta, by_wl):
        mark = "**met**" if verdict == "met" else f"**{verdict}**"
        add(f"| {target} | {measured} | {mark} |")
    add("")
    add("What limits parabyte where it misses (where the CPU, the memory and the wall time go, "
        "profiled): [PROFILE.md](PROFILE.md).")
    add("")

    # Setup.
    add("## Setup")
    add("")
    add(f"- **Machine**: {m['cpu']}, {m['cores']} cores, {m['memory']} memory, {m['os']}, "
        f"Linux {m['kernel']}"
        + (f"; the CRC64NVME check runs on {m['crc']}" if m.get("crc") else "")
        + ". Load average before the run "
        f"{meta['load_before'][0]:.2f}, after {meta['load_after'][0]:.2f}; the machine is "
        "shared with other work, see *Disturbance* below.")
    storage = ("tmpfs" if meta["tmpfs"] else "NOT a tmpfs: the disk is in these numbers")
    add(f"- **Storage**: the server's data and every download live in `{meta['data_dir']}` "
        f"({storage}), so no disk is measured. The harness uses /dev/shm, the tmpfs every "
        "Linux machine has, rather than mounting one (which needs root).")
    add(f"- **Server**: versitygw ({v['versitygw']}) with its posix backend, `--keep-alive`, "
        "one process for HTTP and one for HTTPS over the same root, each with `--access-log`. "
        "W2 and W3 are PUT through S3, so versitygw keeps a full-object CRC64NVME as S3 does "
        "by default; W2c/W3c are multipart uploads with a COMPOSITE CRC32, W2o/W3o old "
        "single PUTs with only an MD5 ETag. Everything else is written straight into the "
        "posix root with the `user.etag` attribute versitygw stores on PUT (an MD5 ETag). One "
        "object per prefix is checked with a HEAD before the runs.")
    add(f"- **Network**: toxiproxy ({v['toxiproxy']}) in front of both: a `latency` toxic of "
        "10 ms on each direction and a `bandwidth` toxic of 50,000 KB/s on the server's "
        "direction (toxiproxy applies it per connection). Measured with curl before the "
        f"runs: round trip of a 1 KiB GET on a kept-alive connection {em['round_trip_ms']:.1f} "
        f"ms ({em['direct_round_trip_ms']:.2f} ms without toxiproxy), one connection's rate "
        f"{em['connection_rate_mb_s']:.1f} MB/s, a TLS handshake {em['tls_handshake_ms']:.0f} "
        "ms. toxiproxy delays data, not TCP's own handshake: a new connection costs no round "
        "trip here where it costs one on a real network, while TLS handshakes pay in full. "
        "On two cores toxiproxy itself is CPU-bound at high aggregate rates, which is why "
        "raw curl ranges are the practical ceiling for W2 and W3.")
    add("- **HTTPS** (W6): a CA and an RSA-2048 server certificate for 127.0.0.1 made with "
        "openssl for the run; each tool trusts the CA through its own setting "
        "(`AWS_CA_BUNDLE`, `SSL_CERT_FILE`, `--ca-cert`, `--ca-certificate`, `--cacert`).")
    add(f"- **Data**: W1 {sizes['w1_count']} objects of {sizes['w1_size']} bytes; W2 one "
        f"object of {sizes['w2_size'] / MIB:.0f} MiB; W3 {sizes['w3_count']} objects of "
        f"{sizes['w3_size'] / MIB:.0f} MiB; W4 {sizes['w4_dirs'] * sizes['w4_per_dir']:,} "
        f"objects of {sizes['w4_size']} bytes in {sizes['w4_dirs']} \"folders\" "
        "(`w4/d000/k000000`...), listed recursively; W4k the same shape with "
        f"{sizes.get('w4k_dirs', 0) * sizes['w4_per_dir']:,} objects (`w4k/`); "
        "W7 the W2 file served by nginx "
        f"({v.get('nginx', 'nginx')}) as a plain web server; W8 {sizes.get('w8_count', 0)} "
        f"objects of {sizes.get('w8_size', 0) // 1024} KiB as presigned URLs (parabyte: a "
        "manifest with names and sizes; aria2c: `-i` with `out=` names); W9 one object of "
        f"{_size_name(sizes.get('w9_size', 0))}, a sparse file of zeros in the posix root "
        "(so it costs no memory) with the full-object CRC64NVME of its content and a multipart "
        "ETag, as S3 keeps such an object, fetched without toxiproxy and discarded (parabyte "
        "`--discard`, curl `-o /dev/null`).")
    add(f"- **Runs**: {meta['runs']} per cell, median reported; cells run round-robin and in a "
        "rotating order, so drift in the machine's load spreads over all tools. The first "
        "run of each cell checks every byte (MD5), the others sizes only; a cell whose run "
        "fails is reported as failed and not run again.")
    add("- **Measured**: wall time from spawning the tool to its exit (startup included); CPU "
        "seconds (user + sys) and peak RSS of the tool's process tree from GNU time (peak RSS "
        "is that of the largest single process); requests by kind from the servers' access "
        "logs (not from the tools); connections from toxiproxy's log (\"Accepted client\"), "
        "proxied runs only.")
    round_trip, rate = network(meta)
    add(f"- **Floor**: W1, W6a and W8: ceil(objects / in flight) x {round_trip * 1000:.1f} ms; "
        f"W2, W3, W6b and W7: bytes / (connections x {rate / 1e6:.1f} MB/s), with the "
        "connections the tool's setting allows (its defaults where no flag is given): the "
        "round trip and the rate of one connection as measured through toxiproxy before the "
        f"runs, not the {ROUND_TRIP_S * 1000:.0f} ms and {RATE_BYTES_PER_S / 1e6:.0f} MB/s it "
        "is set to, since no tool gets more. No floor for listing and direct runs.")
    add("- **Settings**: *no flags* is each tool as installed; *N in flight* sets each "
        "tool's own concurrency knobs to N and nothing else (part sizes stay at each tool's "
        "default): parabyte `--workers N --threads N --max-requests N`; s5cmd "
        "`--numworkers N cp --concurrency N`; aws `s3.max_concurrent_requests = N`; boto3 "
        "`TransferConfig(max_concurrency=N)` and a pool of N; rclone `--transfers N "
        "--checkers N --multi-thread-streams N`; aria2c `-j N` (many files) or `-x N -s N -k "
        "1M` (one file, N at most 16); axel `-n N`; curl `--parallel --parallel-max N` (many "
        "files) or N processes each fetching one range of a presigned URL (one file). aria2c, "
        "axel and curl get presigned URLs made by the harness (untimed). Tools that print a "
        "line per file are quieted (`--object-lines never`, `--log error`, "
        "`--only-show-errors`, `-q`, `-s`).")
    add("")
    add("Versions:")
    add("")
    for name in PEER_ORDER + ["versitygw", "nginx", "toxiproxy", "python"]:
        if name in v:
            add(f"- {name}: {v[name]}")
    add("")

    # Per workload.
    add("## Results")
    add("")
    add("Columns: median wall seconds (min–max over the runs); that over the fastest peer's "
        "median; the floor at that tool's concurrency and the median over it; CPU seconds and "
        "peak RSS (median); requests per run by kind as the server counted them; "
        "connections toxiproxy accepted per run; how parabyte checked the content (its "
        "summary: the store's CRC, the MD5 in the ETag, or the size only).")
    add("")
    for wid, wl in wls.items():
        wl_rows = by_wl.get(wid, [])
        add(f"### {wid}: {wl['title']}")
        add("")
        transport = {"proxy": "through toxiproxy", "direct": "straight to versitygw, no "
                     "toxiproxy: what the tool's CPU costs", "tls": "HTTPS through toxiproxy",
                     "web": "nginx (plain HTTP, no S3) through toxiproxy"}
        add(f"Transport: {transport[wl['transport']]}.")
        add("")
        best = fastest_peer(wl_rows)
        kinds = sorted({k for r in wl_rows if r.ok for k in r.requests()},
                       key=lambda k: (["LIST", "HEAD", "GET"].index(k)
                                      if k in ("LIST", "HEAD", "GET") else 9, k))
        header = ["tool", "setting", "wall s", "x fastest peer", "floor s", "x floor",
                  "CPU s", "peak RSS MiB"] + kinds + ["connections", "checked by"]
        add("| " + " | ".join(header) + " |")
        add("|" + "---|" * len(header))
        for row in wl_rows:
            name = f"**{row.tool}**" if ours(row.tool) else row.tool
            if row.skip:
                add(f"| {name} | {row.label} | n/a: {row.skip} |" + " |" * (len(header) - 3))
                continue
            if not row.ok:
                err = (row.error or "no run").replace("|", "/")
                add(f"| {name} | {row.label} | failed: {err} |" + " |" * (len(header) - 3))
                continue
            walls = [g["wall_s"] for g in row.good]
            fl = floor_s(meta, wid, row.in_flight)
            req = row.requests()
            conns = row.connections()
            cells = [name, row.label,
                     f"{row.wall:.2f} ({min(walls):.2f}–{max(walls):.2f})",
                     _ratio(row.wall / best.wall if best else None), _fmt(fl),
                     _ratio(row.wall / fl if fl else None), _fmt(row.cpu),
                     _fmt(row.rss, 0)]
            cells += [f"{req.get(k, 0):g}" for k in kinds]
            cells += ["—" if conns is None else f"{conns:g}", row.checked()]
            add("| " + " | ".join(cells) + " |")
        add("")
        if wid.startswith("W5"):
            per, unit = ((sizes["w1_count"], "object") if wid == "W5a"
                         else (sizes["w2_size"] / GIB, "GiB"))
            parts = [f"{r.short} {r.cpu / per * (1000 if unit == 'object' else 1):.3g}"
                     for r in sorted((r for r in wl_rows if r.ok), key=lambda r: r.cpu)]
            add(f"CPU per {unit} ({'ms' if unit == 'object' else 's'}), least first: "
                + ", ".join(parts) + ".")
            add("")
        image = png_dir / f"{wid}.png"
        if plot(meta, wl, wl_rows, image, cpu=wid.startswith("W5")):
            add(f"![{wid}]({image.parent.name}/{image.name})")
            add("")
        add("<details><summary>Command lines</summary>")
        add("")
        for row in wl_rows:
            if row.argv:
                note = f" ({row.record['note']})" if row.record.get("note") else ""
                add(f"- {row.short}: `{_command_line(row.argv)}`{note}")
        add("")
        add("</details>")
        add("")

    # Disturbance.
    add("## Disturbance")
    add("")
    add("CPU seconds the whole machine spent during each run, minus the tool's, versitygw's "
        "and toxiproxy's: other work on this shared machine (and the harness's own few "
        "milliseconds). Median over the runs of each workload, as a share of the two cores.")
    add("")
    add("| workload | other load, median | worst run |")
    add("|---|---|---|")
    for wid in wls:
        shares = []
        for row in by_wl.get(wid, []):
            for g in row.good:
                other = (g["machine_busy_s"] - g["cpu_s"] - sum(g["server_cpu_s"].values())
                         - g.get("harness_cpu_s", 0))
                shares.append(max(0.0, other) / (g["wall_s"] * int(m["cores"])))
        if shares:
            add(f"| {wid} | {statistics.median(shares) * 100:.0f}% | {max(shares) * 100:.0f}% |")
    add("")
    add("## Reproduce")
    add("")
    add("```sh")
    add("make bench                              # installs everything, runs all, rewrites this page")
    add('make bench BENCH_ARGS="--quick"         # small data, one run; report in bench/results/')
    add('make bench BENCH_ARGS="--workloads W1,W2 --tools parabyte,s5cmd,curl --runs 5"')
    add("```")
    add("")
    md_path.parent.mkdir(parents=True, exist_ok=True)
    md_path.write_text("\n".join(lines) + _kept_section(md_path))


# bench/sync_rm.py, bench/upload.py, bench/listing.py and bench/fsspec_rows.py write their
# tables between these markers; a rewrite of the page keeps them.
KEPT = [("<!-- sync-and-rm: start -->", "<!-- sync-and-rm: end -->"),
        ("<!-- uploads: start -->", "<!-- uploads: end -->"),
        ("<!-- listing: start -->", "<!-- listing: end -->"),
        ("<!-- sync-scale: start -->", "<!-- sync-scale: end -->"),
        ("<!-- fsspec: start -->", "<!-- fsspec: end -->")]


def write_section(md_path: Path, start: str, end: str, section: str) -> None:
    """Puts `section` between the markers `start` and `end` of the page (at its end the first
    time), leaving the rest as it is: how the scripts beside run.py write their tables."""
    text = md_path.read_text()
    before, found, rest = text.partition(start)
    if not found:
        before, rest = text, end
    _, _, after = rest.partition(end)
    md_path.write_text(
        before.rstrip("\n") + "\n\n" + start + "\n" + section + end + "\n" + after.lstrip("\n")
    )


def _kept_section(md_path: Path) -> str:
    """The sections those scripts wrote, as they are, to go on after the new text."""
    if not md_path.exists():
        return ""
    text = md_path.read_text()
    kept = []
    for kept_start, kept_end in KEPT:
        _, start, rest = text.partition(kept_start)
        section, end, _ = rest.partition(kept_end)
        if start and end:
            kept.append(f"\n\n{start}{section}{end}")
    return "".join(kept) + "\n" if kept else ""
