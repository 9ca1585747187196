"""boto3 as its users drive it, for the benchmark: `download_file` for one object, boto3's
transfer manager (what `download_file` uses inside) for every object under a prefix, and the
ListObjectsV2 paginator for listings. With --concurrency N the transfer manager and the
connection pool get N; without it, boto3's defaults (10 and 10).

    boto3_s3.py prefix --endpoint-url URL --bucket B --key w1/ --dest DIR [--concurrency N]
    boto3_s3.py object --endpoint-url URL --bucket B --key w2/big.bin --dest DIR
    boto3_s3.py list   --endpoint-url URL --bucket B --key w4/
"""

import argparse
import os
import sys

import boto3
from boto3.s3.transfer import TransferConfig, create_transfer_manager
from botocore.config import Config


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["prefix", "object", "list"])
    parser.add_argument("--endpoint-url", required=True)
    parser.add_argument("--bucket", required=True)
    parser.add_argument("--key", required=True, help="the object, or the prefix")
    parser.add_argument("--dest", help="directory to download into")
    parser.add_argument("--concurrency", type=int)
    args = parser.parse_args()

    n = args.concurrency
    client = boto3.client("s3", endpoint_url=args.endpoint_url,
                          config=Config(max_pool_connections=n) if n else None)
    transfer = TransferConfig(max_concurrency=n) if n else TransferConfig()

    if args.mode == "list":
        out = sys.stdout
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=args.bucket,
                                                                      Prefix=args.key):
            for item in page.get("Contents", []):
                out.write(item["Key"] + "\n")
        return 0

    if args.mode == "object":
        path = os.path.join(args.dest, os.path.basename(args.key))
        client.download_file(args.bucket, args.key, path, Config=transfer)
        return 0

    keys = [item["Key"]
            for page in client.get_paginator("list_objects_v2").paginate(Bucket=args.bucket,
                                                                          Prefix=args.key)
            for item in page.get("Contents", [])]
    with create_transfer_manager(client, transfer) as manager:
        futures = []
        for key in keys:
            path = os.path.join(args.dest, key[len(args.key):])
            os.makedirs(os.path.dirname(path), exist_ok=True)
            futures.append(manager.download(args.bucket, key, path))
        for future in futures:
            future.result()
    return 0


if __name__ == "__main__":
    sys.exit(main())
