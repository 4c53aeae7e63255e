"""The seed's placement program on one machine: two ps tasks hold the layers, worker 7 computes.

    python examples/placement.py [--steps 200]

Starts /job:ps/task:0, /job:ps/task:1 and /job:worker/task:7 as separate processes on 127.0.0.1
(the other seven worker tasks of the spec never start: a step needs only the tasks it touches),
then runs the training loop from this process, a client with no server of its own, through
worker 7's target, given as a grpc:// URL exactly as in the seed.
"""

import argparse

import numpy as np

import zps as tf
from zps.testing.cluster import LocalCluster


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=200)
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    x_data = rng.standard_normal((256, 10)).astype(np.float32)
    y_data = (x_data[:, :1] * 2.0 - x_data[:, 1:2] > 0).astype(np.float32)

    with LocalCluster({"ps": 2, "worker": 8}, start=False) as cluster:
        cluster.start_tasks([("ps", 0), ("ps", 1), ("worker", 7)])
        with tf.device("/job:ps/task:0"):
            weights_1 = tf.Variable(tf.truncated_normal([10, 32], stddev=0.1))
            biases_1 = tf.Variable(tf.zeros([32]))
        with tf.device("/job:ps/task:1"):
            weights_2 = tf.Variable(tf.truncated_normal([32, 1], stddev=0.1))
            biases_2 = tf.Variable(tf.zeros([1]))
        with tf.device("/job:worker/task:7"):
            inputs = tf.placeholder(tf.float32, [None, 10])
            labels = tf.placeholder(tf.float32, [None, 1])
            layer_1 = tf.nn.relu(tf.matmul(inputs, weights_1) + biases_1)
            logits = tf.matmul(layer_1, weights_2) + biases_2
            loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=labels,
                                                                          logits=logits))
            train_op = tf.train.GradientDescentOptimizer(0.5).minimize(loss)
            accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.cast(logits > 0, tf.float32), labels),
                                              tf.float32))
        target = "grpc://" + cluster.address("worker", 7)
        with tf.Session(target) as sess:
            sess.run(tf.global_variables_initializer())
            feed = {inputs: x_data, labels: y_data}
            for step in range(args.steps):
                sess.run(train_op, feed)
                if step % 50 == 0 or step == args.steps - 1:
                    print("step %4d  loss %.4f  accuracy %.3f" % ((step,) + tuple(
                        sess.run([loss, accuracy], feed))))


if __name__ == "__main__":
    main()
