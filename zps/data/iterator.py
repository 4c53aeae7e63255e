"""``tf.data.Iterator``: reads the elements of a Dataset, one ``get_next()`` per step.

An iterator is a resource of the task it is placed on (zps.ops.dataset_ops): every session on a
server shares it, a local Session has its own. ``get_next()`` raises ``tf.errors.OutOfRangeError``
("End of sequence") after the last element, which ends a ``MonitoredTrainingSession`` loop cleanly.

>>> import zps as tf
>>> with tf.Graph().as_default():
...     n = tf.placeholder(tf.int64, [])
...     it = tf.data.Dataset.range(n).make_initializable_iterator()
...     x = it.get_next()
...     with tf.Session() as sess:
...         sess.run(it.initializer, {n: 2})
...         print(sess.run(x), sess.run(x))
...         try:
...             sess.run(x)
...         except tf.errors.OutOfRangeError as e:
...             print(e.message)
0 1
End of sequence
"""

from zps.data import structure as nest
from zps.framework import dtypes as _dtypes
from zps.framework import errors
from zps.framework.graph import Tensor, convert_to_tensor, get_default_graph
from zps.framework.tensor_shape import as_shape, unknown_shape
from zps.ops import dataset_ops  # noqa: F401 - registers the iterator ops
from zps.ops.op_util import make_op
from zps.ops.sparse_ops import SparseTensor


