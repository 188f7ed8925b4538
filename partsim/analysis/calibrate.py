"""Learn a rule-table overlay from what real sessions did (``partsim rules calibrate``).

Observations come in three shapes, all read here into *cases* (a model file and
the node -> provider map one session produced):

- partsim's own observation JSON and the per-level ``observed.json`` records of
  ``shared/observed/<model>/`` (the model is ``model.onnx`` beside it), and ORT profiling
  JSON (``--model`` names the model), via :func:`partsim.runtime.observation.import_observation`;
- the single-op node records of ``shared/observed/nodes/*.jsonl`` (one JSON object a
  line: ``case``, ``assignment`` from ``get_provider_graph_assignment_info``,
  ``create_error`` when ORT refused the session); the model of case
  ``node__<test>`` is ``models/<test>.onnx`` beside the file.

:func:`agreement` predicts every case with a table set and counts agreeing nodes;
:func:`calibrate` finds the nodes where the table and the device disagree and
explains each as the smallest change of one rule (see :func:`calibrate`).
"""

import json
from pathlib import Path

from ..errors import PartsimError
from .cases import Case, agreement, predict_case, read_cases, read_node_records, split_cases
from .rule_edits import TABLE_FACTS, _Seen, _constraint_dtypes, _covering, _narrow, _rule_dict, _widen

__all__ = ["Case", "read_cases", "read_node_records", "agreement", "predict_case", "calibrate", "split_cases"]


def _observe_all(cases, providers, tables, models):
    """Every observed node as a :class:`_Seen`, and the conflicting observations (one node,
    two providers, in different observation files)."""
    seen, by_node = [], {}
    for case in cases:
        if case.refused:
            continue
        summary, assignment = predict_case(case, providers, tables, models)
        if summary is None:
            continue
        model = assignment.model
        index = {n.name: n for n in model.nodes}
        for n in summary["nodes"]:
            ep = case.nodes.get(n["name"])
            if ep is None:
                continue
            node = index[n["name"]]
            s = _Seen(case, n["name"], node, model, ep, n["provider"], n["reason"], _constraint_dtypes(node, model))
            seen.append(s)
            by_node.setdefault((str(case.model), n["name"]), []).append(s)
    conflicts = []
    for (model, name), ss in sorted(by_node.items()):
        if len({s.observed for s in ss}) > 1:
            conflicts.append({"model": model, "node": name,
                              "observed": sorted({f"{s.observed} ({s.case.source})" for s in ss})})
    bad = {(c["model"], c["node"]) for c in conflicts}
    return [s for s in seen if (str(s.case.model), s.name) not in bad], conflicts


def _overlay_table(base, overlay_ops, meta):
    """The overlay as a table dict (YAML-ready) and as a RuleTable layered over ``base``."""
    from ..gen.yamlout import dump_table
    from ..rules.load import layer_table, parse_table

    ops, remove = [], []
    for (domain, op), rules in sorted(overlay_ops.items()):
        if not rules:
            remove.append({"op": op, **({"domain": domain} if domain else {})})
        ops.extend(sorted(rules, key=lambda r: (r.get("versions") or [0])[0]))
    doc = {"provider": base.provider, "kind": base.kind}
    if base.variant:
        doc["variant"] = base.variant
    doc["source"] = meta
    doc["overlay"] = {"layers_over": Path(base.path).name}
    if remove:
        doc["overlay"]["remove"] = remove
    doc["ops"] = ops
    text = dump_table(doc, header="Overlay written by partsim rules calibrate: use it with -r over the shipped table.")
    table = parse_table(text, "<overlay>")
    return doc, text, layer_table(base, table)


def calibrate(cases, provider, tables, models=None, command="", device=""):
    """Explain every disagreement between ``tables`` and ``cases`` on ``provider`` as the
    smallest change of one op's rules, and return the overlay and a report.

    Per (domain, op, schema version): nodes observed on the provider that the table
    refuses get the rule widened (a kernel for that version, carrying the facts of the
    one before it; a dtype added; a rank, attribute, static-shape or constant-input
    predicate dropped); nodes observed off it that the table takes get it narrowed (a
    dtype removed, an attribute value vetoed, an input required constant, a rank limit,
    the version removed), on the widened table.  The changes are then checked together
    against every observation: one without which fewer agreeing nodes break is withdrawn
    and reported as a contradiction, as are nodes observed on different providers in
    different files.  Disagreements that no table fact
    explains (CPU-preferred placement, higher-priority claims) are listed apart.

    Returns
    -------
    dict
        ``overlay`` (table dict), ``text`` (its YAML), ``report``.
    """
    from ..rules.providers import canonical_name

    provider = canonical_name(provider)
    if provider not in tables:
        raise PartsimError(f"no table for {provider}")
    cal = _Calibration(cases, provider, tables, {} if models is None else models, command, device)
    cal.widen()
    cal.verify()
    cal.narrow()
    cal.verify()
    return cal.result()


