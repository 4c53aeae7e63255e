"""Saving ``tf.keras`` models without pickle and without HDF5: configs (``get_config`` /
``from_config``, ``to_json`` / ``model_from_json``) and whole models (``Model.save`` /
``load_model``).

``model.save(path)`` writes a directory ``path`` holding

* ``model.json``: ``{"format": "zps-keras-model", "version": 1, "model_config": {"class_name",
  "config"}, "training_config": {"optimizer_config", "loss", "metrics", "loss_weights",
  "sample_weight_mode", "weighted_metrics"} or null, "weights": [...], "optimizer_weights":
  [...]}`` (the last two: the keys of the tensors,
  in the order of ``model.weights`` and of the optimizer's state);
* ``weights.safetensors``: the values of the model's weights and of its optimizer's state
  (iterations, slots) in a plain safetensors file (zps/framework/checkpoint_format.py).

zps writes no HDF5 (h5py is not a dependency): a path ending in ``.h5``/``.hdf5``/``.keras``
is refused with an error that says so. ``load_model`` makes the model again (layers by class
name, from ``tf.keras.layers`` or ``custom_objects``), loads its weights and, with
``compile=True``, compiles it with the saved optimizer (its state restored), loss and
metrics, so that ``fit`` continues as the saved model would have. A model compiled with a
``tf.train`` optimizer is saved without training config (as TF 1.15 does): compile it again.

Layer configs are the layers' ``get_config()``, completed from their constructor arguments
where a layer's own config leaves some out; ``Lambda`` layers (code) cannot be saved.

>>> import os, tempfile, numpy as np, zps as tf
>>> path = os.path.join(tempfile.mkdtemp(), "model")
>>> with tf.Graph().as_default():
...     model = tf.keras.Sequential([tf.keras.layers.Dense(2, input_shape=(3,))])
...     model.compile("sgd", "mse")
...     model.save(path)
...     want = model.predict(np.ones((1, 3)))
>>> with tf.Graph().as_default():
...     again = tf.keras.models.load_model(path)
...     print(np.array_equal(again.predict(np.ones((1, 3))), want), sorted(os.listdir(path)))
True ['model.json', 'weights.safetensors']
"""

import inspect
import json
import logging
import os

import numpy as np

from zps.framework import dtypes
from zps.framework.checkpoint_format import SafetensorsFile, write_safetensors

FORMAT, VERSION = "zps-keras-model", 1
CONFIG_FILE, WEIGHTS_FILE = "model.json", "weights.safetensors"
_HDF5 = (".h5", ".hdf5", ".keras")


# --- values in configs -------------------------------------------------------------------------

def _encode(value, where):
    """``value`` of a config as JSON: tuples as lists, initializers and regularizers as
    ``{"class_name", "config"}``, functions by name; anything else is refused."""
    from zps.keras import activations
    from zps.ops import init_ops
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, np.generic | np.ndarray):
        return value.tolist()
    if isinstance(value, dtypes.DType):
        return value.name
    if isinstance(value, list | tuple):
        return [_encode(v, where) for v in value]
    if isinstance(value, dict):
        return {str(k): _encode(v, where) for k, v in value.items()}
    if isinstance(value, init_ops.Initializer) or hasattr(value, "get_config"):
        return {"class_name": type(value).__name__,
                "config": _encode(value.get_config(), where)}
    if inspect.isfunction(value) or inspect.isbuiltin(value):
        if where.endswith("activation"):
            return activations.serialize(value)
        return value.__name__
    raise ValueError("Cannot save %s: its value %r has no config (zps saves JSON configs, "
                     "never pickles: give the layer names or objects with get_config)"
                     % (where, value))


def _decode(value, custom_objects):
    from zps.keras import losses, regularizers
    from zps.ops.layers_impl import _deserialized
    if isinstance(value, list):
        return [_decode(v, custom_objects) for v in value]
    if isinstance(value, str) and value in custom_objects:
        return custom_objects[value]
    if isinstance(value, dict) and set(value) == {"class_name", "config"}:
        from zps.keras import layers
        if value["class_name"] in layers.__all__ and value["class_name"] not in custom_objects:
            return value   # a wrapped layer (Bidirectional, TimeDistributed, RNN's cell): its
            # wrapper's from_config builds it
        name, config = value["class_name"], _decode(value["config"], custom_objects)
        cls = custom_objects.get(name) or getattr(regularizers, name, None) or \
            getattr(losses, name, None)
        if cls is not None:
            return cls.from_config(config) if hasattr(cls, "from_config") else cls(**config)
        return _deserialized({"class_name": name, "config": config})
    if isinstance(value, dict):
        return {k: _decode(v, custom_objects) for k, v in value.items()}
    return value


