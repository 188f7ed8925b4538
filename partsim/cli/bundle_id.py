"""partsim bundle-id: modelBundleId of a model and its associated files, inputDigest of inputs."""

import argparse

from ..errors import EXIT_OK
from ..report.output import to_json, write_output
from .args import add_output_args

HELP = """\
Compute the modelBundleId (docs/contract.md §6): sha256 over the sha256 digests of the model
file, its metadata (the model's metadata_props plus --metadata), labels,
tokenizer, preprocessing and postprocessing configs, in that order; an absent part
is hashed as empty bytes.  The exact bytes are documented in
partsim/numerics/bundle.py; the final hash is over the text
"model:<hex>\\nmetadata:<hex>\\nlabels:<hex>\\n…postprocessing:<hex>\\n".
With --inputs FILE.npz also the inputDigest: sha256 over "<dtype>:<shape>\\n"
and the raw little-endian bytes of every array, in name order.

  partsim bundle-id model.onnx --labels labels.txt --tokenizer vocab.json -f json
"""


def add_parser(sub):
    p = sub.add_parser("bundle-id", help="modelBundleId of a model bundle (and inputDigest)", description=HELP,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", metavar="MODEL")
    for part in ("metadata", "labels", "tokenizer", "preprocessing", "postprocessing"):
        p.add_argument(f"--{part}", metavar="FILE", help=f"{part} file of the bundle")
    p.add_argument("--inputs", metavar="FILE.npz", help="inputs (no pickles): report their inputDigest")
    add_output_args(p, formats=("table", "json"))
    p.set_defaults(run=run)


def run(args):
    from ..numerics.bundle import bundle_id
    from ..report.bundle_id_table import render_bundle_id_table
    from ..numerics.inputs import input_digest, load_npz

    res = bundle_id(args.model, args.metadata, args.labels, args.tokenizer, args.preprocessing, args.postprocessing)
    if args.inputs:
        arrays = load_npz(args.inputs)
        res["inputDigest"] = input_digest(arrays)
        res["inputs"] = [{"name": k, "dtype": arrays[k].dtype.name, "shape": list(map(int, arrays[k].shape))}
                         for k in sorted(arrays)]
    text = to_json(res) if args.format == "json" else render_bundle_id_table(res)
    write_output(text, args.output)
    return EXIT_OK
