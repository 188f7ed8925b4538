"""The execution receipt's vocabulary and schema: cells, states, stages, policies; validation.
"""

from ..errors import ObservationError
from ..runtime.sessions import FALLBACK_REASONS

__all__ = ["RECEIPT_SCHEMA_VERSION", "CELLS", "CELL_STATES", "STAGE_STATES", "FALLBACK_POLICIES", "RECEIPT_FALLBACK_REASONS", "validate_receipt", "receipt_schema"]


RECEIPT_SCHEMA_VERSION = "1.0"


CELLS = ("first", "repeat", "shape_change", "rebuild", "fallback")


CELL_STATES = ("passed", "failed", "fallback_cpu", "error", "not_applicable", "blocked")


STAGE_STATES = ("ok", "failed", "skipped")


STAGES = ("availabilityChecked", "delegateCreated", "prepareCompleted", "invocationCompleted")


FALLBACK_POLICIES = ("cpu", "disable_feature", "reject_device")


# the finite reasons of sessions.py, plus a delegate whose outputs were out of tolerance
RECEIPT_FALLBACK_REASONS = tuple(FALLBACK_REASONS) + ("output_out_of_tolerance",)


def receipt_schema():
    """The receipt JSON Schema shipped in ``partsim/data``."""
    import json
    from importlib import resources

    return json.loads(resources.files("partsim.data").joinpath("receipt.schema.json").read_text(encoding="utf-8"))


def validate_receipt(data, path=None):
    """Validate against the schema; :class:`ObservationError` naming the first problem."""
    import jsonschema

    v = jsonschema.Draft7Validator(receipt_schema())
    errors = sorted(v.iter_errors(data), key=lambda e: (list(map(str, e.absolute_path)), e.message))
    if errors:
        e = errors[0]
        where = "/".join(map(str, e.absolute_path)) or "(top)"
        raise ObservationError(f"not a partsim execution receipt {RECEIPT_SCHEMA_VERSION}: at {where}: "
                               f"{e.message[:200]}", path)
    return data
