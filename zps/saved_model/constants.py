"""SavedModel file and collection names (TF1's ``tf.saved_model.constants``).

The TensorFlow file names are kept for reference (zps writes ``saved_model.zps``, see
``SAVED_MODEL_FILENAME_ZPS``; ``SAVED_MODEL_FILENAME_PB`` is what a TensorFlow export holds).
"""

__all__ = [
    "ASSETS_DIRECTORY", "ASSETS_KEY", "DEBUG_DIRECTORY", "DEBUG_INFO_FILENAME_PB",
    "LEGACY_INIT_OP_KEY", "MAIN_OP_KEY", "SAVED_MODEL_FILENAME_PB",
    "SAVED_MODEL_FILENAME_PBTXT", "SAVED_MODEL_SCHEMA_VERSION", "VARIABLES_DIRECTORY",
    "VARIABLES_FILENAME",
]

ASSETS_DIRECTORY = "assets"
EXTRA_ASSETS_DIRECTORY = "assets.extra"
ASSETS_KEY = "saved_model_assets"
DEBUG_DIRECTORY = "debug"
DEBUG_INFO_FILENAME_PB = "saved_model_debug_info.pb"
INIT_OP_SIGNATURE_KEY = "__saved_model_init_op"
LEGACY_INIT_OP_KEY = "legacy_init_op"
MAIN_OP_KEY = "saved_model_main_op"
SAVED_MODEL_FILENAME_PB = "saved_model.pb"
SAVED_MODEL_FILENAME_PBTXT = "saved_model.pbtxt"
SAVED_MODEL_FILENAME_ZPS = "saved_model.zps"
SAVED_MODEL_FORMAT = "zps-saved-model"
SAVED_MODEL_SCHEMA_VERSION = 1
TRAIN_OP_KEY = "saved_model_train_op"
TRAIN_OP_SIGNATURE_KEY = "__saved_model_train_op"
VARIABLES_DIRECTORY = "variables"
VARIABLES_FILENAME = "variables"
