"""The words of partsim's output, defined once: printed in ``partsim --help``, ``simulate --help`` and
under the summary table (the full definitions are docs/contract.md section 1)."""

__all__ = ["GLOSSARY", "REASONS", "glossary_text", "reasons_text"]

# term -> definition (one sentence, as a user reads it under a table)
GLOSSARY = {
    "fragment": "connected nodes on one provider, through edges that stay on it (EP, CPU, EP = 3 fragments)",
    "partition": "what ORT hands a provider as one unit: one compiled subgraph on NNAPI, CoreML, QNN, "
                 "OpenVINO, TensorRT (it may join fragments or split one); one fragment on CPU, CUDA, XNNPACK",
    "transfer": "a tensor made on one provider and read on another (once per tensor and reading provider)",
    "feed transfer": "a graph input read on a non-CPU provider (copied when fed, not by a node)",
    "Memcpy": "a copy node ORT inserts between host and device memory (CUDA, TensorRT), one per tensor and "
              "direction",
    "reason": "why a node is not on the first provider you asked for (categories: docs/contract.md section 3)",
}

# reason category -> what it means and what to change (simulate --help)
REASONS = {
    "op_not_in_table": "the provider has no kernel for the op: replace it, or try whatif --add-support OP",
    "opset_version": "the provider has the op only at other opset versions: try whatif --opset N",
    "dtype": "the provider does not take this data type for the op (e.g. int64, float16)",
    "dynamic_shape": "the provider needs static shapes: fix the symbolic dimensions (--dim NAME=VALUE)",
    "rank": "an input's rank is outside what the provider takes for the op",
    "attribute": "an attribute value the provider refuses (the detail names it)",
    "non_constant_input": "an input (weights, shape) must be a constant initializer: ORT's constant folding "
                          "(--optimize basic) often makes it one",
    "stop_op_downstream": "the node comes after one of the provider's stop ops (its partitioning rules)",
    "group_rejected": "the provider's partitioning rules refused the group the node was in (too small, ...)",
    "cpu_preferred": "ORT keeps small integer shape computations on the CPU on purpose: nothing to change",
    "claimed_by_higher_priority": "a provider earlier in your list took the node",
    "policy": "the whole-graph policy (no CPU fallback) would make the session fail",
}


def reasons_text(indent="  ", width=80):
    """The reason categories as wrapped ``category: meaning`` lines."""
    import textwrap

    out = []
    for term, text in REASONS.items():
        out.extend(textwrap.wrap(f"{term}: {text}", width=width, initial_indent=indent,
                                 subsequent_indent=indent + "    "))
    return "\n".join(out)


def glossary_text(indent="  ", width=112):
    """The glossary as wrapped ``term: definition`` lines.

    >>> print(glossary_text(width=60).splitlines()[0])
      fragment: connected nodes on one provider, through edges
    """
    import textwrap

    out = []
    for term, text in GLOSSARY.items():
        out.extend(textwrap.wrap(f"{term}: {text}", width=width, initial_indent=indent,
                                 subsequent_indent=indent + "    "))
    return "\n".join(out)
