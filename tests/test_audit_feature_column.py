"""Regressions from a side-by-side audit of tf.feature_column against TensorFlow 2.21
(``tensorflow.compat.v1``): the expected behaviour is what TensorFlow did."""

import pytest

import zps as tf

fc = tf.feature_column


def test_a_missing_vocabulary_file_is_a_value_error_naming_the_column(tmp_path):
    with pytest.raises(ValueError, match="vocabulary_file in word does not exist"):
        fc.categorical_column_with_vocabulary_file("word", str(tmp_path / "missing.txt"))
