"""The seed's "Hello, distributed" program: a one-task cluster in this process.

    python examples/hello_distributed.py
"""

import zps as tf


def main():
    c = tf.constant("Hello, distributed TensorFlow!")
    server = tf.train.Server.create_local_server()
    sess = tf.Session(server.target)  # Create a session on the server.
    print(sess.run(c))                # -> b'Hello, distributed TensorFlow!'
    sess.close()
    server.stop()


if __name__ == "__main__":
    main()
