"""Files shipped with partsim: JSON Schemas, the ORT contrib-schema snapshot, a tiny probe model.

>>> data_path("summary.schema.json").name
'summary.schema.json'
"""

from pathlib import Path

DATA_DIR = Path(__file__).resolve().parent


def data_path(name):
    """The path of a shipped data file (``name`` relative to ``partsim/data``)."""
    return DATA_DIR / name
