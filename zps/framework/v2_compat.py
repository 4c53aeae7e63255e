"""TF 1.15's switches between TF1 and TF2 behaviour: zps is TF1 graph mode only.

    import zps as tf
    tf.disable_v2_behavior()      # a no-op: TF1 behaviour is all zps has
    tf.executing_eagerly()        # False
"""

__all__ = ["disable_eager_execution", "disable_v2_behavior", "enable_eager_execution",
           "enable_v2_behavior", "executing_eagerly"]


def disable_v2_behavior():
    """Use TF1 behaviour (a no-op in zps, which has only that): ``tf.disable_v2_behavior()``."""


def disable_eager_execution():
    """Use graph mode (a no-op in zps, which has only that): ``tf.disable_eager_execution()``."""


def enable_v2_behavior():
    """Not supported: zps is TensorFlow 1.x's graph mode only (raises NotImplementedError)."""
    raise NotImplementedError(
        "tf.enable_v2_behavior(): zps implements TensorFlow 1.x graph mode only (graphs, "
        "tf.Session, placeholders); it has no TF2 behaviour. Remove the call, or call "
        "tf.disable_v2_behavior() as TF1 programs do.")


def enable_eager_execution(config=None, device_policy=None, execution_mode=None):
    """Not supported: zps runs graphs in sessions only (raises NotImplementedError)."""
    raise NotImplementedError(
        "tf.enable_eager_execution(): zps implements TensorFlow 1.x graph mode only; build a "
        "graph and run it in a tf.Session instead of executing eagerly. Remove the call.")


def executing_eagerly():
    """False: zps always builds graphs: ``assert not tf.executing_eagerly()``."""
    return False
