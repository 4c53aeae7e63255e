"""The op a SavedModel runs after restoring its variables (TF1's ``tf.saved_model.main_op``).

Like TF1's, ``main_op()`` also initializes the *global* variables: as a SavedModel's main op it
runs after the restore and so overwrites the restored values; pass it only for models whose
state is all local variables and tables, or use ``main_op_with_restore``.
"""

from zps.framework import graph as _graph
from zps.ops import control_flow_ops, resources, variables

__all__ = ["main_op", "main_op_with_restore"]


def main_op():
    """One op that initializes the global and local variables and the tables."""
    return control_flow_ops.group(variables.global_variables_initializer(),
                                  variables.local_variables_initializer(),
                                  resources.tables_initializer())


def main_op_with_restore(restore_op_name):
    """``main_op()`` followed by the restore op named ``restore_op_name``."""
    graph = _graph.get_default_graph()
    restore = graph.as_graph_element(restore_op_name)
    with graph.control_dependencies([main_op()]):
        return control_flow_ops.group(restore)