class Iterator:
    """Reads a dataset's elements. Made by ``Dataset.make_one_shot_iterator()``,
    ``Dataset.make_initializable_iterator()`` or ``Iterator.from_structure`` (reinitializable:
    ``make_initializer(dataset)`` for each dataset of that structure)."""

    def __init__(self, iterator_resource, initializer, output_types, output_shapes,
                 output_classes):
        self._iterator_resource = iterator_resource
        self._initializer = initializer
        self._output_types = output_types
        self._output_shapes = output_shapes
        self._output_classes = output_classes
        self._types = nest.flatten(output_types)
        self._shapes = nest.flatten(output_shapes)
        self._classes = nest.flatten(output_classes)
        # What IteratorGetNext yields: the plain tensors carrying the components (see
        # zps.data.structure).
        self._plain_types, self._plain_shapes = nest.plain_specs(self._types, self._shapes,
                                                                 self._classes)

    @staticmethod
    def from_structure(output_types, output_shapes=None, shared_name=None, output_classes=None):
        """An uninitialized iterator for elements of this structure; ``make_initializer(dataset)``
        makes the op that starts it on a dataset. ``output_classes`` (the same structure, of
        ``tf.Tensor`` and ``tf.SparseTensor``; all Tensors if None) says which components are
        SparseTensors; ``output_types`` then gives their values' dtype, ``output_shapes`` their
        dense shape.

        >>> import zps as tf
        >>> with tf.Graph().as_default():
        ...     it = tf.data.Iterator.from_structure(tf.int64, tf.TensorShape([]))
        ...     x = it.get_next()
        ...     init_a = it.make_initializer(tf.data.Dataset.range(3))
        ...     init_b = it.make_initializer(tf.data.Dataset.range(10, 13))
        ...     with tf.Session() as sess:
        ...         sess.run(init_a)
        ...         a = sess.run(x)
        ...         sess.run(init_b)
        ...         print(a, sess.run(x))
        0 10
        """
        output_types, output_shapes, output_classes = _structure(output_types, output_shapes,
                                                                 output_classes)
        types, shapes = _plain_specs(output_types, output_shapes, output_classes)
        handle = make_op("Iterator", [], name="Iterator", shared_name=shared_name or "",
                         output_types=types, output_shapes=shapes)
        return Iterator(handle, None, output_types, output_shapes, output_classes)

    @staticmethod
    def from_string_handle(string_handle, output_types, output_shapes=None, output_classes=None):
        """The iterator whose ``string_handle()`` value ``string_handle`` (a string scalar tensor,
        usually a placeholder) has when a step runs: one ``get_next()`` reads from whichever
        iterator is fed (TF1's feedable iterator). The iterator must be on the task this runs on.
        ``output_classes`` as for ``from_structure``.

        >>> import zps as tf
        >>> with tf.Graph().as_default():
        ...     train = tf.data.Dataset.range(100).make_one_shot_iterator()
        ...     valid = tf.data.Dataset.range(5).make_initializable_iterator()
        ...     handle = tf.placeholder(tf.string, [])
        ...     x = tf.data.Iterator.from_string_handle(handle, tf.int64).get_next()
        ...     with tf.Session() as sess:
        ...         h_train, h_valid = sess.run([train.string_handle(), valid.string_handle()])
        ...         sess.run(valid.initializer)
        ...         print(sess.run(x, {handle: h_train}), sess.run(x, {handle: h_valid}))
        0 0
        """
        output_types, output_shapes, output_classes = _structure(output_types, output_shapes,
                                                                 output_classes)
        types, shapes = _plain_specs(output_types, output_shapes, output_classes)
        handle = make_op("IteratorFromStringHandle", [convert_to_tensor(string_handle)],
                         name="IteratorFromStringHandle", output_types=types,
                         output_shapes=shapes)
        return Iterator(handle, None, output_types, output_shapes, output_classes)

    def string_handle(self, name=None):
        """A string scalar naming this iterator, to feed to ``from_string_handle``'s placeholder."""
        graph = self._iterator_resource.graph
        with graph.colocate_with(self._iterator_resource.op):
            return make_op("IteratorToStringHandle", [self._iterator_resource],
                           name=name or "IteratorToStringHandle")

    @staticmethod
    def _one_shot(dataset):
        dataset._check_iterable()
        plan, tensors, waits = dataset._plan()
        types, shapes = dataset._plain_specs()
        with get_default_graph().control_dependencies(waits):
            handle = make_op("OneShotIterator", tensors, name="OneShotIterator", dataset=plan,
                             output_types=tuple(types), output_shapes=tuple(shapes))
        return Iterator(handle, None, dataset.output_types, dataset.output_shapes,
                        dataset.output_classes)

    def make_initializer(self, dataset, name=None):
        """The op that (re)starts this iterator at the first element of ``dataset`` (which must
        have this iterator's structure, classes, types and compatible shapes)."""
        dataset._check_iterable()
        if not nest.same_structure(self._output_types, dataset.output_types):
            raise ValueError("The two structures don't have the same nested structure: the "
                            "iterator's elements are %s, the dataset's %s"
                            % (nest.describe(self._output_types),
                               nest.describe(dataset.output_types)))
        if self._classes != dataset._classes:
            raise TypeError("Expected output classes %r but got dataset with output classes %r."
                            % (self._output_classes, dataset.output_classes))
        if self._types != dataset._types:
            raise TypeError("Expected output types %r but got dataset with output types %r."
                            % (self._output_types, dataset.output_types))
        if not all(a.is_compatible_with(b) for a, b in zip(self._shapes, dataset._shapes)):
            raise TypeError("Expected output shapes compatible with %r but got dataset with "
                            "output shapes %r." % (self._output_shapes, dataset.output_shapes))
        plan, tensors, waits = dataset._plan()
        graph = self._iterator_resource.graph
        with graph.colocate_with(self._iterator_resource.op), graph.control_dependencies(waits):
            return make_op("MakeIterator", [self._iterator_resource] + tensors,
                           name=name or "make_initializer", dataset=plan)

    def get_next(self, name=None):
        """The next element: this iterator's structure of tensors (and SparseTensors, whose
        fetched values are SparseTensorValues), one new value per step (OutOfRangeError after
        the last)."""
        graph = self._iterator_resource.graph
        with graph.colocate_with(self._iterator_resource.op):
            out = make_op("IteratorGetNext", [self._iterator_resource], name=name or
                          "IteratorGetNext", num_outputs=len(self._plain_types),
                          output_types=tuple(self._plain_types),
                          output_shapes=tuple(self._plain_shapes))
            return nest.pack(self._output_types,
                             nest.components(out, self._shapes, self._classes))

    @property
    def initializer(self):
        """The op that starts this iterator (ValueError for a one-shot iterator, which has none)."""
        if self._initializer is None:
            raise ValueError("Iterator does not have an initializer.")
        return self._initializer

    @property
    def output_types(self):
        return self._output_types

    @property
    def output_shapes(self):
        return self._output_shapes

    @property
    def output_classes(self):
        return self._output_classes


