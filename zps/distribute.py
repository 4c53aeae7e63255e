"""``tf.distribute``: the cluster resolvers (TF_CONFIG as Kubernetes operators set it, Slurm)."""

from zps.distributed import resolvers as cluster_resolver

__all__ = ["cluster_resolver"]
