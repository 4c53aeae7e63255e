"""Exporters: what ``train_and_evaluate`` exports after each evaluation (``EvalSpec(exporters=
...)``), into ``model_dir/export/<exporter name>/<timestamp>`` (TF1's ``tf.estimator.*Exporter``).

``LatestExporter`` exports every evaluated checkpoint and keeps the newest ``exports_to_keep``;
``FinalExporter`` exports once, at the end of training; ``BestExporter`` exports when an
evaluation beats the best one so far (by ``compare_fn``: a smaller ``loss`` by default), the best
of earlier runs being read from the evaluation event files.
"""

import logging
import os

import numpy as np

from zps import gfile
from zps.estimator.model_fn import LOSS_METRIC_KEY
from zps.estimator.util import fn_args
from zps.framework import errors
from zps.summary import summary_iterator

__all__ = ["Exporter", "BestExporter", "FinalExporter", "LatestExporter"]

_logger = logging.getLogger("zps.estimator")


class Exporter:
    """A kind of model export: ``name`` is its directory under ``model_dir/export``, and
    ``export(...)`` writes one export and returns its path (or None when it skips)."""

    @property
    def name(self):
        """The directory name of this exporter's exports (not None nor empty)."""
        raise NotImplementedError("%s must define the property `name`." % type(self).__name__)

    def export(self, estimator, export_path, checkpoint_path, eval_result, is_the_final_export):
        """Export ``estimator`` at ``checkpoint_path`` (evaluated as ``eval_result``) under
        ``export_path``; ``is_the_final_export`` is True after the last training step."""
        raise NotImplementedError("%s must implement export(estimator, export_path, "
                                  "checkpoint_path, eval_result, is_the_final_export)."
                                  % type(self).__name__)


class _SavedModelExporter(Exporter):
    """Exports the serving graph and the checkpoint with ``Estimator.export_saved_model``."""

    def __init__(self, name, serving_input_receiver_fn, assets_extra=None, as_text=False):
        self._name = name
        self._serving_input_receiver_fn = serving_input_receiver_fn
        self._assets_extra = assets_extra
        self._as_text = as_text

    name = property(lambda self: self._name)

    def export(self, estimator, export_path, checkpoint_path, eval_result, is_the_final_export):
        return estimator.export_saved_model(
            export_path, self._serving_input_receiver_fn, assets_extra=self._assets_extra,
            as_text=self._as_text, checkpoint_path=checkpoint_path)


def _check_exports_to_keep(exports_to_keep, message):
    if exports_to_keep is not None and exports_to_keep <= 0:
        raise ValueError(message)
    return exports_to_keep


def _garbage_collect_exports(export_dir_base, exports_to_keep):
    """Delete all but the ``exports_to_keep`` newest exports (directories named by 10-digit
    timestamps) of ``export_dir_base``."""
    if exports_to_keep is None or not gfile.IsDirectory(export_dir_base):
        return
    versions = sorted(name for name in gfile.ListDirectory(export_dir_base)
                      if len(name) == 10 and name.isdigit())
    for name in versions[:-exports_to_keep]:
        path = os.path.join(export_dir_base, name)
        try:
            gfile.DeleteRecursively(path)
        except errors.NotFoundError as e:
            _logger.warning("Can not delete %s recursively: %s", path, e)


class LatestExporter(Exporter):
    """Exports after every evaluation and keeps the ``exports_to_keep`` newest exports (None:
    all of them)."""

    def __init__(self, name, serving_input_receiver_fn, assets_extra=None, as_text=False,
                 exports_to_keep=5):
        self._saved_model_exporter = _SavedModelExporter(
            name, serving_input_receiver_fn, assets_extra, as_text)
        self._exports_to_keep = _check_exports_to_keep(
            exports_to_keep, "`exports_to_keep`, if provided, must be positive number")

    name = property(lambda self: self._saved_model_exporter.name)

    def export(self, estimator, export_path, checkpoint_path, eval_result, is_the_final_export):
        """Export, then delete all but the newest ``exports_to_keep`` exports."""
        result = self._saved_model_exporter.export(estimator, export_path, checkpoint_path,
                                                   eval_result, is_the_final_export)
        _garbage_collect_exports(export_path, self._exports_to_keep)
        return result


