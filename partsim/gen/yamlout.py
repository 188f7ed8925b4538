"""Deterministic YAML for generated rule tables (flow style for short lists)."""

import yaml

__all__ = ["dump_table"]


class _Dumper(yaml.SafeDumper):
    def ignore_aliases(self, data):
        return True


def _list(dumper, data):
    flow = all(not isinstance(x, (dict, list)) for x in data)
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=flow)


_Dumper.add_representer(list, _list)


def dump_table(table, header=""):
    """YAML text of a table dict, keys in insertion order, with an optional comment header."""
    body = yaml.dump(table, Dumper=_Dumper, sort_keys=False, width=110, allow_unicode=True)
    lines = [f"# {h}" if h else "#" for h in header.splitlines()] if header else []
    lines.append("# Generated file: edit the generator, not this table.")
    return "\n".join(lines) + "\n" + body