class _Calibration:
    """The state of one :func:`calibrate` run: the observations, the overlay rules so far, the changes made
    and the contradictions found."""

    def __init__(self, cases, provider, tables, models, command, device):
        self.cases, self.provider, self.tables, self.models, self.device = cases, provider, tables, models, device
        self.providers = [provider, "CPUExecutionProvider"]
        self.base = base = tables[provider][0]
        self.seen, self.conflicts = _observe_all(cases, self.providers, tables, models)
        runtimes = sorted({c.runtime for c in cases if c.runtime})
        files = sorted({_file_of(c) for c in cases})
        self.meta = {"description": f"calibrated on {len(files)} observation file(s) ({len(cases)} sessions) by "
                                    f"partsim rules calibrate; layered over {Path(base.path).name}",
                     "version": ", ".join(runtimes) or "observations of unknown runtime version",
                     "generated_by": command or "partsim rules calibrate"}
        self.overlay_ops, self.changes, self.contradictions = {}, [], []
        self.cases_of_op = {}
        for s in self.seen:
            self.cases_of_op.setdefault(s.key[:2], set()).add(id(s.case))
        # node -> agrees, under the changes kept so far
        self.accepted = _verdicts(self.seen, self.providers, tables, models)

    def current(self, dk):
        if dk in self.overlay_ops:
            _, _, t = _overlay_table(self.base, {dk: self.overlay_ops[dk]}, self.meta)
            return list(t.rules_for(*dk))
        return list(self.base.rules_for(*dk))

    def attempt(self, dk, new_rules, why, group, kind, since):
        before = {_key_of(_rule_dict(r)) for r in self.base.rules_for(*dk)}
        prov = {"observations": sorted({_file_of(g.case) for g in group}),
                "runtime": ", ".join(sorted({g.case.runtime for g in group if g.case.runtime})) or "unknown",
                "device": ", ".join(sorted({g.case.device for g in group if g.case.device})) or self.device
                or "unknown",
                "change": why,
                "evidence": sorted({g.where() for g in group})[:3]}
        for r in new_rules:
            if "provenance" not in r and _key_of(r) not in before:
                r["provenance"] = prov
        self.overlay_ops[dk] = new_rules
        self.changes.append({"domain": dk[0], "op": dk[1], "since": since, "kind": kind, "change": why,
                             "nodes": len(group), "evidence": prov["evidence"]})

    def _layered(self, ops):
        return _with(self.tables, self.base, _overlay_table(self.base, ops, self.meta)[2] if ops else None)

    def _least_to_blame(self, broken, now):
        """The (score, op) whose withdrawal leaves the fewest of ``broken`` broken, then loses the fewest fixes."""
        hit = {k[0] for k in broken}
        best = None
        for dk in sorted(self.overlay_ops):
            ids = self.cases_of_op.get(dk, set())
            if not any(id(x.case) in ids for x in self.seen if x.case.source in hit):
                continue
            rest = {k: v for k, v in self.overlay_ops.items() if k != dk}
            affected = [x for x in self.seen if id(x.case) in ids]
            v = _verdicts(affected, self.providers, self._layered(rest), self.models)
            still = sum(1 for k in broken if k in v and self.accepted[k] and not v[k]) + \
                sum(1 for k in broken if k not in v)
            lost = sum(1 for k, ok in v.items() if now[k] and not ok)  # what the change had fixed
            score = (still, lost)
            if best is None or score < best[0]:
                best = (score, dk)
        return best

    def verify(self):
        """Withdraw, one op at a time, the changes without which fewer agreeing nodes break."""
        while self.overlay_ops:
            lay = _overlay_table(self.base, self.overlay_ops, self.meta)[2]
            now = _verdicts(self.seen, self.providers, _with(self.tables, self.base, lay), self.models)
            broken = sorted(k for k, ok in now.items() if self.accepted[k] and not ok)
            if not broken:
                break
            best = self._least_to_blame(broken, now)
            if best is None or best[0][0] >= len(broken):
                for k in broken:
                    self.contradictions.append({"domain": "", "op": "", "since": None, "nodes": 1,
                                                "why": f"{k[1]} ({k[0]}) agreed before the changes and does not "
                                                       "after; no single change is to blame"})
                break
            dk = best[1]
            self.overlay_ops.pop(dk)
            for c in self.changes:
                if (c["domain"], c["op"]) == dk and not c.get("withdrawn"):
                    c["withdrawn"] = True
                    self.contradictions.append({
                        "domain": dk[0], "op": dk[1], "since": c["since"], "nodes": c["nodes"],
                        "why": f"{c['change']}: withdrawn, it moves nodes that agree without it "
                               f"(e.g. {broken[0][1]}, {broken[0][0]})"})

    def widen(self):
        """Nodes the device ran that the table refuses: widen, one (domain, op, version) at a time."""
        widen = {}
        for s in self.seen:
            if s.observed != s.predicted and s.observed == self.provider and s.reason in TABLE_FACTS:
                widen.setdefault(s.key, []).append(s)
        for key in sorted(widen, key=lambda k: (k[0], k[1], k[2] or 0)):
            group, dk = widen[key], key[:2]
            rules = self.current(dk)
            rule, why = _widen(group, rules)
            cov = _covering(rules, key[2])
            new = _keep_provenance([_rule_dict(r) for r in rules if not (cov and r is cov[0])],
                                   self.overlay_ops.get(dk, []))
            self.attempt(dk, new + [rule], why, group, "widen", key[2])

    def narrow(self):
        """On the widened table (CPU-preferred placements follow the kernels): nodes the table takes that ran
        elsewhere: narrow."""
        seen1, _ = _observe_all(self.cases, self.providers, self._layered(self.overlay_ops), self.models)
        by_key, narrow = {}, {}
        for s in seen1:
            by_key.setdefault(s.key, []).append(s)
            if s.observed != s.predicted and s.predicted == self.provider:
                narrow.setdefault(s.key, []).append(s)
        for key in sorted(narrow, key=lambda k: (k[0], k[1], k[2] or 0)):
            bad, dk = narrow[key], key[:2]
            good = [s for s in by_key[key] if s.observed == self.provider]
            new, why = _narrow(bad, good, self.current(dk))
            if new is None:
                self.contradictions.append({"domain": dk[0], "op": dk[1], "since": key[2], "nodes": len(bad),
                                            "why": why})
                continue
            self.attempt(dk, _keep_provenance(new, self.overlay_ops.get(dk, [])), why, bad, "narrow", key[2])

    def result(self):
        self.changes[:] = [c for c in self.changes if not c.get("withdrawn")]
        doc, text, layered = _overlay_table(self.base, self.overlay_ops, self.meta) if self.overlay_ops \
            else (None, "", None)
        per_file = _per_file(self.cases, self.providers, self.tables, self.base, layered, self.models)
        final, _ = _observe_all(self.cases, self.providers, _with(self.tables, self.base, layered), self.models)
        unexplained = {}
        for s in final:
            if s.observed != s.predicted:
                unexplained.setdefault(s.reason or "claimed by the provider", []).append(s.where())
        report = {"provider": self.provider, "base": self.base.path, "observations": per_file,
                  "changes": self.changes, "contradictions": self.contradictions,
                  "conflictingObservations": self.conflicts,
                  "unexplained": {k: {"nodes": len(v), "examples": v[:3]} for k, v in sorted(unexplained.items())}}
        return {"overlay": doc, "text": text, "report": report}


