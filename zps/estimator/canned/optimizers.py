"""Optimizers named as the canned estimators take them (TF1's ``get_optimizer_instance``)."""

from zps.train.adagrad import AdagradOptimizer
from zps.train.adam import AdamOptimizer
from zps.train.ftrl import FtrlOptimizer
from zps.train.gradient_descent import GradientDescentOptimizer
from zps.train.optimizer import Optimizer
from zps.train.rmsprop import RMSPropOptimizer

_OPTIMIZER_CLS_NAMES = {"Adagrad": AdagradOptimizer, "Adam": AdamOptimizer,
                        "Ftrl": FtrlOptimizer, "RMSProp": RMSPropOptimizer,
                        "SGD": GradientDescentOptimizer}


def get_optimizer_instance(opt, learning_rate=None):
    """An Optimizer from a name (with ``learning_rate``), an Optimizer, or a callable making one."""
    if isinstance(opt, str):
        if opt not in _OPTIMIZER_CLS_NAMES:
            raise ValueError("Unsupported optimizer name: %s. Supported names are: %s"
                             % (opt, sorted(_OPTIMIZER_CLS_NAMES)))
        if learning_rate is None:
            raise ValueError("learning_rate must be specified when opt is string.")
        return _OPTIMIZER_CLS_NAMES[opt](learning_rate=learning_rate)
    if callable(opt) and not isinstance(opt, Optimizer):
        opt = opt()
    if not isinstance(opt, Optimizer):
        raise ValueError("The given object is not an Optimizer instance. Given: %r" % (opt,))
    return opt
