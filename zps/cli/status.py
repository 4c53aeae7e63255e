"""``zps status``: is each task of a cluster up, since when, and how much has it served?

    zps status --cluster '{"ps": ["h:2222"], "worker": ["h:2223", "h:2224"]}'
    zps status --cluster ps=h:2222,h:2223;worker=h:2224 --json
    TF_CONFIG=... zps status                 # or --tf_config '<TF_CONFIG JSON>'

Every task is asked for its Status at once; a task that does not answer within ``--timeout``
seconds is reported ``down`` (never a hang). Per task: up/down, incarnation (changes when the task
restarts), uptime, steps served, messages and bytes in/out, malformed messages received,
requests answered with an error, and how many of the other tasks its heartbeats see down
(``--json``: each peer's up, last_seen_s_ago and incarnation; ``direct_connections``: peers on
direct connections, zps.transport.direct, of which ``direct_unix`` over Unix sockets and
``direct_rings`` with shared-memory rings). Exits 0 when every task is up, 1
when some task is down, 2 on a usage error.

>>> rows = cluster_status({"ps": ["127.0.0.1:9"]}, timeout=0.2)   # doctest: +SKIP
>>> rows[0]["state"]                                               # doctest: +SKIP
'down'
"""

import argparse
import json
import os
import sys
import time

from zps.distributed.cluster_spec import ClusterSpec

__all__ = ["main", "cluster_status", "parse_cluster", "format_table"]

DEFAULT_TIMEOUT_S = 3.0
EXIT_SOME_DOWN = 1
EXIT_USAGE = 2

# (column title, row key, formatter) of the table.
_COLUMNS = (
    ("TASK", "task", str),
    ("ADDRESS", "address", str),
    ("STATE", "state", str),
    ("INCARNATION", "incarnation", lambda v: v or "-"),
    ("UPTIME", "uptime_s", lambda v: "-" if v is None else _duration(v)),
    ("STEPS", "steps_served", lambda v: "-" if v is None else str(v)),
    ("RUNNING", "steps_running", lambda v: "-" if v is None else str(v)),
    ("MSGS IN/OUT", "messages", lambda v: "-" if v is None else "%d/%d" % v),
    ("BYTES IN/OUT", "bytes", lambda v: "-" if v is None else "%s/%s" % (_size(v[0]), _size(v[1]))),
    ("MALFORMED", "malformed", lambda v: "-" if v is None else str(v)),
    ("ERRORS", "errors", lambda v: "-" if v is None else str(v)),
    ("PEERS DOWN", "peers_down", lambda v: "-" if v is None else "%d/%d" % v),
)


def parse_cluster(text):
    """A cluster dict from JSON (a ClusterSpec dict, or a TF_CONFIG with a "cluster" key) or from
    ``job=host:port,host:port;job2=...``. ValueError says what is wrong."""
    text = (text or "").strip()
    if not text:
        raise ValueError("empty cluster: pass JSON such as '{\"ps\": [\"host:2222\"]}' or "
                         "'ps=host:2222;worker=host:2223'")
    if text[0] in "{[":
        try:
            value = json.loads(text)
        except ValueError as e:
            raise ValueError("cluster is not valid JSON: %s" % e) from None
        if isinstance(value, dict) and isinstance(value.get("cluster"), dict):
            value = value["cluster"]   # a whole TF_CONFIG
        if not isinstance(value, dict):
            raise ValueError("cluster JSON must be a map of job name to addresses, got %s"
                             % type(value).__name__)
        cluster = value
    else:
        cluster = {}
        for part in filter(None, (p.strip() for p in text.split(";"))):
            job, sep, hosts = part.partition("=")
            if not sep or not job.strip():
                raise ValueError("cluster part %r must look like job=host:port[,host:port]" % part)
            cluster[job.strip()] = [h.strip() for h in hosts.split(",") if h.strip()]
    ClusterSpec(cluster)   # ValueError naming a bad job or address
    return cluster


def _tasks(cluster):
    return [("/job:%s/task:%d" % (job, index), address)
            for job, index, address in ClusterSpec(cluster).tasks()]


