"""tf.estimator.inputs.numpy_input_fn: epochs, batches, shuffling and TF1's errors."""

import numpy as np
import pytest

import zps as tf
from tests.estimator.test_estimator import X, Y, model_fn


def _batches(input_fn):
    with tf.Graph().as_default():
        next_batch = tf.data.make_one_shot_iterator(input_fn()).get_next()
        with tf.Session() as sess:
            out = []
            while True:
                try:
                    out.append(sess.run(next_batch))
                except tf.errors.OutOfRangeError:
                    return out


def test_epochs_and_batches():
    batches = _batches(tf.estimator.inputs.numpy_input_fn(
        {"x": X}, Y, batch_size=5, num_epochs=2, shuffle=False))
    assert [len(labels) for _, labels in batches] == [5, 5, 5, 5, 4]
    np.testing.assert_array_equal(np.concatenate([f["x"] for f, _ in batches]),
                                  np.concatenate([X, X]))
    shuffled = _batches(tf.estimator.inputs.numpy_input_fn(
        X[:, 0], batch_size=100, num_epochs=1, shuffle=True))
    assert sorted(shuffled[0].tolist()) == sorted(X[:, 0].tolist())


def test_an_estimator_trains_for_the_given_epochs(tmp_path, monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    est = tf.estimator.Estimator(model_fn, str(tmp_path))
    est.train(tf.estimator.inputs.numpy_input_fn({"x": X}, Y, batch_size=4, num_epochs=2,
                                                 shuffle=True))
    assert est.get_variable_value("global_step") == 2 * len(X) // 4
    preds = est.predict(tf.estimator.inputs.numpy_input_fn({"x": X}, shuffle=False))
    assert len(list(preds)) == len(X)


@pytest.mark.parametrize("kwargs, message", [
    (dict(x={"x": X}, y=Y), "shuffle must be provided and explicitly set as boolean"),
    (dict(x={}, y=Y, shuffle=False), "x cannot be an empty dict"),
    (dict(x={"x": X}, y={"x": Y}, shuffle=False), "duplicate keys are found in both x and y"),
    (dict(x={"x": X}, y=Y[:3], shuffle=False), "Length of tensors in x and y is mismatched"),
])
def test_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        tf.estimator.inputs.numpy_input_fn(**kwargs)
