"""``zps``: one command for the launchers: ``zps launch|ps|worker ...``.

    zps launch --ps 2 --workers 2 trainer.py
    zps ps --ps_hosts=... --worker_hosts=... --task_index=0
    zps worker --ps_hosts=... --worker_hosts=... --task_index=1 trainer.py
    zps keygen --out keys [--name cluster] [--force]
"""

import sys

__all__ = ["main"]

COMMANDS = {
    "launch": ("zps.cli.launch", "run N ps + M workers of a training script on this machine"),
    "ps": ("zps.cli.ps", "serve one ps task until SIGTERM/SIGINT"),
    "worker": ("zps.cli.worker", "run a training script as one worker task"),
    "keygen": ("zps.cli.keygen", "write a CURVE keypair for an authenticated cluster"),
    "status": ("zps.cli.status", "show each task of a cluster: up/down, uptime, steps, traffic"),
}


def _usage():
    lines = ["usage: zps <command> [options]", "", "commands:"]
    lines += ["  %-8s %s" % (name, doc) for name, (_, doc) in COMMANDS.items()]
    lines += ["", "Run 'zps <command> --help' for a command's options."]
    return "\n".join(lines)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(_usage())
        return 0 if argv else 2
    if argv[0] in ("-V", "--version"):
        import zps
        print("zps", zps.__version__)
        return 0
    if argv[0] not in COMMANDS:
        print("zps: unknown command %r\n\n%s" % (argv[0], _usage()), file=sys.stderr)
        return 2
    import importlib
    module = importlib.import_module(COMMANDS[argv[0]][0])
    return module.main(argv[1:], prog="zps " + argv[0])


if __name__ == "__main__":
    sys.exit(main())
