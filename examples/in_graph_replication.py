"""In-graph replication: one client, one graph, parameters on two ps tasks, one tower per worker.

    python examples/in_graph_replication.py [--steps 100]

Each worker task computes the loss and gradients of its half of the batch; the client's graph
averages the towers' gradients and applies them to the shared parameters (synchronous,
in-graph data parallelism as the seed describes it). Tasks run as separate local processes.
"""

import argparse

import numpy as np

import zps as tf
from zps.testing.cluster import LocalCluster

NUM_WORKERS = 2


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=100)
    args = parser.parse_args()

    rng = np.random.default_rng(1)
    true_w = rng.standard_normal((8, 1)).astype(np.float32)
    x_data = rng.standard_normal((512, 8)).astype(np.float32)
    y_data = x_data @ true_w + 0.5

    with LocalCluster({"ps": 2, "worker": NUM_WORKERS}) as cluster:
        with tf.device("/job:ps/task:0"):
            w = tf.Variable(tf.zeros([8, 1]), name="w")
        with tf.device("/job:ps/task:1"):
            b = tf.Variable(tf.zeros([1]), name="b")
        opt = tf.train.GradientDescentOptimizer(0.1)
        x = tf.placeholder(tf.float32, [None, 8])
        y = tf.placeholder(tf.float32, [None, 1])
        x_parts, y_parts = tf.split(x, NUM_WORKERS), tf.split(y, NUM_WORKERS)
        tower_grads, tower_losses = [], []
        for i in range(NUM_WORKERS):
            with tf.device("/job:worker/task:%d" % i), tf.name_scope("tower_%d" % i):
                loss = tf.reduce_mean(tf.square(tf.matmul(x_parts[i], w) + b - y_parts[i]))
                tower_losses.append(loss)
                tower_grads.append(opt.compute_gradients(loss, [w, b]))
        with tf.device("/job:worker/task:0"):
            averaged = [(tf.add_n([g for g, _ in pairs]) / float(NUM_WORKERS), pairs[0][1])
                        for pairs in zip(*tower_grads)]
            train_op = opt.apply_gradients(averaged)
            mean_loss = tf.add_n(tower_losses) / float(NUM_WORKERS)
        with tf.Session(cluster.target("worker", 0)) as sess:
            sess.run(tf.global_variables_initializer())
            feed = {x: x_data, y: y_data}
            for step in range(args.steps):
                sess.run(train_op, feed)
                if step % 25 == 0 or step == args.steps - 1:
                    print("step %4d  loss %.6f" % (step, sess.run(mean_loss, feed)))
            err = np.abs(sess.run(w) - true_w).max()
            print("max |w - true_w| = %.4f, b = %.4f (true 0.5)" % (err, sess.run(b)[0]))


if __name__ == "__main__":
    main()