def layer_config(layer):
    """``{"class_name", "config"}`` of ``layer`` (JSON): its ``get_config()`` (for a user's
    layer, with the constructor arguments it leaves out taken from its attributes)."""
    from zps.keras.layers import Lambda
    if isinstance(layer, Lambda):
        raise ValueError("Cannot save the Lambda layer %s: zps does not serialize code. Write a "
                         "Layer subclass with get_config and pass it in custom_objects"
                         % layer.name)
    from zps.keras.engine import InputLayer
    if isinstance(layer, InputLayer):
        return {"class_name": "InputLayer", "config": _encode(layer.get_config(), layer.name)}
    config = dict(layer.get_config())
    if not type(layer).__module__.startswith("zps."):   # zps's layers give their whole config
        _fill_config(layer, config)
    return {"class_name": type(layer).__name__,
            "config": {k: _encode(v, "%s's `%s`" % (layer.name, k)) for k, v in config.items()}}


def _fill_config(layer, config):
    """Add to a user layer's ``config`` the constructor arguments it leaves out, from the
    layer's attributes of those names."""
    for name, param in inspect.signature(type(layer).__init__).parameters.items():
        if name in config or name in ("self", "args", "kwargs") or \
                param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        for attr in (name, "_" + name):
            if attr in vars(layer) or hasattr(type(layer), attr):
                try:
                    config[name] = getattr(layer, attr)
                    break
                except AttributeError:
                    continue
        else:
            if param.default is param.empty:
                raise ValueError("Cannot save layer %s: its config lacks the argument `%s` "
                                 "(%s.get_config should give it)"
                                 % (layer.name, name, type(layer).__name__))


def layer_from_config(config, custom_objects=None):
    """The layer (or model) ``{"class_name", "config"}`` describes."""
    from zps.keras import layers, models
    custom_objects = custom_objects or {}
    name = config["class_name"]
    cls = custom_objects.get(name) or getattr(layers, name, None) or getattr(models, name, None)
    if cls is None or not isinstance(cls, type):
        raise ValueError("Unknown layer: %s. Pass custom layers in `custom_objects` "
                         "({'%s': %s})" % (name, name, name))
    if issubclass(cls, models.Model):
        return cls.from_config(config["config"], custom_objects=custom_objects)
    arguments = _decode(config["config"], custom_objects)
    return cls.from_config(arguments) if hasattr(cls, "from_config") else cls(**arguments)


# --- model configs ------------------------------------------------------------------------------

def model_config(model):
    """``get_config()`` of a Sequential or functional model, in TF 1.15's layout."""
    from zps.keras.models import Sequential
    if not model._graph_network():
        raise NotImplementedError("Model %s is a subclassed model: its get_config is yours to "
                                  "write (zps, as TF, serializes Sequential and functional "
                                  "models only)" % model.name)
    if isinstance(model, Sequential):
        layers = [layer_config(layer) for layer in model.layers]
        first = model.layers[0] if model.layers else None
        if model._input_layer is not None and getattr(first, "_batch_input_shape", None) is None:
            layers.insert(0, layer_config(model._input_layer))
        config = {"name": model.name, "layers": layers}
        compiled = getattr(model, "_compiled", None)
        if model.inputs is None and compiled is not None and compiled.built:
            config["build_input_shape"] = compiled.inputs[0].get_shape().as_list()
        return config
    with model.inputs[0].graph.as_default():   # Keras's call records are per graph
        return _functional_config(model)


def _functional_config(model):
    from zps.keras.engine import InputLayer, node_of
    from zps.ops.layers_impl import _flat
    network = {id(n) for n in model._network_nodes}

    def nodes(layer):
        return [n for n in layer._nodes if id(n) in network or isinstance(layer, InputLayer)]

    def where(tensor):
        node = node_of(tensor)
        index = [id(n) for n in nodes(node.layer)].index(id(node))
        return [node.layer.name, index, [id(t) for t in _flat(node.outputs)].index(id(tensor))]
    layers = []
    for layer in model.layers:
        inbound = []
        for node in nodes(layer):
            if isinstance(layer, InputLayer):
                continue
            if node.args:
                raise ValueError("Cannot save model %s: layer %s was called with positional "
                                 "arguments besides its inputs" % (model.name, layer.name))
            kwargs = _encode(node.kwargs, "%s's call arguments" % layer.name)
            inbound.append([where(t) + [kwargs] for t in _flat(node.inputs)])
        entry = layer_config(layer)
        layers.append({"name": layer.name, "class_name": entry["class_name"],
                       "config": entry["config"], "inbound_nodes": inbound})
    return {"name": model.name, "layers": layers,
            "input_layers": [where(t) for t in model.inputs],
            "output_layers": [where(t) for t in model.outputs]}