def cluster_status(cluster, timeout=DEFAULT_TIMEOUT_S, transport=None):
    """One row (a dict) per task of ``cluster``: ``state`` is "up" with the task's Status fields,
    or "down" with ``reason``. Waits at most about ``timeout`` seconds in all."""
    from zps.transport import endpoint
    transport = transport or endpoint.default_transport()
    tasks = _tasks(cluster)
    started = time.monotonic()
    futures = [transport.request(address, "Status", {}, timeout=timeout, peer_timeout=timeout)
               for _, address in tasks]
    rows = []
    for (task, address), future in zip(tasks, futures):
        row = {"task": task, "address": address, "state": "down", "incarnation": None,
               "uptime_s": None, "steps_served": None, "steps_running": None, "messages": None,
               "bytes": None, "malformed": None, "errors": None, "pid": None, "reason": None,
               "peers": None, "peers_down": None, "direct_connections": None,
               "direct_unix": None, "direct_rings": None}
        try:
            remaining = max(0.1, timeout + 1.0 - (time.monotonic() - started))
            body = future.result(timeout=remaining).body
        except Exception as e:  # noqa: BLE001 - any failure to answer means down, with the reason
            future.cancel()
            row["reason"] = _reason(e, timeout)
            transport.forget_peer(address)   # no reconnect attempts left behind
            rows.append(row)
            continue
        body = body if isinstance(body, dict) else {}
        row.update(state="up", incarnation=body.get("incarnation"), pid=body.get("pid"),
                   uptime_s=body.get("uptime_s"), steps_served=body.get("steps_served"),
                   steps_running=body.get("steps_running"),
                   messages=(body.get("messages_in", 0), body.get("messages_out", 0)),
                   bytes=(body.get("bytes_in", 0), body.get("bytes_out", 0)),
                   malformed=body.get("malformed"),
                   errors=body.get("errors", body.get("errors_sent")),
                   direct_connections=body.get("direct_connections"),
                   direct_unix=body.get("direct_unix"), direct_rings=body.get("direct_rings"))
        peers = body.get("peers")
        if isinstance(peers, dict) and peers:   # what the task's heartbeats see of the others
            row["peers"] = peers
            row["peers_down"] = (sum(not (isinstance(p, dict) and p.get("up")) for p in peers.values()),
                                 len(peers))
        answered = body.get("task")
        if isinstance(answered, str) and answered.replace("/replica:0", "") != task:
            row["reason"] = "answers as %s (another cluster's task at this address?)" % answered
        rows.append(row)
    return rows


def _reason(error, timeout):
    from zps.transport import endpoint
    if isinstance(error, (endpoint.RequestTimeoutError, TimeoutError)):
        return "no answer within %.1f s" % timeout
    return str(error) or type(error).__name__


def _duration(seconds):
    seconds = int(seconds)
    if seconds < 60:
        return "%ds" % seconds
    if seconds < 3600:
        return "%dm%02ds" % divmod(seconds, 60)
    h, rest = divmod(seconds, 3600)
    return "%dh%02dm" % (h, rest // 60)


def _size(n):
    for unit in ("B", "K", "M", "G"):
        if n < 1024 or unit == "G":
            return ("%d%s" if unit == "B" else "%.1f%s") % (n, unit)
        n /= 1024.0
    return str(n)


def format_table(rows):
    """The rows as an aligned text table (one line per task, then a summary line)."""
    cells = [[title for title, _, _ in _COLUMNS]]
    for row in rows:
        cells.append([fmt(row.get(key)) for _, key, fmt in _COLUMNS])
    widths = [max(len(r[i]) for r in cells) for i in range(len(_COLUMNS))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in cells]
    down = [r for r in rows if r["state"] != "up"]
    lines.append("%d of %d task(s) up" % (len(rows) - len(down), len(rows)))
    lines += ["  %s at %s is down: %s" % (r["task"], r["address"], r["reason"]) for r in down]
    for r in rows:
        unseen = sorted("%s (%s)" % (p.get("task") or "?", a) for a, p in (r["peers"] or {}).items()
                        if isinstance(p, dict) and not p.get("up"))
        if unseen:
            lines.append("  %s sees down: %s" % (r["task"], ", ".join(unseen)))
    return "\n".join(lines)


def _as_json(rows):
    out = []
    for r in rows:
        r = dict(r)
        messages, nbytes = r.pop("messages"), r.pop("bytes")
        r["messages_in"], r["messages_out"] = messages if messages else (None, None)
        r["bytes_in"], r["bytes_out"] = nbytes if nbytes else (None, None)
        down = r.pop("peers_down")
        r["peers_down"] = down[0] if down else None
        out.append(r)
    return json.dumps({"tasks": out, "up": sum(r["state"] == "up" for r in rows),
                       "total": len(rows)}, indent=2, sort_keys=True)


def build_parser(prog="zps status"):
    parser = argparse.ArgumentParser(
        prog=prog, description="Ask every task of a cluster for its status: up/down, incarnation, "
        "uptime, steps served, bytes in/out, malformed messages, errors.")
    parser.add_argument("--cluster", default=None,
                        help="the cluster: JSON ({\"ps\": [\"host:port\"], ...}) or "
                        "'ps=host:port,host:port;worker=host:port' (default: TF_CONFIG's)")
    parser.add_argument("--tf_config", default=None,
                        help="a TF_CONFIG JSON to take the cluster from (default: $TF_CONFIG)")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S,
                        help="seconds a task has to answer before it is reported down "
                        "(default %g)" % DEFAULT_TIMEOUT_S)
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    return parser


def main(argv=None, prog="zps status"):
    args = build_parser(prog).parse_args(argv)
    source = args.cluster or args.tf_config or os.environ.get("TF_CONFIG", "")
    if not source.strip():
        print("%s: no cluster given: pass --cluster, --tf_config or set TF_CONFIG" % prog,
              file=sys.stderr)
        return EXIT_USAGE
    if args.timeout <= 0:
        print("%s: --timeout must be positive, got %g" % (prog, args.timeout), file=sys.stderr)
        return EXIT_USAGE
    try:
        cluster = parse_cluster(source)
    except ValueError as e:
        print("%s: %s" % (prog, e), file=sys.stderr)
        return EXIT_USAGE
    rows = cluster_status(cluster, timeout=args.timeout)
    print(_as_json(rows) if args.json else format_table(rows))
    sys.stdout.flush()
    return 0 if all(r["state"] == "up" for r in rows) else EXIT_SOME_DOWN


if __name__ == "__main__":
    sys.exit(main())
