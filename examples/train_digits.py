"""Train an MLP on scikit-learn's bundled handwritten digits, in one process, with zps.

    python examples/train_digits.py            # ~10 s; prints test accuracy (>= 95%)

The program is plain TF1: change the import to `import tensorflow.compat.v1 as tf` and it runs on
TensorFlow too.
"""

import argparse

import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

import zps as tf


def load_data(seed):
    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    y = digits.target.astype(np.int64)
    return train_test_split(x, y, test_size=0.25, random_state=seed, stratify=y)


def build_model(hidden, learning_rate):
    x = tf.placeholder(tf.float32, [None, 64], name="x")
    labels = tf.placeholder(tf.int64, [None], name="labels")
    with tf.variable_scope("hidden"):
        w1 = tf.get_variable("weights", [64, hidden])
        b1 = tf.get_variable("biases", [hidden], initializer=tf.zeros_initializer())
        h = tf.nn.relu(tf.matmul(x, w1) + b1)
    with tf.variable_scope("logits"):
        w2 = tf.get_variable("weights", [hidden, 10])
        b2 = tf.get_variable("biases", [10], initializer=tf.zeros_initializer())
        logits = tf.matmul(h, w2) + b2
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels,
                                                                         logits=logits))
    global_step = tf.train.get_or_create_global_step()
    train_op = tf.train.AdamOptimizer(learning_rate).minimize(loss, global_step=global_step)
    accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1), labels), tf.float32))
    return x, labels, loss, train_op, accuracy, global_step


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--learning_rate", type=float, default=0.003)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    x_train, x_test, y_train, y_test = load_data(args.seed)
    tf.set_random_seed(args.seed)
    x, labels, loss, train_op, accuracy, global_step = build_model(args.hidden, args.learning_rate)
    rng = np.random.default_rng(args.seed)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for epoch in range(args.epochs):
            order = rng.permutation(len(x_train))
            for start in range(0, len(order), args.batch_size):
                idx = order[start:start + args.batch_size]
                sess.run(train_op, {x: x_train[idx], labels: y_train[idx]})
            if epoch % 10 == 9 or epoch == args.epochs - 1:
                train_loss = sess.run(loss, {x: x_train, labels: y_train})
                test_acc = sess.run(accuracy, {x: x_test, labels: y_test})
                print("epoch %3d  step %5d  train loss %.4f  test accuracy %.4f"
                      % (epoch + 1, sess.run(global_step), train_loss, test_acc))
        final = sess.run(accuracy, {x: x_test, labels: y_test})
    print("final test accuracy: %.4f" % final)
    return final


if __name__ == "__main__":
    main()
