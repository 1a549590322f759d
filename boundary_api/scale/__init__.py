"""Evaluation past one process: mergeable per-image state (``partials``), results
streamed from disk in bounded memory and sharded datasets (``streaming``), and Dask or
Ray clusters (``distributed``).  Every result equals the one-process evaluation's."""
_LAZY = {
    "Partial": "partials", "evaluate_partial": "partials", "merge_partials": "partials",
    "accumulate_partial": "partials", "partial_from_evaluator": "partials", "evaluate_sharded": "partials",
    "iter_results": "streaming", "evaluate_streaming": "streaming", "shard_dataset": "streaming",
    "evaluate_shard": "streaming", "evaluate_manifest": "streaming", "load_manifest": "streaming",
    "streaming_inputs": "streaming", "streams_results": "_inputs", "temporary_shards": "streaming",
    "evaluate_dask": "distributed", "evaluate_ray": "distributed", "local_client": "distributed",
    "gather_partials": "distributed",
}
__all__ = sorted(_LAZY)


def __getattr__(name):
    # each module is imported when first used: distributed needs dask or ray
    if name in _LAZY:
        from importlib import import_module

        value = getattr(import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
