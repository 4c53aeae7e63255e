"""``tf.strings``: TF1's string namespace (TF 1.13+ names for the ops of zps.ops.string_ops).

>>> import zps as tf
>>> with tf.Graph().as_default():
...     words = tf.strings.split(["Hello  World"])
...     n = tf.strings.length(tf.strings.lower(words.values))
...     print(tf.Session().run(n).tolist())
[5, 5]
"""

from zps.ops.string_ops import as_string, reduce_join, regex_full_match, regex_replace, substr
from zps.ops.string_ops import string_format as format  # noqa: A004 - TF1's public name
from zps.ops.string_ops import string_join as join
from zps.ops.string_ops import string_length as length
from zps.ops.string_ops import string_lower as lower
from zps.ops.string_ops import string_strip as strip
from zps.ops.string_ops import string_to_hash_bucket_fast as to_hash_bucket_fast
from zps.ops.string_ops import string_to_hash_bucket_strong as to_hash_bucket_strong
from zps.ops.string_ops import string_to_number as to_number
from zps.ops.string_ops import string_upper as upper
from zps.ops.string_ops import strings_split_v1 as split

__all__ = ["as_string", "format", "join", "length", "lower", "reduce_join", "regex_full_match",
           "regex_replace", "split", "strip", "substr", "to_hash_bucket_fast",
           "to_hash_bucket_strong", "to_number", "upper"]
