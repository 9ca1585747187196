"""The fsspec filesystems side by side, for bench/fsspec_rows.py: parabyte's
`ParabyteFileSystem`, s3fs's `S3FileSystem` and obstore's adapter (`obstore.fsspec`), each
made with its defaults (only the endpoint, the keys and the region given) and driven by the
same fsspec calls, as pandas, Dask and the rest drive them.

    fsspec_libs.py LIBRARY cat     --endpoint-url URL --bucket B --prefix P --count N
    fsspec_libs.py LIBRARY get     --endpoint-url URL --bucket B --prefix P --dest DIR --count N
    fsspec_libs.py LIBRARY get     --endpoint-url URL --bucket B --prefix P --dest DIR --key K
    fsspec_libs.py LIBRARY parquet --endpoint-url URL --bucket B --prefix P
    fsspec_libs.py make-parquet    --dest DIR --files N --file-mib M

cat:     `fs.cat([N paths])`, the paths `B/P/00000.bin`...; prints the bytes and the MD5 of
         the objects' contents in key order.
get:     `fs.get([N paths B/P/000.bin...], [N files DIR/000.bin...])`, or with --key
         `fs.get("B/P/K", "DIR/K")` (one object). Lists, not `fs.get("B/P/", "DIR/",
         recursive=True)`: obstore's adapter (0.12.1) fails that form, GETting the prefix
         itself as a key.
parquet: `pandas.read_parquet("B/P/", filesystem=fs)`; prints the rows and the sum of `c0`.
make-parquet: the Parquet dataset F4 reads, N files of about M MiB each (8 float64 columns of
         random numbers, pyarrow's defaults), and its rows and sum of `c0`, as JSON.

Each run prints one JSON line; `op_s` is the call's own time (the process's startup and
imports not counted). Credentials and region come from the environment.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from pathlib import Path

LIBRARIES = ("parabyte", "s3fs", "obstore")
COLUMNS = 8


def filesystem(library: str, endpoint: str, bucket: str):
    key, secret = os.environ["AWS_ACCESS_KEY_ID"], os.environ["AWS_SECRET_ACCESS_KEY"]
    region = os.environ.get("AWS_REGION", "us-east-1")
    if library == "parabyte":
        from parabyte.fsspec import ParabyteFileSystem

        return ParabyteFileSystem(endpoint_url=endpoint)
    if library == "s3fs":
        import s3fs

        return s3fs.S3FileSystem(
            key=key, secret=secret, endpoint_url=endpoint, client_kwargs={"region_name": region}
        )
    from obstore.fsspec import FsspecStore

    return FsspecStore(
        "s3",
        endpoint=endpoint,
        access_key_id=key,
        secret_access_key=secret,
        region=region,
        client_options={"allow_http": True},
    )


def make_parquet(dest: Path, files: int, file_mib: int) -> dict:
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = (file_mib << 20) // (8 * COLUMNS)
    total_rows, total_c0 = 0, 0.0
    dest.mkdir(parents=True, exist_ok=True)
    for i in range(files):
        rng = np.random.default_rng(i)
        columns = {f"c{c}": rng.random(rows) for c in range(COLUMNS)}
        total_rows += rows
        total_c0 += float(columns["c0"].sum())
        pq.write_table(pa.table(columns), dest / f"part-{i:03}.parquet")
    return {"rows": total_rows, "c0_sum": total_c0}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("library", choices=[*LIBRARIES, "make-parquet"])
    p.add_argument("workload", nargs="?", choices=["cat", "get", "parquet"])
    p.add_argument("--endpoint-url")
    p.add_argument("--bucket")
    p.add_argument("--prefix")
    p.add_argument("--count", type=int)
    p.add_argument("--key")
    p.add_argument("--dest", type=Path)
    p.add_argument("--files", type=int)
    p.add_argument("--file-mib", type=int)
    args = p.parse_args()
    if args.library == "make-parquet":
        print(json.dumps(make_parquet(args.dest, args.files, args.file_mib)))
        return 0

    if args.workload == "parquet":
        import pandas as pd  # before the clock: `setup_s` is the filesystem's import and making
    started = time.perf_counter()
    fs = filesystem(args.library, args.endpoint_url, args.bucket)
    made = time.perf_counter()
    base = f"{args.bucket}/{args.prefix}"
    out: dict = {}
    if args.workload == "cat":
        paths = [f"{base}/{i:05}.bin" for i in range(args.count)]
        got = fs.cat(paths)
        digest = hashlib.md5()
        for path in paths:
            digest.update(got[path])
        out = {"bytes": sum(len(v) for v in got.values()), "md5": digest.hexdigest()}
    elif args.workload == "get" and args.key:
        fs.get(f"{base}/{args.key}", f"{args.dest}/{args.key}")
    elif args.workload == "get":
        names = [f"{i:03}.bin" for i in range(args.count)]
        fs.get([f"{base}/{n}" for n in names], [f"{args.dest}/{n}" for n in names])
    else:
        frame = pd.read_parquet(f"{base}/", filesystem=fs)
        out = {"rows": len(frame), "c0_sum": float(frame["c0"].sum())}
    done = time.perf_counter()
    out |= {"op_s": round(done - made, 4), "setup_s": round(made - started, 4)}
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
