"""The base of every config section: unknown keys, NaN and ±inf, and NUL characters are errors."""

from pydantic import BaseModel, ConfigDict, field_validator

from meshrl.config.values import check_no_nul


class Strict(BaseModel):
    """Base for every config section: unknown keys are errors, not silently ignored, and so
    is a NaN or ±inf wherever a float is taken (YAML's `.nan`/`.inf`, or `nan` in an override):
    no knob means anything at a non-finite value, and a NaN would only surface mid-run."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True, allow_inf_nan=False)

    @field_validator("*", mode="after")
    @classmethod
    def _no_nul(cls, value):
        """A NUL in a path or URL is refused by the OS mid-run (a traceback in a service): here."""
        return check_no_nul(value)
