"""tf.variable_creator_scope and the synchronization/aggregation arguments of variables, as TF."""

import pytest

import zps as tf


def test_creators_see_every_argument_innermost_first():
    calls = []

    def outer(next_creator, **kwargs):
        calls.append(("outer", kwargs["name"]))
        return next_creator(**kwargs)

    def inner(next_creator, **kwargs):
        calls.append(("inner", sorted(kwargs)))
        kwargs["trainable"] = False
        return next_creator(**kwargs)

    with tf.Graph().as_default():
        with tf.variable_creator_scope(outer), tf.variable_creator_scope(inner):
            v = tf.get_variable("v", [2])
        w = tf.Variable(1.0, name="w")   # outside the scopes: no creator
        assert not v.trainable and tf.trainable_variables() == [w]
    assert calls == [("inner", ["aggregation", "caching_device", "collections", "constraint",
                                "dtype", "expected_shape", "import_scope", "initial_value",
                                "name", "shape", "synchronization", "trainable",
                                "use_resource", "validate_shape", "variable_def"]),
                     ("outer", "v")]


def test_a_creator_may_return_its_own_variable_and_is_per_thread():
    import threading
    with tf.Graph().as_default() as g:
        existing = tf.Variable(3.0, name="existing")
        seen = []
        with tf.variable_creator_scope(lambda next_creator, **kw: existing):
            assert tf.Variable(1.0) is existing

            def other_thread():
                with g.as_default():
                    seen.append(tf.Variable(2.0, name="other").name)
            t = threading.Thread(target=other_thread)
            t.start()
            t.join(timeout=30)
        assert seen == ["other:0"]


def test_synchronization_and_aggregation_are_validated_as_tf():
    with tf.Graph().as_default():
        v = tf.Variable(1.0)
        assert v.synchronization == tf.VariableSynchronization.AUTO
        assert v.aggregation == tf.VariableAggregation.NONE
        r = tf.Variable(1.0, synchronization=tf.VariableSynchronization.ON_READ,
                        aggregation=tf.VariableAggregation.SUM)
        assert not r.trainable and r.aggregation == tf.VariableAggregation.SUM
        assert tf.VariableAggregation.ONLY_FIRST_TOWER is tf.VariableAggregation.ONLY_FIRST_REPLICA
        assert tf.Variable(1.0, aggregation=2).aggregation == tf.VariableAggregation.MEAN
        with pytest.raises(ValueError, match="Invalid variable aggregation mode: 7 for variable: "
                                             "x"):
            tf.Variable(1.0, name="x", aggregation=7)
        with pytest.raises(ValueError, match="Invalid variable synchronization mode: 9 for "
                                             "variable: y"):
            tf.Variable(1.0, name="y", synchronization=9)
        with pytest.raises(ValueError, match="Synchronization value can be set to "
                                             "VariableSynchronization.ON_READ only for "
                                             "non-trainable variables"):
            tf.get_variable("z", [], synchronization=tf.VariableSynchronization.ON_READ,
                            trainable=True)
        z = tf.get_variable("z", [], synchronization=tf.VariableSynchronization.ON_READ)
        assert not z.trainable and z.synchronization == tf.VariableSynchronization.ON_READ
