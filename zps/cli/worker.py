"""``zps-worker``: run a training script as one worker task of a cluster.

    zps-worker --ps_hosts=ps0:2222 --worker_hosts=w0:2222,w1:2222 --task_index=1 train.py --lr 0.1

The script gets the cluster both ways, so scripts of either style run unchanged: the seed
trainer's flags (``--ps_hosts --worker_hosts --job_name=worker --task_index``, placed before the
script's own arguments, which therefore win) and ``TF_CONFIG`` in its environment. Without host
flags the cluster comes from ``TF_CONFIG``; its task may be an ``evaluator``, which by TF's
convention is not in the cluster. The script replaces this process (same pid, signals
and exit code). The security flags (``--curve_secret_key_file`` ...) reach the script as the
``ZPS_CURVE_*`` variables of zps.transport.security.
"""

import argparse
import os
import sys

from zps.cli import common

__all__ = ["main"]


def build_parser(prog="zps-worker"):
    parser = argparse.ArgumentParser(
        prog=prog, description="Run a training script as one worker task; it gets the cluster "
        "as the seed's flags and as TF_CONFIG.")
    common.add_cluster_flags(parser, default_job="worker")
    common.add_security_flags(parser)
    parser.add_argument("script", help="the Python training script")
    parser.add_argument("script_args", nargs=argparse.REMAINDER, help="arguments for the script")
    return parser


def script_command(script, cluster, job, index, script_args):
    """``python script --ps_hosts=.. --worker_hosts=.. --job_name=.. --task_index=.. args...``."""
    return [sys.executable, script] + common.seed_flags(cluster, job, index) + list(script_args)


def main(argv=None, prog="zps-worker"):
    args = build_parser(prog).parse_args(argv)
    log = common.setup_logging(prog)
    try:
        cluster, job, index = common.resolve_task(args, default_job="worker", evaluator_ok=True)
        common.apply_security_flags(args)   # the script inherits them through its environment
    except ValueError as e:
        log.error("%s", e)
        return 2
    if not os.path.isfile(args.script):
        log.error("no such script: %s", args.script)
        return 2
    command = script_command(args.script, cluster, job, index, args.script_args)
    env = common.task_env(cluster, job, index)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, command, env)


if __name__ == "__main__":
    sys.exit(main())
