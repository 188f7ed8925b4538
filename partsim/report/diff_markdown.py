"""``partsim diff`` as Markdown (a pull-request comment): one table row per model."""

from .diff_table import diff_rows

__all__ = ["render_diff_markdown"]


def _cell(text):
    return str(text).replace("|", "\\|").replace("\n", " ")


def render_diff_markdown(doc):
    s = doc["summary"]
    icon = "✅" if doc["passed"] else "❌"
    out = [f"### {icon} partsim diff `{_cell(doc['from'])}` → `{_cell(doc['to'])}`: {s['placementChanged']} of "
           f"{s['models']} model(s) placed differently", "",
           "| | model | status | moved | nodes | on first | partitions | transfers | Memcpy |",
           "|---|---|---|---:|---:|---:|---:|---:|---:|"]
    for row, r in zip(diff_rows(doc), doc["models"]):
        mark = "✅" if not r["placementChanged"] else ("⚠️" if r["passed"] else "❌")
        out.append(f"| {mark} | `{_cell(row[0])}` | " + " | ".join(_cell(c) for c in row[3:]) + " |")
    for r in doc["models"]:
        if r["reasons"]:
            out += ["", f"<details><summary><code>{_cell(r['model'])}</code></summary>", ""]
            out += [f"- {_cell(line)}" for line in r["reasons"]]
            out += ["", "</details>"]
    return "\n".join(out) + "\n"
