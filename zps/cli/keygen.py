"""``zps keygen``: write a CURVE keypair for an authenticated, encrypted cluster.

    zps keygen --out keys                 # keys/cluster.key (public), keys/cluster.key_secret
    zps keygen --out keys --name alice    # a client's own keypair

Give every task the cluster keypair (``ZPS_CURVE_SECRET_KEY_FILE=keys/cluster.key_secret``, or
``zps-ps --curve_secret_key_file ...``). A client that is not a task uses its own keypair, names
the cluster's public key (``ZPS_CURVE_SERVER_KEY_FILE=keys/cluster.key``), and its ``alice.key``
goes into the servers' ``ZPS_CURVE_ALLOWED_KEYS_DIR``. See zps.transport.security for the
trust model. The secret file is created with mode 0600; existing files are kept unless ``--force``.
"""

import argparse
import sys

from zps.transport import security

__all__ = ["main"]


def build_parser(prog="zps keygen"):
    parser = argparse.ArgumentParser(
        prog=prog, description="Write a CURVE keypair: <out>/<name>.key (public) and "
        "<out>/<name>.key_secret (secret, mode 0600).")
    parser.add_argument("--out", default=".", help="directory to write the keys to (default: .)")
    parser.add_argument("--name", default="cluster", help="file name of the keys (default: cluster)")
    parser.add_argument("--force", action="store_true", help="overwrite existing key files")
    return parser


def main(argv=None, prog="zps keygen"):
    args = build_parser(prog).parse_args(argv)
    try:
        public_file, secret_file = security.create_keypair(args.out, args.name, force=args.force)
    except (FileExistsError, ValueError, OSError) as e:
        print("%s: %s" % (prog, e), file=sys.stderr)
        return 1
    fp = security.fingerprint(security.load_public_key(public_file))
    print("public key: %s (fingerprint %s)" % (public_file, fp))
    print("secret key: %s (mode 0600; keep it secret)" % secret_file)
    print("use: %s=%s" % (security.SECRET_KEY_ENV, secret_file))
    return 0


if __name__ == "__main__":
    sys.exit(main())