def sequential_from_config(cls, config, custom_objects=None):
    """A Sequential model from ``model_config``'s layout."""
    from zps.keras.engine import InputLayer
    layers = [layer_from_config(c, custom_objects) for c in config["layers"]]
    if config.get("build_input_shape"):
        layers.insert(0, InputLayer(batch_input_shape=config["build_input_shape"]))
    return cls(layers, name=config.get("name"))


def functional_from_config(cls, config, custom_objects=None):
    """A functional model from ``model_config``'s layout: the layers made, then called on their
    inbound nodes' tensors in an order where each input is ready."""
    from zps.keras.engine import Input
    layers, made, pending = {}, {}, []   # made: (layer name, node index) -> output tensors
    for entry in config["layers"]:
        if entry["class_name"] == "InputLayer":
            c = entry["config"]
            made[entry["name"], 0] = [Input(batch_shape=c["batch_input_shape"],
                                            dtype=c.get("dtype"), name=c["name"])]
            continue
        layers[entry["name"]] = layer_from_config(entry, custom_objects)
        pending.extend((entry["name"], i, node) for i, node in enumerate(entry["inbound_nodes"]))
    while pending:
        todo = [p for p in pending if all((n, i) in made for n, i, _, _ in p[2])]
        if not todo:
            raise ValueError("Cannot make model %s from its config: the layers %s wait on "
                             "inputs no layer makes" % (config.get("name"),
                                                        [p[0] for p in pending]))
        name, index, node = todo[0]
        pending.remove(todo[0])
        inputs = [made[n, i][t] for n, i, t, _ in node]
        result = layers[name](inputs if len(inputs) > 1 else inputs[0], **node[0][3])
        made[name, index] = list(result) if isinstance(result, list | tuple) else [result]

    def tensors(where):
        found = [made[n, i][t] for n, i, t in where]
        return found if len(found) > 1 else found[0]
    return cls(tensors(config["input_layers"]), tensors(config["output_layers"]),
               name=config.get("name"))


def to_json(model, **kwargs):
    """``{"class_name", "config", "backend"}`` of the model as JSON."""
    return json.dumps({"class_name": type(model).__name__, "config": model.get_config(),
                       "backend": "tensorflow"}, **kwargs)


def model_from_json(json_string, custom_objects=None):
    """The model (new layers, new weights) that ``model.to_json()`` describes."""
    return layer_from_config(json.loads(json_string), custom_objects)


# --- whole models -------------------------------------------------------------------------------

def _check_path(filepath, what):
    filepath = os.fspath(filepath)
    if str(filepath).endswith(_HDF5):
        raise ValueError("%s: zps does not write or read HDF5 (%r). It saves a model as a "
                         "directory (model.json + weights.safetensors): give a path without "
                         "the .h5 suffix, such as %r" % (what, filepath,
                                                         os.path.splitext(filepath)[0]))
    return filepath


