"""GatherSliceToSplitFusion on the CPU nodes next to a laid-out WebGPU graph, for the final view.

ORT's Level 2 ``GatherSliceToSplitFusion`` (``core/optimizer/gather_fusion.cc``, CPU and CUDA nodes only:
``graph_transformer_utils.cc``) replaces the Gathers of one tensor by a ``Split`` (named
``<first Gather>/GatherSliceToSplitFusion``) and a ``Squeeze`` per scalar index (``GenerateNodeName("Squeeze")``)
when, in ORT's words and checks:

- the tensor is a graph input or initializer read more than once, or the single output of a node that is not
  a ``Shape`` ("Gather following Shape ... is not the target case") and has more than one consumer;
- at least two of its consumers read it as input 0 and are Gathers (since-version 13, ai.onnx opset >= 13)
  or Slices; every one of those is supported (a CPU or CUDA node, the same axis, a scalar int64 constant
  index) and together they take each element of that axis exactly once, whose size is known.

partsim's final view comes from a CPU-only session that had this fusion switched off because WebGPU is among
the providers, and its CPU pass never sees the case that matters here: the layout transformation (which runs
before Level 2) makes a ``Shape`` of an NHWC node read ``Shape -> Gather(perm)``, and that ``Gather`` is a
producer the fusion accepts (captcha_crnn; a built Conv -> Shape -> four Gathers graph on the real plugin,
tests/sim/test_webgpu_fusions.py).  This module applies the rule to Gathers on the graph Level 2 sees: the
partitioned graph as partsim's layout transformation left it (its layout results' ``graph``), the Gathers
then replaced by name in the final view.  Slices and Gathers with a 1-element index are not modelled (not
seen on these sessions).  Pure: no I/O, no ORT.
"""

from .final_view import FinalNode, FinalView

__all__ = ["gather_split"]

_PROVIDERS = ("CPUExecutionProvider", "CUDAExecutionProvider")
ORIGIN = "fused:GatherSliceToSplitFusion"


def _graph(model, layout):
    """The main graph after the layout transformation: ``[(model index or None, op, inputs, outputs)]``."""
    result = next((r for r in layout or () if not r.scope and r.graph), None)
    if result is not None:
        return [(orig, op, ins, outs) for orig, op, ins, outs, _ep in result.graph]
    return [(n.index, n.op_type, n.inputs, n.outputs) for n in model.nodes if not n.scope]


def _length(model, graph, producer, tensor):
    """The size of 1-D ``tensor`` when known: a Shape's output has its input's rank, a Gather of it
    (the layout transformation's perm) keeps it."""
    k = producer.get(tensor)
    if k is not None and graph[k][1] == "Gather" and graph[k][0] is None:
        k = producer.get(graph[k][2][0])
    if k is not None and graph[k][1] == "Shape":
        orig = graph[k][0]  # the model's Shape reads what the layout renamed: its own input has the rank
        read = model.nodes[orig].inputs[0] if orig is not None else graph[k][2][0]
        shape = model.value(read).shape
        attrs = model.nodes[orig].attrs if orig is not None else {}
        whole = attrs.get("start") in (None, 0) and attrs.get("end") is None  # Shape-15's start/end: a slice
        return len(shape) if shape is not None and whole else None
    shape = model.value(tensor).shape
    return shape[0] if shape is not None and len(shape) == 1 and isinstance(shape[0], int) else None


def _splits(model, provider, graph):
    """``[(tensor, [Gather model indices in ORT's consumer order])]`` the fusion takes."""
    producer = {t: k for k, (_o, _op, _i, outs) in enumerate(graph) for t in outs if t}
    readers: dict = {}
    for k, (_o, _op, ins, _outs) in enumerate(graph):
        for t in ins:
            if t:
                readers.setdefault(t, []).append(k)
    found = []
    for t, ks in readers.items():
        p = producer.get(t)
        if len(ks) < 2 or (p is None and model.value(t).kind not in ("input", "initializer")) or (
                p is not None and (graph[p][1] == "Shape" or len(graph[p][3]) != 1)):
            continue
        gathers = [k for k in ks if graph[k][1] in ("Gather", "Slice") and graph[k][2][0] == t]
        size = _length(model, graph, producer, t)
        if len(gathers) < 2 or size is None:
            continue
        picked = [graph[k][0] for k in gathers]
        if any(i is None or not _supported(model, provider, i) for i in picked):
            continue
        starts = sorted(model.int_consts[model.nodes[i].inputs[1]][0] % size for i in picked)
        if starts == list(range(size)):
            # ORT's consumer set is an unordered_set<NodeIndex> (graph.h): libstdc++ lists a small one
            # newest first, the node added last (seen: the Split named after the last Gather)
            found.append((t, sorted(picked, reverse=True)))
    return found


def _supported(model, provider, i):
    n = model.nodes[i]
    index = n.inputs[1] if len(n.inputs) > 1 else ""
    return (n.op_type == "Gather" and not n.domain and (n.since_version or 0) >= 13 and provider[i] in _PROVIDERS
            and n.attrs.get("axis", 0) in (0, -1) and model.value(index).shape == ()
            and len(model.int_consts.get(index, ())) == 1)


def gather_split(view, model, provider, layout):
    """``view`` with the Gathers ORT's GatherSliceToSplitFusion takes replaced by its Split and Squeezes
    (``model``: the partitioned graph, ``provider`` per node index, ``layout`` its layout results);
    ``view`` itself when there are none."""
    if model.opsets.get("", 0) < 13:
        return view
    found = _splits(model, provider, _graph(model, layout))
    if not found:
        return view
    taken = {model.nodes[i].name: i for _t, picked in found for i in picked}
    out, ends = [], dict(view.ends_as)
    squeezes = sum(f.name.startswith("Squeeze#") for f in view.nodes)
    for f in view.nodes:
        if f.name not in taken:
            out.append(f)
            continue
        for _t, picked in found:
            if model.nodes[picked[0]].name != f.name:
                continue
            split = f"{f.name}/GatherSliceToSplitFusion"
            replaces = tuple(p for i in picked for p in _replaced(view, model.nodes[i].name))
            out.append(FinalNode(split, "Split", "", f.provider, ORIGIN, replaces))
            out.extend(FinalNode(f"Squeeze#{squeezes + k}", "Squeeze", "", f.provider, ORIGIN, ())
                       for k in range(len(picked)))
            squeezes += len(picked)
            for p in replaces:
                ends[p] = (split,)
    return FinalView(tuple(out), ends)


def _replaced(view, name):
    return next((f.replaces for f in view.nodes if f.name == name), ())
