"""``zps-ps``: serve one ps task of a cluster until SIGTERM or SIGINT (then exit 0).

    zps-ps --ps_hosts=ps0:2222,ps1:2222 --worker_hosts=w0:2222,w1:2222 --task_index=1
    TF_CONFIG='{"cluster": {...}, "task": {"type": "ps", "index": 1}}' zps-ps

Flags win over ``TF_CONFIG``. ``--bind_address 0.0.0.0:2222`` listens on another local address
than the cluster's (e.g. when the cluster names a Kubernetes service). ``--curve_secret_key_file``
(or ``ZPS_CURVE_SECRET_KEY_FILE``) makes the task a CURVE server: see ``zps keygen``.
"""

import argparse
import signal
import sys

from zps.cli import common

__all__ = ["main"]


def build_parser(prog="zps-ps"):
    parser = argparse.ArgumentParser(prog=prog, description="Serve one ps task of a zps cluster "
                                     "until SIGTERM/SIGINT. The cluster comes from the flags or "
                                     "from TF_CONFIG.")
    common.add_cluster_flags(parser, default_job="ps")
    parser.add_argument("--bind_address", default=None,
                        help="local host:port to listen on instead of the task's address in the "
                             "cluster (e.g. 0.0.0.0:2222)")
    common.add_security_flags(parser)
    return parser


def main(argv=None, prog="zps-ps"):
    args = build_parser(prog).parse_args(argv)
    log = common.setup_logging(prog)
    try:
        cluster, job, index = common.resolve_task(args, default_job="ps")
        common.apply_security_flags(args)   # before the server's transport reads them
    except ValueError as e:
        log.error("%s", e)
        return 2
    from zps.distributed.server import Server
    from zps.framework import errors
    try:
        server = Server(cluster, job_name=job, task_index=index, bind_address=args.bind_address,
                        start=False)
    except ValueError as e:   # a cluster spec the server refuses (two tasks at one address)
        log.error("%s", e)
        return 2
    stopping, started = [], []

    def stop(signum, frame):
        log.info("%s: stopping /job:%s/task:%d", signal.Signals(signum).name, job, index)
        stopping.append(signum)
        if started:   # while it starts, only noted (start holds locks stop takes): see below
            server.stop()

    # Before the port is bound: a stop signal from then on ends the task cleanly (exit 0).
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        server.start()
    except errors.OpError as e:
        log.error("%s", e.message)
        return 1
    started.append(True)
    if stopping:   # signalled while it was starting
        server.stop()
        return 0
    # (the server's own line says where it listens when that is not the cluster's address)
    log.info("serving /job:%s/task:%d at %s", job, index, server.cluster.task_address(job, index))
    server.join()
    return 0


if __name__ == "__main__":
    sys.exit(main())
