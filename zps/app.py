"""``tf.app``: ``tf.app.run`` parses the flags and calls ``main(argv)``; ``tf.app.flags`` is tf.flags.

    import zps as tf
    tf.app.flags.DEFINE_string("job_name", "", "One of 'ps', 'worker'")
    FLAGS = tf.app.flags.FLAGS

    def main(argv):          # argv: the program name and what is not a defined flag
        print(FLAGS.job_name, argv[1:])

    if __name__ == "__main__":
        tf.app.run()
"""

import sys

from zps import flags


def run(main=None, argv=None):
    """Parse the flags in ``argv`` (default ``sys.argv``), call ``main(remaining argv)`` (default
    ``__main__.main``) and exit with its result, as TF 1.15 does: ``tf.app.run(main)``.

    Flags that are not defined are left in the remaining argv for ``main`` (TF tolerates them).
    """
    main = main or sys.modules["__main__"].main
    remaining = flags.FLAGS(sys.argv if argv is None else list(argv), known_only=True)
    sys.exit(main(remaining))
