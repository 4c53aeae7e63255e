"""TF1's canned estimators (v1 API: losses summed over the batch, ``Reduction.SUM``)."""
