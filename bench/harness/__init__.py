"""The peer comparison harness behind `make bench`: see bench/README.md and docs/BENCHMARKS.md.

Modules, in the order a run uses them:

- `setup`     the loopback store: versitygw (plain and TLS, data on tmpfs, access logs), its
              objects, toxiproxy in front with latency and a per-connection bandwidth cap.
- `tools`     what each tool's command line is for each workload and concurrency.
- `measure`   one timed run: wall time, CPU and peak RSS of the process tree, requests by
              kind from the server's access log, connections from toxiproxy's log.
- `report`    medians, ratios, targets, docs/BENCHMARKS.md and the plots.
"""