class NumpyIterator:
    """The elements of a dataset as numpy values (SparseTensorValues for sparse components), read
    by a one-shot iterator in a Session of its own on the dataset's graph, closed at the end:
    ``Dataset.as_numpy_iterator()`` (TF's, which TF1 graphs lack)."""

    def __init__(self, dataset):
        from zps.client.session import Session  # the client sits above tf.data
        tensors = dataset._plan()[1]
        graph = tensors[0].graph if tensors else get_default_graph()
        with graph.as_default(), graph.name_scope("numpy_iterator"):
            self._next = Iterator._one_shot(dataset).get_next()
        self._session = Session(graph=graph)

    def __iter__(self):
        return self

    def __next__(self):
        if self._session is None:
            raise StopIteration
        try:
            return self._session.run(self._next)
        except errors.OutOfRangeError:
            self.close()
            raise StopIteration from None

    def close(self):
        """Close the iterator's session (done at the end of the elements)."""
        if getattr(self, "_session", None) is not None:
            self._session.close()
            self._session = None

    def __del__(self):
        self.close()


def _structure(output_types, output_shapes, output_classes=None):
    """(types, shapes, classes) as nested structures of DTypes, TensorShapes (unknown if None)
    and component classes (Tensor if None)."""
    output_types = nest.map_structure(lambda t: _dtypes.as_dtype(t).base_dtype, output_types)
    return (output_types, _shapes(output_types, output_shapes),
            _classes(output_types, output_classes))


def _shapes(output_types, output_shapes):
    if output_shapes is None:
        return nest.map_structure(lambda _: unknown_shape(), output_types)
    try:
        shapes = nest.flatten(nest.pack(output_types, nest.flatten(output_shapes)))
    except ValueError:
        shapes = None
    if shapes is None or not nest.same_structure(output_types, output_shapes):
        raise TypeError("output_shapes %s must have the structure of output_types %s"
                        % (output_shapes, nest.describe(output_types)))
    return nest.pack(output_types, [as_shape(s) for s in shapes])


def _classes(output_types, output_classes):
    if output_classes is None:
        return nest.map_structure(lambda _: Tensor, output_types)
    if not nest.same_structure(output_types, output_classes):
        raise TypeError("output_classes %s must have the structure of output_types %s"
                        % (output_classes, nest.describe(output_types)))
    return nest.map_structure(_component_class, output_classes)


def _component_class(cls):
    for base in (SparseTensor, Tensor):
        if isinstance(cls, type) and issubclass(cls, base):
            return base
    raise TypeError("Could not build a structure for output class %s: each component class in "
                    "`output_classes` must be tf.Tensor or tf.SparseTensor"
                    % getattr(cls, "__name__", repr(cls)))


def _plain_specs(output_types, output_shapes, output_classes):
    """The plain tensors' (dtypes, shapes) as op attrs (see zps.data.structure)."""
    types, shapes = nest.plain_specs(nest.flatten(output_types), nest.flatten(output_shapes),
                                     nest.flatten(output_classes))
    return tuple(types), tuple(shapes)


def make_one_shot_iterator(dataset):
    """``dataset.make_one_shot_iterator()`` (TF1's ``tf.data.make_one_shot_iterator``)."""
    return dataset.make_one_shot_iterator()


def make_initializable_iterator(dataset, shared_name=None):
    """``dataset.make_initializable_iterator()`` (TF1's ``tf.data.make_initializable_iterator``)."""
    return dataset.make_initializable_iterator(shared_name)


def get_output_types(dataset_or_iterator):
    return dataset_or_iterator.output_types


def get_output_shapes(dataset_or_iterator):
    return dataset_or_iterator.output_shapes


def get_output_classes(dataset_or_iterator):
    return dataset_or_iterator.output_classes


__all__ = ["Iterator", "NumpyIterator", "get_output_classes", "get_output_shapes", "get_output_types",
           "make_initializable_iterator", "make_one_shot_iterator"]