def _training_config(model, session):
    from zps.keras import optimizers
    c = getattr(model, "_compiled", None)
    if c is None:
        return None
    if not isinstance(c.optimizer, optimizers.Optimizer):
        logging.getLogger("zps").warning(
            "Model %s is compiled with a tf.train optimizer: its state and config are not "
            "saved. Compile the model again after loading it." % model.name)
        return None
    hyper = dict(c.optimizer.get_config())
    values = {k: v for k, v in hyper.items() if hasattr(v, "load")}
    hyper.update(zip(values, (float(v) for v in session.run(list(values.values())))))
    if hasattr(c.optimizer, "_initial_accumulator_value"):
        hyper["initial_accumulator_value"] = c.optimizer._initial_accumulator_value

    def named(value, what):
        if isinstance(value, dict):
            return {k: named(v, what) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [named(v, what) for v in value]
        return value if value is None or isinstance(value, str | int | float) else \
            getattr(value, "__name__", None) or _encode(value, what)
    return {"optimizer_config": {"class_name": type(c.optimizer).__name__,
                                 "config": _encode(hyper, "the optimizer's config")},
            "loss": named(c.loss, "the loss"), "metrics": named(c.metrics, "the metrics"),
            "loss_weights": c.loss_weights,
            "sample_weight_mode": c.sample_weight_mode,
            "weighted_metrics": named(c.weighted_metrics, "the weighted metrics")}


def optimizer_weights(model):
    """The compiled model's optimizer state in a fixed order: ``iterations``, then each slot
    (by slot name) of each trainable weight (in ``model.trainable_weights``' order)."""
    c = getattr(model, "_compiled", None)
    if c is None or not c.built:
        return []
    optimizer = c.optimizer
    with c.graph.as_default():
        found = [optimizer.iterations] if hasattr(optimizer, "_iterations") else []
    for slot in optimizer.get_slot_names():
        found += [s for s in (optimizer.get_slot(p, slot) for p in model.trainable_weights)
                  if s is not None]
    return found


def save_model(model, filepath, overwrite=True, include_optimizer=True):
    """Write ``model`` as a directory ``filepath`` (see the module docstring)."""
    from zps.keras.engine import keras_session
    filepath = _check_path(filepath, "Model.save")
    if os.path.exists(filepath) and not os.path.isdir(filepath):
        raise ValueError("Model.save writes a directory, and %r is a file" % filepath)
    if os.path.exists(os.path.join(filepath, CONFIG_FILE)) and not overwrite:
        raise ValueError("%r holds a saved model already (overwrite=False)" % filepath)
    session = keras_session(model)
    weights = list(model.weights)
    state = optimizer_weights(model) if include_optimizer else []
    training = _training_config(model, session) if include_optimizer else None
    if training is None:
        state = []
    values = session.run(weights + state)
    keys = ["model/%04d/%s" % (i, v.op.name) for i, v in enumerate(weights)]
    keys += ["optimizer/%04d/%s" % (i, v.op.name) for i, v in enumerate(state)]
    os.makedirs(filepath, exist_ok=True)
    write_safetensors(os.path.join(filepath, WEIGHTS_FILE), dict(zip(keys, values)))
    document = {"format": FORMAT, "version": VERSION,
                "model_config": {"class_name": type(model).__name__,
                                 "config": model.get_config()},
                "training_config": training, "weights": keys[:len(weights)],
                "optimizer_weights": keys[len(weights):]}
    text = json.dumps(document, indent=1)
    from zps.framework.checkpoint_format import atomic_write
    atomic_write(os.path.join(filepath, CONFIG_FILE), lambda f: f.write(text.encode()))


def _read(filepath):
    path = os.path.join(filepath, CONFIG_FILE)
    if not os.path.isfile(path):
        raise OSError("No model saved at %r (no %s): give a directory Model.save wrote"
                      % (filepath, CONFIG_FILE))
    with open(path) as f:
        document = json.load(f)
    if document.get("format") != FORMAT or document.get("version") != VERSION:
        raise ValueError("%s is not a zps Keras model of version %d (format %r, version %r)"
                         % (path, VERSION, document.get("format"), document.get("version")))
    return document, SafetensorsFile(os.path.join(filepath, WEIGHTS_FILE))


def _assign(model, variables, keys, weights, what):
    from zps.keras.engine import keras_session
    if len(variables) != len(keys):
        raise ValueError("The saved model has %d %s, the model made from its config %d"
                         % (len(keys), what, len(variables)))
    session = keras_session(model)
    for variable, key in zip(variables, keys):
        value = weights.read(key)
        if tuple(variable.get_shape().as_list()) != value.shape:
            raise ValueError("Saved %s %s has shape %s, the model's %s has %s"
                             % (what, key, value.shape, variable.name,
                                tuple(variable.get_shape().as_list())))
        variable.load(value, session)


def load_model(filepath, custom_objects=None, compile=True):  # noqa: A002 - Keras's name
    """The model ``Model.save`` wrote at ``filepath``, in the default graph, with its weights;
    with ``compile`` (and a saved training config) compiled as it was, optimizer state
    included."""
    from zps.keras import losses, optimizers
    filepath = _check_path(filepath, "load_model")
    document, weights = _read(filepath)
    custom_objects = custom_objects or {}
    model = layer_from_config(document["model_config"], custom_objects)
    _assign(model, list(model.weights), document["weights"], weights, "weights")
    training = document.get("training_config")
    if not compile or training is None:
        return model
    opt = training["optimizer_config"]
    cls = custom_objects.get(opt["class_name"]) or getattr(optimizers, opt["class_name"])
    optimizer = cls.from_config(opt["config"]) if hasattr(cls, "from_config") else \
        cls(**opt["config"])
    loss = _decode(training["loss"], custom_objects)
    if isinstance(loss, str):
        losses.get(loss)   # an unknown name: say so now
    model.compile(optimizer, loss, metrics=_decode(training["metrics"], custom_objects),
                  loss_weights=training["loss_weights"],
                  sample_weight_mode=training.get("sample_weight_mode"),
                  weighted_metrics=_decode(training.get("weighted_metrics"), custom_objects))
    _assign(model, optimizer_weights(model), document["optimizer_weights"], weights,
            "optimizer weights")
    return model


__all__ = ["layer_config", "layer_from_config", "load_model", "model_from_json", "save_model",
           "to_json"]
