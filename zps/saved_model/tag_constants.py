"""Tags of the meta graphs of a SavedModel (TF1's ``tf.saved_model.tag_constants``)."""

__all__ = ["GPU", "SERVING", "TPU", "TRAINING"]

SERVING = "serve"
TRAINING = "train"
EVAL = "eval"
GPU = "gpu"
TPU = "tpu"
