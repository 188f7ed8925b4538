"""The usability checker's report as text, as the checker prints it.
"""

from ..analysis.compat import CHECKER_EPS
from .escape import text_renderer

__all__ = ["render_compat_table"]


@text_renderer
def render_compat_table(result):
    """A short text report in the checker's words (one block per EP)."""
    lines = [f"usability-checker compat: {result['model']['path']}",
             f"  reproduces {result['source']} (optimization: {result['optimization']})"]
    if result["dynamicInputs"]:
        lines.append(f"  dynamic inputs: {', '.join(result['dynamicInputs'])}")
    lines.append(f"  values with dynamic shape: {result['numDynamicValues']}")
    header = f"{'EP':<22}{'partitions':>11}{'supported':>12}{'suitability':>13}  unsupported ops"
    lines += ["", header, "-" * len(header)]
    for name, _, _, _, _ in CHECKER_EPS:
        e = result["eps"][name]
        lines.append(f"{name:<22}{e['partitions']:>11}{e['supportedNodes']:>6}/{e['totalNodes']:<5}"
                     f"{e['suitability']:>13}  {','.join(e['unsupportedOps']) or '-'}")
    for name, _, _, _, _ in CHECKER_EPS:
        e = result["eps"][name]
        lines += ["", f"{name}:"]
        lines += _detail(e, "  ")
        if e["ifFixedShapes"] is not None:
            lines.append("  if the model were updated to make the shapes fixed:")
            lines += _detail(e["ifFixedShapes"], "    ")
        lines.append(f"  model should perform well with {name}: {e['overallSuitability']}")
    lines += ["", f"usable with NNAPI or CoreML: {'yes' if result['usable'] else 'no'}"]
    return "\n".join(lines) + "\n"


def _detail(e, ind):
    out = [f"{ind}{e['partitions']} partitions with a total of {e['supportedNodes']}/{e['totalNodes']} nodes"]
    if e["partitionSizes"]:
        out.append(f"{ind}partition sizes: [{', '.join(str(s) for s in e['partitionSizes'])}]")
    out.append(f"{ind}unsupported nodes due to operator: {e['nodesUnsupportedDueToOp']}")
    if e["nodesUnsupportedDueToDynamicInput"]:
        out.append(f"{ind}unsupported nodes due to input having a dynamic shape: "
                   f"{e['nodesUnsupportedDueToDynamicInput']}")
    if e["nodesUnsupportedDueToRank"]:
        out.append(f"{ind}unsupported nodes due to rank of input data: {e['nodesUnsupportedDueToRank']} "
                   f"({','.join(e['opsWithUnsupportedRank'])})")
    if e["subgraphs"]:
        out.append(f"{ind}{e['nodesInSubgraphs']} nodes are in {e['subgraphs']} subgraphs")
    if e["caveats"]:
        out.append(f"{ind}caveats not checked (a node may still be rejected):")
        out += [f"{ind}  {c}" for c in e["caveats"]]
    return out
