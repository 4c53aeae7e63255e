"""The public namespace is a contract: this test pins every exported name.

A failure here means a name was added or removed. If that was intended, update the list
(keep it sorted): TF1 programs depend on these names. Modules are checked separately:
tf.nn, tf.train ... are namespaces; other submodules are implementation.
"""

import types

import pytest

import zps

NAMESPACE_MODULES = ["app", "compat", "contrib", "data", "distribute", "errors", "estimator",
                     "feature_column", "flags", "gfile", "image", "initializers", "io", "layers",
                     "linalg", "logging", "losses", "metrics", "nn", "python_io", "sparse", "test",
                     "train"]

EXPECTED = {
    "zps": [
        "AUTO_REUSE", "Assert", "ConditionalAccumulator", "ConditionalAccumulatorBase", "ConfigProto",
        "DType", "DeviceSpec", "Dimension", "Event", "FIFOQueue",
        "FixedLenFeature", "FixedLenSequenceFeature", "GPUOptions", "Graph", "GraphKeys",
        "GraphOptions", "HistogramProto", "IndexedSlices", "InteractiveSession", "Operation",
        "PaddingFIFOQueue",
        "PartitionedVariable",
        "Print",
        "QueueBase", "RandomShuffleQueue", "ReaderBase", "RunMetadata", "RunOptions", "Session",
        "SessionLog",
        "SparseConditionalAccumulator", "SparseTensor", "SparseTensorValue", "Summary",
        "SummaryMetadata", "Tensor",
        "TensorShape", "TextLineReader", "VarLenFeature", "Variable", "VariableScope", "WholeFileReader",
        "abs", "acos", "add", "add_check_numerics_ops", "add_n", "add_to_collection",
        "add_to_collections", "all_variables",
        "argmax", "argmin", "as_dtype",
        "as_string", "asin", "assert_equal", "assert_greater", "assert_greater_equal",
        "assert_integer", "assert_less", "assert_less_equal", "assert_negative",
        "assert_non_negative", "assert_non_positive", "assert_none_equal", "assert_positive",
        "assert_rank", "assert_type", "assign", "assign_add", "assign_sub", "atan",
        "atan2", "bincount", "bool", "boolean_mask", "broadcast_to", "case", "cast", "ceil",
        "check_numerics", "cholesky", "clip_by_global_norm", "clip_by_norm",
        "clip_by_value", "colocate_with",
        "concat", "cond",
        "confusion_matrix",
        "constant",
        "constant_initializer", "control_dependencies", "convert_to_tensor", "cos", "cosh",
        "count_nonzero", "count_up_to", "cumprod", "cumsum", "decode_csv", "decode_raw",
        "device", "diag", "diag_part", "disable_eager_execution", "disable_v2_behavior", "div",
        "div_no_nan", "divide", "double", "dynamic_partition",
        "dynamic_stitch", "einsum", "enable_eager_execution", "enable_v2_behavior", "equal", "erf",
        "erfc", "executing_eagerly", "exp", "expand_dims", "expm1",
        "eye", "fill",
        "fixed_size_partitioner", "float16", "float32", "float64", "floor", "floordiv", "floormod",
        "foldl", "foldr",
        "gather", "gather_nd", "get_collection", "get_collection_ref", "get_default_graph",
        "get_default_session",
        "get_local_variable", "get_logger", "get_seed", "get_variable", "get_variable_scope", "global_norm",
        "global_variables", "global_variables_initializer", "glorot_normal_initializer",
        "glorot_uniform_initializer", "gradients", "greater", "greater_equal", "group", "half",
        "histogram_fixed_width", "identity", "import_graph_def", "initialize_all_variables",
        "int16", "int32", "int64",
        "int8", "is_finite", "is_inf", "is_nan", "is_numeric_tensor",
        "is_variable_initialized", "less", "less_equal",
        "lin_space", "linspace", "local_variables", "local_variables_initializer", "log",
        "log1p", "log_matrix_determinant",
        "log_sigmoid",
        "logical_and",
        "logical_not", "logical_or", "logical_xor", "map_fn", "matmul", "matrix_band_part",
        "matrix_determinant", "matrix_diag",
        "matrix_diag_part", "matrix_inverse", "matrix_solve", "matrix_transpose",
        "matrix_triangular_solve", "maximum", "meshgrid",
        "min_max_variable_partitioner", "minimum", "mod", "model_variables",
        "moving_average_variables", "mul", "multinomial", "multiply", "name_scope", "neg",
        "negative", "newaxis", "no_op", "no_regularizer", "norm", "not_equal", "one_hot",
        "ones",
        "ones_initializer", "ones_like", "orthogonal_initializer",
        "pad", "parse_example", "parse_single_example", "placeholder", "placeholder_with_default",
        "pow",
        "print", "py_func", "qr", "random_crop", "random_normal",
        "random_normal_initializer",
        "random_shuffle", "random_uniform", "random_uniform_initializer", "range", "rank",
        "read_file", "realdiv",
        "reciprocal", "reduce_all", "reduce_any", "reduce_join",
        "reduce_logsumexp", "reduce_max", "reduce_mean", "reduce_min",
        "reduce_prod", "reduce_sum", "report_uninitialized_variables", "reset_default_graph",
        "reshape", "reverse", "reverse_sequence", "reverse_v2", "round", "rsqrt",
        "scalar_mul", "scan", "scatter_add",
        "scatter_nd", "scatter_sub", "scatter_update", "segment_max", "segment_mean", "segment_min",
        "segment_sum", "self_adjoint_eig", "self_adjoint_eigvals", "sequence_mask",
        "set_random_seed", "setdiff1d", "shape", "shape_n", "sigmoid", "sign",
        "sin", "sinh", "size", "slice", "sparse_add", "sparse_concat",
        "sparse_fill_empty_rows", "sparse_maximum", "sparse_merge", "sparse_minimum",
        "sparse_placeholder", "sparse_reduce_max", "sparse_reduce_max_sparse",
        "sparse_reduce_sum", "sparse_reduce_sum_sparse", "sparse_reorder",
        "sparse_reshape", "sparse_retain", "sparse_segment_mean",
        "sparse_segment_sqrt_n", "sparse_segment_sum", "sparse_slice", "sparse_softmax",
        "sparse_split", "sparse_tensor_dense_matmul", "sparse_tensor_to_dense",
        "sparse_to_indicator", "sparse_transpose", "split", "sqrt",
        "square", "squared_difference", "squeeze", "stack", "stop_gradient", "strided_slice",
        "string", "string_join", "string_split", "string_to_hash_bucket_fast",
        "string_to_hash_bucket_strong", "string_to_number", "sub", "substr",
        "subtract", "svd", "tables_initializer", "tan", "tanh", "tensordot", "tile",
        "to_double",
        "to_float", "to_int32", "to_int64", "trace", "trainable_variables", "transpose",
        "truediv",
        "truncated_normal", "truncated_normal_initializer", "tuple", "uint8",
        "uniform_unit_scaling_initializer", "unique", "unique_with_counts",
        "unsorted_segment_max", "unsorted_segment_mean",
        "unsorted_segment_min", "unsorted_segment_sqrt_n", "unsorted_segment_sum", "unstack",
        "variable_axis_size_partitioner", "variable_scope", "variables_initializer",
        "variance_scaling_initializer", "verify_tensor_all_finite", "where", "while_loop",
        "with_dependencies", "zeros",
        "zeros_initializer", "zeros_like",
    ],
    "zps.app": ["run"],
    "zps.compat": [
        "as_bytes", "as_str", "as_str_any", "as_text", "bytes_or_text_types", "complex_types",
        "dimension_at_index", "dimension_value", "integral_types", "path_to_str", "real_types",
    ],
    "zps.flags": [
        "DEFINE_bool", "DEFINE_boolean", "DEFINE_enum", "DEFINE_float", "DEFINE_integer",
        "DEFINE_list", "DEFINE_multi_float", "DEFINE_multi_integer", "DEFINE_multi_string",
        "DEFINE_string", "DuplicateFlagError", "Error", "FLAGS", "FlagValues",
        "IllegalFlagValueError", "UnparsedFlagAccessError", "UnrecognizedFlagError",
        "ValidationError", "mark_flag_as_required", "mark_flags_as_required", "register_validator",
    ],
    "zps.logging": [
        "DEBUG", "ERROR", "FATAL", "INFO", "TaskLevelStatusMessage", "WARN", "debug", "error",
        "fatal", "flush", "get_logger", "get_verbosity", "info", "log", "log_every_n", "log_first_n",
        "log_if", "set_verbosity", "vlog", "warn", "warning",
    ],
    "zps.test": [
        "TestCase", "compute_gradient", "compute_gradient_error", "get_temp_dir", "gpu_device_name",
        "is_gpu_available", "main",
    ],
    "zps.linalg": [
        "adjoint", "band_part", "cholesky", "det", "diag", "diag_part", "eigh", "eigvalsh",
        "einsum", "eye", "inv", "matmul", "matrix_transpose", "norm", "qr", "slogdet",
        "solve", "svd", "tensordot", "trace", "transpose", "triangular_solve"
    ],
    "zps.sparse": [
        "SparseTensor", "add", "concat", "fill_empty_rows", "from_dense", "matmul",
        "maximum", "merge", "minimum", "placeholder", "reduce_max", "reduce_max_sparse",
        "reduce_sum", "reduce_sum_sparse", "reorder", "reshape", "retain", "segment_mean",
        "segment_sqrt_n", "segment_sum", "slice", "softmax", "sparse_dense_matmul",
        "split", "to_dense", "to_indicator", "transpose"
    ],
    "zps.nn": [
        "atrous_conv2d", "avg_pool", "avg_pool1d", "avg_pool2d", "avg_pool3d",
        "batch_normalization", "bias_add", "bidirectional_dynamic_rnn",
        "compute_accidental_hits", "conv1d", "conv1d_transpose", "conv2d", "conv2d_backprop_filter",
        "conv2d_backprop_input", "conv2d_transpose", "conv3d", "conv3d_backprop_filter_v2",
        "conv3d_transpose", "crelu", "depthwise_conv2d", "depthwise_conv2d_native",
        "depthwise_conv2d_native_backprop_filter", "depthwise_conv2d_native_backprop_input",
        "dilation2d",
        "dropout", "dynamic_rnn", "elu", "embedding_lookup",
        "embedding_lookup_sparse",
        "fixed_unigram_candidate_sampler", "fused_batch_norm", "in_top_k", "l2_loss",
        "l2_normalize", "leaky_relu", "local_response_normalization", "log_softmax",
        "log_uniform_candidate_sampler", "lrn", "max_pool", "max_pool1d", "max_pool2d",
        "max_pool3d", "moments", "nce_loss", "normalize_moments", "pool",
        "relu", "relu6", "relu_layer", "sampled_softmax_loss", "selu", "separable_conv2d",
        "sigmoid", "sigmoid_cross_entropy_with_logits", "softmax",
        "softmax_cross_entropy_with_logits",
        "softmax_cross_entropy_with_logits_v2", "softplus", "softsign",
        "sparse_softmax_cross_entropy_with_logits", "static_bidirectional_rnn", "static_rnn",
        "sufficient_statistics", "swish", "tanh", "top_k",
        "uniform_candidate_sampler", "weighted_cross_entropy_with_logits", "weighted_moments",
        "xw_plus_b", "zero_fraction",
    ],
    "zps.train": [
        "AdadeltaOptimizer", "AdagradDAOptimizer", "AdagradOptimizer", "AdamOptimizer", "BytesList",
        "CheckpointSaverHook",
        "CheckpointSaverListener",
        "CheckpointState", "ChiefSessionCreator", "ClusterSpec", "Coordinator", "Example",
        "ExponentialMovingAverage", "Feature", "FeatureList", "FeatureLists", "Features",
        "FeedFnHook", "FinalOpsHook", "FloatList", "FtrlOptimizer", "GlobalStepWaiterHook",
        "GradientDescentOptimizer",
        "GreedyLoadBalancingStrategy", "Int64List", "LoggingTensorHook", "LooperThread",
        "MomentumOptimizer",
        "MonitoredSession", "MonitoredTrainingSession", "NanLossDuringTrainingError",
        "NanTensorHook", "NewCheckpointReader", "Optimizer", "ProfilerHook",
        "ProximalAdagradOptimizer", "ProximalGradientDescentOptimizer", "QueueRunner",
        "RMSPropOptimizer", "Saver", "Scaffold", "SecondOrStepTimer", "SequenceExample", "Server",
        "SessionCreator",
        "SessionManager", "SessionRunArgs", "SessionRunContext", "SessionRunHook",
        "SessionRunValues", "SingularMonitoredSession", "StepCounterHook", "StopAtStepHook",
        "SummarySaverHook", "SummaryWriterCache", "Supervisor", "SyncReplicasOptimizer",
        "WorkerSessionCreator",
        "add_queue_runner", "assert_global_step", "batch", "batch_join",
        "byte_size_load_fn",
        "checkpoint_exists",
        "cosine_decay", "cosine_decay_restarts", "create_global_step", "exponential_decay",
        "export_meta_graph", "generate_checkpoint_state_proto", "get_checkpoint_mtimes",
        "get_checkpoint_state", "get_global_step", "get_or_create_global_step", "global_step",
        "import_meta_graph", "init_from_checkpoint",
        "input_producer", "inverse_time_decay", "latest_checkpoint",
        "limit_epochs", "linear_cosine_decay", "list_variables", "load_checkpoint", "load_variable",
        "meta_graph_filename", "natural_exp_decay", "piecewise_constant", "polynomial_decay",
        "range_input_producer", "remove_checkpoint", "replica_device_setter", "shuffle_batch",
        "shuffle_batch_join", "slice_input_producer", "start_queue_runners",
        "string_input_producer", "summary_iterator",
        "update_checkpoint_state",
    ],
    "zps.gfile": ["Copy", "DeleteRecursively", "Exists", "FastGFile", "GFile", "Glob",
                  "IsDirectory", "ListDirectory", "MakeDirs", "MkDir", "Open", "Remove", "Rename",
                  "Stat", "Walk"],
    "zps.python_io": ["TFRecordCompressionType", "TFRecordOptions", "TFRecordWriter",
                      "tf_record_iterator", "tfrecord_records"],
    "zps.io": ["FixedLenFeature", "FixedLenSequenceFeature", "PaddingFIFOQueue", "QueueBase",
               "RandomShuffleQueue", "TFRecordCompressionType", "TFRecordOptions",
               "TFRecordWriter", "VarLenFeature", "decode_csv", "decode_raw", "parse_example",
               "parse_single_example", "read_file", "tf_record_iterator"],
    "zps.errors": [
        "ABORTED", "ALREADY_EXISTS", "AbortedError", "AlreadyExistsError", "CANCELLED",
        "CancelledError", "DATA_LOSS", "DEADLINE_EXCEEDED", "DataLossError",
        "DeadlineExceededError", "FAILED_PRECONDITION", "FailedPreconditionError", "INTERNAL",
        "INVALID_ARGUMENT", "InternalError", "InvalidArgumentError", "NOT_FOUND", "NotFoundError",
        "OK", "OUT_OF_RANGE", "OpError", "OutOfRangeError", "PERMISSION_DENIED",
        "PermissionDeniedError", "RESOURCE_EXHAUSTED", "ResourceExhaustedError", "UNAUTHENTICATED",
        "UNAVAILABLE", "UNIMPLEMENTED", "UNKNOWN", "UnauthenticatedError", "UnavailableError",
        "UnimplementedError", "UnknownError", "error_code_from_exception_type",
        "exception_type_from_error_code", "from_code", "from_os_error",
    ],
    "zps.contrib.framework": [
        "get_global_step", "get_or_create_global_step",
    ],
    "zps.contrib.training": [
        "GreedyLoadBalancingStrategy", "RandomStrategy", "byte_size_load_fn",
    ],
    "zps.contrib.rnn": [
        "BasicLSTMCell", "BasicRNNCell", "DeviceWrapper", "DropoutWrapper", "GRUCell", "LSTMCell",
        "LSTMStateTuple", "MultiRNNCell", "RNNCell", "ResidualWrapper", "static_bidirectional_rnn",
        "static_rnn",
    ],
    "zps.nn.rnn_cell": [
        "BasicLSTMCell", "BasicRNNCell", "DeviceWrapper", "DropoutWrapper", "GRUCell", "LSTMCell",
        "LSTMStateTuple", "MultiRNNCell", "RNNCell", "ResidualWrapper",
    ],
    "zps.contrib.embedding": [
        "HASH_EMBEDDINGS", "HashEmbedding", "HashEmbeddingShard", "IndexedSlices",
        "SAVEABLE_OBJECTS", "TRAINABLE_TABLES", "TensorShape", "convert_to_tensor",
        "embedding_lookup", "get_default_graph", "get_hash_embedding",
    ],
    "zps.initializers": [
        "constant", "global_variables", "glorot_normal", "glorot_uniform", "he_normal",
        "he_uniform", "identity", "lecun_normal", "lecun_uniform", "local_variables", "ones",
        "orthogonal",
        "random_normal", "random_uniform", "truncated_normal", "uniform_unit_scaling", "variables",
        "variance_scaling", "zeros",
    ],
    "zps.distribute.cluster_resolver": [
        "ClusterResolver", "ClusterSpec", "SimpleClusterResolver", "SlurmClusterResolver",
        "TFConfigClusterResolver", "expand_hostlist", "expand_tasks_per_node", "format_master_url",
    ],
    "zps.data": [
        "Dataset", "Iterator", "TFRecordDataset", "TextLineDataset", "get_output_classes",
        "get_output_shapes", "get_output_types", "make_initializable_iterator",
        "make_one_shot_iterator",
    ],
    "zps.data.experimental": [
        "AUTOTUNE", "enumerate_dataset", "ignore_errors", "map_and_batch", "parallel_interleave",
        "shuffle_and_repeat", "unbatch",
    ],
    "zps.feature_column": [
        "bucketized_column", "categorical_column_with_hash_bucket",
        "categorical_column_with_identity", "categorical_column_with_vocabulary_file",
        "categorical_column_with_vocabulary_list", "crossed_column", "embedding_column",
        "indicator_column", "input_layer", "linear_model", "numeric_column",
        "shared_embedding_columns", "weighted_categorical_column",
    ],
    "zps.contrib.layers": [
        "OPTIMIZER_CLS_NAMES", "OPTIMIZER_SUMMARIES", "apply_regularization", "avg_pool2d",
        "batch_norm", "conv2d", "convolution2d", "dropout", "embed_sequence", "flatten",
        "fully_connected", "l1_l2_regularizer", "l1_regularizer", "l2_regularizer", "max_pool2d",
        "one_hot_encoding", "optimize_loss", "repeat", "stack", "sum_regularizer",
        "variance_scaling_initializer", "xavier_initializer", "xavier_initializer_conv2d",
    ],
    "zps.image": [
        "ResizeMethod", "adjust_brightness", "adjust_contrast", "central_crop",
        "convert_image_dtype", "crop_to_bounding_box", "flip_left_right", "flip_up_down",
        "grayscale_to_rgb", "pad_to_bounding_box", "per_image_standardization",
        "random_brightness", "random_contrast", "random_crop", "random_flip_left_right",
        "random_flip_up_down", "resize_bilinear", "resize_image_with_crop_or_pad",
        "resize_images", "resize_nearest_neighbor", "rgb_to_grayscale", "rot90",
        "transpose_image",
    ],
    "zps.layers": ["AveragePooling1D", "AveragePooling2D", "AveragePooling3D",
                   "BatchNormalization", "Conv1D", "Conv2D", "Conv2DTranspose", "Conv3D",
                   "Dense", "Dropout", "Flatten", "InputSpec", "Layer", "MaxPooling1D",
                   "MaxPooling2D", "MaxPooling3D", "SeparableConv2D",
                   "average_pooling1d", "average_pooling2d",
                   "average_pooling3d", "batch_normalization", "conv1d", "conv2d",
                   "conv2d_transpose", "conv3d", "dense", "dropout", "flatten", "max_pooling1d",
                   "max_pooling2d", "max_pooling3d", "separable_conv2d"],
    "zps.metrics": [
        "accuracy", "auc", "false_negatives", "false_negatives_at_thresholds", "false_positives",
        "false_positives_at_thresholds", "mean", "mean_absolute_error", "mean_iou",
        "mean_per_class_accuracy", "mean_squared_error", "precision", "precision_at_k",
        "precision_at_thresholds", "recall", "recall_at_k", "recall_at_thresholds",
        "root_mean_squared_error", "true_negatives", "true_negatives_at_thresholds",
        "true_positives", "true_positives_at_thresholds",
    ],
    "zps.estimator": [
        "DNNClassifier", "DNNLinearCombinedClassifier", "DNNLinearCombinedRegressor",
        "DNNRegressor", "Estimator", "EstimatorSpec", "EvalSpec", "LinearClassifier",
        "LinearRegressor", "ModeKeys", "RunConfig", "TrainSpec", "WarmStartSettings",
        "train_and_evaluate",
    ],
    "zps.estimator.inputs": ["numpy_input_fn"],
    "zps.losses": [
        "Reduction", "absolute_difference", "add_loss", "compute_weighted_loss", "cosine_distance",
        "get_losses", "get_regularization_loss", "get_regularization_losses", "get_total_loss",
        "hinge_loss", "huber_loss", "log_loss", "mean_squared_error", "sigmoid_cross_entropy",
        "softmax_cross_entropy", "sparse_softmax_cross_entropy",
    ],
}


def _resolve(path):
    obj = zps
    for part in path.split(".")[1:]:
        obj = getattr(obj, part)
    return obj


@pytest.mark.parametrize("namespace", sorted(EXPECTED))
def test_exported_names_are_pinned(namespace):
    mod = _resolve(namespace)
    exported = sorted(n for n in dir(mod) if not n.startswith("_")
                      and not isinstance(getattr(mod, n), types.ModuleType))
    assert exported == EXPECTED[namespace]


@pytest.mark.parametrize("name", NAMESPACE_MODULES)
def test_namespace_modules(name):
    assert isinstance(getattr(zps, name), types.ModuleType)


@pytest.mark.parametrize("path", [
    "constant", "Session", "device", "Variable", "matmul", "nn.relu", "app.run",
    "train.Server", "train.Server.create_local_server", "train.ClusterSpec",
    "train.AdagradOptimizer", "train.replica_device_setter",
    "contrib.framework.get_or_create_global_step",
])
def test_names_used_by_the_seed_programs_exist(path):
    assert _resolve("zps." + path) is not None
