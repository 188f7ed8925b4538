"""A layer-error result as a text table: one row per boundary, FP32 vs quantized."""

from .text import format_table
from .escape import text_renderer

__all__ = ["render_layer_error_table"]


def _f(v, spec=".4g"):
    return "-" if v is None else format(v, spec)


@text_renderer
def render_layer_error_table(res):
    rows = [[b["index"], b["consumerOp"], b["quantConsumerOp"], b["tensor"], _f(b["relError"]),
             _f(b["growthVsFirst"], ".3g"), _f(b["stepRatio"], ".3g"), _f(b["sqnrDb"], ".1f"),
             "JUMP" if b["jump"] else ""] for b in res["boundaries"]]
    head = f"{res['quantModel']} vs {res['fp32Model']}  (seed {res['seed']}, inputs {res['inputs']})"
    return head + "\n" + format_table(["#", "fp32 op", "quant op", "tensor", "relError", "vsFirst", "step",
                                       "SQNR dB", ""], rows, [">", "<", "<", "<", ">", ">", ">", ">", "<"]) + "\n"
