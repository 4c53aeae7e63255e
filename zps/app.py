"""``tf.app.run``: parse flags and call ``main(argv)``, exiting with its return value."""

import sys


def run(main=None, argv=None):
    """Call ``main(argv)`` (default: ``__main__.main``) and exit with its result, as TF1 does."""
    if main is None:
        main = sys.modules["__main__"].main
    argv = list(sys.argv) if argv is None else list(argv)
    sys.exit(main(argv))