class FinalExporter(Exporter):
    """Exports once, after the evaluation of the final checkpoint of training (when
    ``TrainSpec.max_steps`` is reached)."""

    def __init__(self, name, serving_input_receiver_fn, assets_extra=None, as_text=False):
        self._saved_model_exporter = _SavedModelExporter(
            name, serving_input_receiver_fn, assets_extra, as_text)

    name = property(lambda self: self._saved_model_exporter.name)

    def export(self, estimator, export_path, checkpoint_path, eval_result, is_the_final_export):
        """Export when ``is_the_final_export``, else None."""
        if not is_the_final_export:
            return None
        _logger.info("Performing the final export in the end of training.")
        return self._saved_model_exporter.export(estimator, export_path, checkpoint_path,
                                                 eval_result, is_the_final_export)


def _loss_smaller(best_eval_result, current_eval_result):
    """True when ``current_eval_result``'s loss is smaller than ``best_eval_result``'s."""
    if not best_eval_result or LOSS_METRIC_KEY not in best_eval_result:
        raise ValueError("best_eval_result cannot be empty or no loss is found in it.")
    if not current_eval_result or LOSS_METRIC_KEY not in current_eval_result:
        raise ValueError("current_eval_result cannot be empty or no loss is found in it.")
    return best_eval_result[LOSS_METRIC_KEY] > current_eval_result[LOSS_METRIC_KEY]


def _verify_compare_fn_args(compare_fn):
    args = set(fn_args(compare_fn))
    for required in ("best_eval_result", "current_eval_result"):
        if required not in args:
            raise ValueError("compare_fn (%s) must include %s argument." % (compare_fn, required))
    unexpected = list(args - {"best_eval_result", "current_eval_result"})
    if unexpected:
        raise ValueError("compare_fn (%s) has following not expected args: %s"
                         % (compare_fn, unexpected))


def _same_result(loaded, eval_result):
    """Whether ``loaded`` (from the event files: scalars as float32, no global step) holds
    ``eval_result``'s values."""
    return all(key in eval_result and float(np.float32(eval_result[key])) == value
               for key, value in loaded.items())


class BestExporter(Exporter):
    """Exports when an evaluation is better (``compare_fn(best_eval_result,
    current_eval_result)``; default: a smaller ``loss``) than the best so far, which starts as
    the best evaluation in the event files ``event_file_pattern`` (relative to ``model_dir``)
    so that a restarted job remembers it; keeps the ``exports_to_keep`` newest exports."""

    def __init__(self, name="best_exporter", serving_input_receiver_fn=None,
                 event_file_pattern="eval/*.tfevents.*", compare_fn=_loss_smaller,
                 assets_extra=None, as_text=False, exports_to_keep=5):
        if compare_fn is None:
            raise ValueError("`compare_fn` must not be None.")
        _verify_compare_fn_args(compare_fn)
        self._compare_fn = compare_fn
        self._saved_model_exporter = _SavedModelExporter(
            name, serving_input_receiver_fn, assets_extra, as_text)
        self._event_file_pattern = event_file_pattern
        self._model_dir = None
        self._best_eval_result = None
        self._has_exported = False
        self._exports_to_keep = _check_exports_to_keep(
            exports_to_keep, "`exports_to_keep`, if provided, must be a positive number. Got %s"
            % (exports_to_keep,))

    name = property(lambda self: self._saved_model_exporter.name)

    def export(self, estimator, export_path, checkpoint_path, eval_result, is_the_final_export):
        """Export when ``eval_result`` is the best so far, else None."""
        if self._model_dir != estimator.model_dir and self._event_file_pattern:
            _logger.info("Loading best metric from event files.")
            self._model_dir = estimator.model_dir
            self._best_eval_result = self._get_best_eval_result(
                os.path.join(self._model_dir, self._event_file_pattern))
        # The evaluation being exported is in the event files already: the first export
        # may find itself loaded as the best.
        if (self._best_eval_result is None
                or (not self._has_exported and _same_result(self._best_eval_result, eval_result))
                or self._compare_fn(best_eval_result=self._best_eval_result,
                                    current_eval_result=eval_result)):
            _logger.info("Performing best model export.")
            self._best_eval_result = eval_result
            result = self._saved_model_exporter.export(estimator, export_path, checkpoint_path,
                                                       eval_result, is_the_final_export)
            _garbage_collect_exports(export_path, self._exports_to_keep)
            self._has_exported = True
            return result
        return None

    def _get_best_eval_result(self, event_files):
        """The best evaluation (a dict of its scalar summaries) of the event files, or None."""
        best = None
        for event_file in gfile.Glob(event_files):
            for event in summary_iterator(event_file):
                if not event.HasField("summary"):
                    continue
                result = {value.tag: value.simple_value for value in event.summary.value
                          if value.HasField("simple_value")}
                if result and (best is None or self._compare_fn(best, result)):
                    best = result
        return best
