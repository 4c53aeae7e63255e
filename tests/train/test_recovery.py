"""Recovery end to end: kill -9 a ps of the seed's trainer mid-training and start it again; the
workers go on from the last checkpoint to the final step without manual action."""

import re
import time

import numpy as np
import pytest

import zps as tf
from tests.test_trainer import (
    MIN_ACCURACY,
    TrainerCluster,
    assert_finished,
    held_out_accuracy,
    load_trainer_module,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

TRAIN_STEPS = 3000


def _checkpoint_step(ckpt_dir):
    path = tf.train.latest_checkpoint(str(ckpt_dir))
    if not path:
        return -1
    return int(re.search(r"-(\d+)$", path).group(1))


def _wait_for_checkpoint(cluster, ckpt_dir, min_step, timeout=60):
    deadline = time.monotonic() + timeout
    while _checkpoint_step(ckpt_dir) < min_step:
        for i in range(2):
            code = cluster.procs[("worker", i)].poll()
            assert code is None, "worker %d exited (%s) before the checkpoint:\n%s" % (
                i, code, cluster.output("worker", i)[-4000:])
        assert time.monotonic() < deadline, "no checkpoint at step >= %d in %s s" % (min_step, timeout)
        time.sleep(0.05)
    return _checkpoint_step(ckpt_dir)


def _restored_accuracy(checkpoint_path):
    """Accuracy on the held-out digits of the trainer's model restored in a local process."""
    trainer = load_trainer_module()
    _, x_test, _, y_test = trainer.load_digits_split()
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 64], name="x")
        labels = tf.placeholder(tf.int64, [None], name="labels")
        _, accuracy = trainer.build_model(x, labels)
        saver = tf.train.Saver(tf.trainable_variables())
        with tf.Session() as sess:
            saver.restore(sess, checkpoint_path)
            return float(sess.run(accuracy, {x: x_test, labels: y_test}))


@pytest.mark.parametrize("killed_ps", [0, 1])
def test_kill_and_restart_a_ps_mid_training(tmp_path, killed_ps):
    ckpt_dir = tmp_path / "ckpt"
    args = ["--train_steps", str(TRAIN_STEPS), "--checkpoint_dir", str(ckpt_dir),
            "--save_checkpoint_steps", "100", "--min_accuracy", str(MIN_ACCURACY)]
    with TrainerCluster(tmp_path, args=args) as cluster:
        cluster.start_ps()
        for i in range(2):
            cluster.start("worker", i, wait=False)
        saved = _wait_for_checkpoint(cluster, ckpt_dir, min_step=300)
        assert saved < TRAIN_STEPS - 500, "training finished too fast to kill a ps in the middle"
        cluster.kill("ps", killed_ps)          # kill -9: its variables are gone
        time.sleep(0.5)
        cluster.start("ps", killed_ps)         # the same flags, a new incarnation
        codes = cluster.wait_workers(timeout=150)
        assert_finished(cluster, codes)
        chief, worker = cluster.output("worker", 0), cluster.output("worker", 1)
    # Both workers recovered by themselves; the chief restored the model from a checkpoint.
    assert "Recovering the monitored session" in chief, chief[-4000:]
    assert "Recovering the monitored session" in worker, worker[-4000:]
    restored = [int(s) for s in re.findall(r"Restoring the model from \S+model\.ckpt-(\d+)", chief)]
    assert restored and restored[-1] >= saved, chief[-4000:]
    # The non-chief waited for the chief to restore rather than initializing anything itself.
    assert "Saving checkpoints" not in worker
    # The final checkpoint is at the final step (async workers may overshoot by one step each).
    final = tf.train.latest_checkpoint(str(ckpt_dir))
    reader = tf.train.load_checkpoint(final)
    final_step = int(reader.get_tensor("global_step"))
    assert TRAIN_STEPS <= final_step <= TRAIN_STEPS + 2, final_step
    # The name carries the step read just before saving; the other (async) worker may have
    # advanced it by one while the save ran, as in TF1.
    name_step = int(final.rsplit("-", 1)[1])
    assert name_step <= final_step <= name_step + 1, (final, final_step)
    # The chief's own held-out evaluation after training, and a model restored from the checkpoint.
    assert held_out_accuracy(chief, 0)[1] >= MIN_ACCURACY
    accuracy = _restored_accuracy(final)
    assert accuracy >= MIN_ACCURACY, accuracy
    weights = reader.get_tensor("hidden/weights")
    assert weights.shape == (64, 128) and np.isfinite(weights).all()
