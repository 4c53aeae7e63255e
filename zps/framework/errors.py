"""TF1's error vocabulary: ``OpError`` and its subclasses, one per error code.

Errors cross the wire as ``(code, message, op name)`` and are raised again as the same class with
:func:`from_code`.

>>> from zps.framework import errors
>>> e = errors.from_code(errors.NOT_FOUND, "no such variable", op_name="w")
>>> type(e).__name__, e.op_name, e.error_code == errors.NOT_FOUND
('NotFoundError', 'w', True)
"""

OK = 0
CANCELLED = 1
UNKNOWN = 2
INVALID_ARGUMENT = 3
DEADLINE_EXCEEDED = 4
NOT_FOUND = 5
ALREADY_EXISTS = 6
PERMISSION_DENIED = 7
RESOURCE_EXHAUSTED = 8
FAILED_PRECONDITION = 9
ABORTED = 10
OUT_OF_RANGE = 11
UNIMPLEMENTED = 12
INTERNAL = 13
UNAVAILABLE = 14
DATA_LOSS = 15
UNAUTHENTICATED = 16


class OpError(Exception):
    """An error raised while running an op: carries the op (name), a message and an error code."""

    error_code = UNKNOWN

    def __init__(self, node_def, op, message, error_code=None):
        super().__init__(message)
        self._node_def = node_def
        self._op = op
        self._message = message
        if error_code is not None:
            self.error_code = error_code

    @property
    def message(self):
        return self._message

    @property
    def op(self):
        return self._op

    @property
    def node_def(self):
        return self._node_def

    @property
    def op_name(self):
        """Name of the op that failed (a string), or None."""
        if self._op is not None and hasattr(self._op, "name"):
            return self._op.name
        return self._node_def

    def __str__(self):
        name = self.op_name
        return self._message if not name else "%s\n\t[[node %s]]" % (self._message, name)

    def __reduce__(self):
        return from_code, (self.error_code, self._message, self.op_name)


def _subclass(name, code, doc):
    def __init__(self, node_def, op, message, *args):
        OpError.__init__(self, node_def, op, message, code)

    cls = type(name, (OpError,), {"__init__": __init__, "error_code": code, "__doc__": doc})
    return cls


CancelledError = _subclass("CancelledError", CANCELLED, "The operation or step was cancelled.")
UnknownError = _subclass("UnknownError", UNKNOWN, "An unknown error.")
InvalidArgumentError = _subclass("InvalidArgumentError", INVALID_ARGUMENT,
                                 "An op received an invalid argument (wrong shape, value, dtype).")
DeadlineExceededError = _subclass("DeadlineExceededError", DEADLINE_EXCEEDED,
                                  "A deadline expired before the operation could complete.")
NotFoundError = _subclass("NotFoundError", NOT_FOUND, "A requested entity was not found.")
AlreadyExistsError = _subclass("AlreadyExistsError", ALREADY_EXISTS, "An entity already exists.")
PermissionDeniedError = _subclass("PermissionDeniedError", PERMISSION_DENIED,
                                  "The caller may not run the operation.")
ResourceExhaustedError = _subclass("ResourceExhaustedError", RESOURCE_EXHAUSTED,
                                   "Some resource (memory, a size limit) has been exhausted.")
FailedPreconditionError = _subclass("FailedPreconditionError", FAILED_PRECONDITION,
                                    "The system is not in a state to run the operation "
                                    "(e.g. an uninitialized variable).")
AbortedError = _subclass("AbortedError", ABORTED,
                         "The operation was aborted (e.g. a task restarted); retry it.")
OutOfRangeError = _subclass("OutOfRangeError", OUT_OF_RANGE,
                            "Iteration past the valid range (e.g. a closed, empty queue).")
UnimplementedError = _subclass("UnimplementedError", UNIMPLEMENTED,
                               "The operation is not implemented or supported.")
InternalError = _subclass("InternalError", INTERNAL, "An internal invariant was broken.")
UnavailableError = _subclass("UnavailableError", UNAVAILABLE,
                             "A task or service cannot be reached at the moment.")
DataLossError = _subclass("DataLossError", DATA_LOSS, "Unrecoverable data loss or corruption.")
UnauthenticatedError = _subclass("UnauthenticatedError", UNAUTHENTICATED,
                                 "The request lacks valid authentication credentials.")

_BY_CODE = {cls.error_code: cls for cls in (
    CancelledError, UnknownError, InvalidArgumentError, DeadlineExceededError, NotFoundError,
    AlreadyExistsError, PermissionDeniedError, ResourceExhaustedError, FailedPreconditionError,
    AbortedError, OutOfRangeError, UnimplementedError, InternalError, UnavailableError,
    DataLossError, UnauthenticatedError)}


def exception_type_from_error_code(code):
    return _BY_CODE.get(code, UnknownError)


def from_code(code, message, op_name=None):
    """Build the OpError subclass for ``code`` (unknown codes become UnknownError)."""
    return exception_type_from_error_code(code)(op_name, None, message)


def error_code_from_exception_type(cls):
    return cls.error_code


_OS_ERRORS = {FileNotFoundError: NotFoundError, FileExistsError: AlreadyExistsError,
              PermissionError: PermissionDeniedError, IsADirectoryError: FailedPreconditionError,
              NotADirectoryError: FailedPreconditionError}


def from_os_error(error, path):
    """An OSError about the file ``path`` as TF1's file ops report it: ``"<path>; <reason>"``
    (NotFoundError for a missing file, ...; UnknownError for the rest)."""
    return _OS_ERRORS.get(type(error), UnknownError)(
        None, None, "%s; %s" % (path, error.strerror or error))
