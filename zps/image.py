"""``tf.image``: TF1's image ops, resizing to color adjustments (zps/ops/image_ops.py)."""

from zps.ops.image_box_ops import *  # noqa: F403 - boxes: NMS, crop_and_resize ...
from zps.ops.image_codec_ops import *  # noqa: F403 - PNG, BMP; JPEG and GIF with Pillow
from zps.ops.image_color_ops import *  # noqa: F403 - color spaces, quality, edges
from zps.ops.image_ops import *  # noqa: F403

# TF 1.15's other names for the same functions
from zps.ops.image_ops import resize_image_with_crop_or_pad as resize_with_crop_or_pad  # noqa: F401
from zps.ops.image_ops import resize_images as resize  # noqa: F401
from zps.ops.image_ops import transpose_image as transpose  # noqa: F401
from zps.ops.image_resize_ops import *  # noqa: F403 - area, bicubic, patches, resize with pad
