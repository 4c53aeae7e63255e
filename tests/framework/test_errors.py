"""The OpError vocabulary: classes, codes, op names, round trips through codes and pickle."""

import pickle

import pytest

import zps as tf
from zps.framework import errors

CLASSES = [
    ("CancelledError", errors.CANCELLED), ("UnknownError", errors.UNKNOWN),
    ("InvalidArgumentError", errors.INVALID_ARGUMENT),
    ("DeadlineExceededError", errors.DEADLINE_EXCEEDED), ("NotFoundError", errors.NOT_FOUND),
    ("AlreadyExistsError", errors.ALREADY_EXISTS),
    ("PermissionDeniedError", errors.PERMISSION_DENIED),
    ("ResourceExhaustedError", errors.RESOURCE_EXHAUSTED),
    ("FailedPreconditionError", errors.FAILED_PRECONDITION), ("AbortedError", errors.ABORTED),
    ("OutOfRangeError", errors.OUT_OF_RANGE), ("UnimplementedError", errors.UNIMPLEMENTED),
    ("InternalError", errors.INTERNAL), ("UnavailableError", errors.UNAVAILABLE),
    ("DataLossError", errors.DATA_LOSS), ("UnauthenticatedError", errors.UNAUTHENTICATED),
]


@pytest.mark.parametrize("name, code", CLASSES)
def test_every_class_has_its_code_and_round_trips(name, code):
    cls = getattr(errors, name)
    assert issubclass(cls, errors.OpError) and issubclass(cls, Exception)
    assert cls.error_code == code and cls.__doc__
    e = cls("node/a", None, "went wrong")
    assert (e.error_code, e.message, e.op_name, e.node_def, e.op) == (code, "went wrong", "node/a",
                                                                      "node/a", None)
    assert errors.exception_type_from_error_code(code) is cls
    assert errors.error_code_from_exception_type(cls) == code
    back = errors.from_code(code, "went wrong", op_name="node/a")
    assert type(back) is cls and back.op_name == "node/a" and back.message == "went wrong"
    again = pickle.loads(pickle.dumps(e))
    assert type(again) is cls and (again.message, again.op_name) == ("went wrong", "node/a")


def test_codes_are_tf1s():
    assert [errors.OK, errors.CANCELLED, errors.INVALID_ARGUMENT, errors.NOT_FOUND,
            errors.FAILED_PRECONDITION, errors.ABORTED, errors.OUT_OF_RANGE, errors.UNAVAILABLE,
            errors.UNAUTHENTICATED] == [0, 1, 3, 5, 9, 10, 11, 14, 16]


def test_op_name_comes_from_the_op_when_given():
    with tf.Graph().as_default():
        op = tf.constant(1.0, name="c").op
    e = errors.NotFoundError(None, op, "missing")
    assert e.op_name == "c" and e.op is op
    assert str(e) == "missing\n\t[[node c]]"
    assert str(errors.AbortedError(None, None, "plain")) == "plain"
    back = pickle.loads(pickle.dumps(e))
    assert back.op_name == "c" and back.op is None


def test_unknown_codes_and_extra_args():
    assert type(errors.from_code(999, "odd")) is errors.UnknownError
    assert errors.exception_type_from_error_code(12345) is errors.UnknownError
    e = errors.InvalidArgumentError(None, None, "m", "extra", "args")
    assert e.message == "m" and e.op_name is None
    base = errors.OpError(None, None, "generic", errors.ABORTED)
    assert base.error_code == errors.ABORTED and isinstance(base, Exception)


def test_public_namespace():
    assert tf.errors is errors
    with pytest.raises(tf.errors.OpError):
        raise tf.errors.OutOfRangeError(None, None, "done")
