"""Errors of the checkpoint library: each names the checkpoint, what is wrong and the fix."""


class CheckpointError(RuntimeError):
    """A checkpoint (or run dir) that cannot be saved, found, verified or loaded."""


class IncompatibleCheckpointError(CheckpointError):
    """A resume refused because the new config differs from the checkpoint's in a key that matters."""