def _file_of(case):
    return case.source.split(".jsonl:")[0] + ".jsonl" if ".jsonl:" in case.source else case.source


def _key_of(rule):
    return json.dumps({k: v for k, v in rule.items() if k != "provenance"}, sort_keys=True, default=str)


def _verdicts(seen, providers, tables, models):
    """``{(case source, node): predicted == observed}`` for the nodes of ``seen``."""
    out, of_case = {}, {}
    for s in seen:
        of_case.setdefault(id(s.case), (s.case, []))[1].append(s)
    for case, group in of_case.values():
        summary, _ = predict_case(case, providers, tables, models)
        pred = {n["name"]: n["provider"] for n in summary["nodes"]}
        for s in group:
            out[(case.source, s.name)] = pred.get(s.name) == s.observed
    return out


def _keep_provenance(new, old):
    """Rules carried over from an earlier change of this run keep their provenance."""
    olds = {_key_of(r): r for r in old}
    return [olds.get(_key_of(r), r) if "provenance" not in r else r for r in new]


def _with(tables, base, layered):
    """``tables`` with ``base`` replaced by ``layered`` (itself when ``layered`` is None)."""
    from ..rules.load import TableSet

    if layered is None:
        return tables
    out = TableSet()
    for name in tables:
        for t in tables[name]:
            out.add_table(layered if t is base else t, front=False)
    return out


def _per_file(cases, providers, tables, base, layered, models):
    """Agreement before and after the overlay, per observation file."""
    files = {}
    for c in cases:
        files.setdefault(_file_of(c), []).append(c)
    out = []
    for f, cs in sorted(files.items()):
        b = agreement(cs, providers, tables, models)
        a = agreement(cs, providers, _with(tables, base, layered), models) if layered is not None else b
        out.append({"file": f, "sessions": len(cs), "nodes": b["nodes"], "agreeingBefore": b["agreeing"],
                    "agreeingAfter": a["agreeing"]})
    return out
