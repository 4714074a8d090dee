"""target/hiveopt/index.html: the optimizer's report of the last dbt invocation, self-contained pages
(no script, no network; they open from the file system like dbt docs). The index has one row per
model (what happened, rules fired, optimizer time, statistics cost); each model's page
(`<model>.html`) its join trees before and after drawn as SVG, the SQL dbt compiled and the SQL
Spark ran with their differences, and the rules' decisions. Written from the records in the folder
at the end of each invocation; a model's page only when what it shows changed (`_page_key`).

>>> tree = {"kind": "join", "label": "join inner on a.k = b.k", "rows": 10, "bytes": 100,
...         "precision": "estimated", "algorithm": "BROADCAST b", "children": [
...     {"kind": "scan", "label": "scan a (db.a)", "alias": "a", "rows": 10, "bytes": 80, "precision": "exact"},
...     {"kind": "scan", "label": "scan b (db.b)", "alias": "b", "rows": 2, "bytes": 20, "precision": "exact"}]}
>>> svg = tree_svg(tree)
>>> svg.startswith('<svg class="join-tree"'), svg.count('class="node'), "BROADCAST b" in svg
(True, 3, True)
"""

from __future__ import annotations

import difflib
import hashlib
import html
import json
import os
from typing import Any

from dbt.adapters.hiveopt.optimizer.human import human_bytes, human_rows

NODE_WIDTH, NODE_HEIGHT, GAP_X, GAP_Y = 250, 72, 16, 34

STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #1d2330; }
h1 { font-size: 22px; } h2 { font-size: 18px; margin-top: 40px; border-top: 1px solid #ccd; padding-top: 16px; }
table.models { border-collapse: collapse; } table.models td, table.models th { padding: 4px 10px;
  border-bottom: 1px solid #e3e6ee; text-align: left; } td.num { text-align: right; }
.trees figure { margin: 0 0 18px 0; }
figcaption { font-weight: 600; margin-bottom: 4px; }
svg.join-tree rect { stroke: #5b6b8c; stroke-width: 1; rx: 4; }
svg.join-tree .scan rect { fill: #eef3ff; } svg.join-tree .join rect { fill: #fff6e5; }
svg.join-tree text { font: 11px system-ui, sans-serif; fill: #1d2330; }
svg.join-tree line { stroke: #8893aa; }
pre { background: #f6f7fa; padding: 8px; overflow-x: auto; font-size: 12px; }
table.diff { font: 12px monospace; border-collapse: collapse; } table.diff td { padding: 0 6px; vertical-align: top; }
.diff_add { background: #dff5df; } .diff_chg { background: #fff3c4; } .diff_sub { background: #f9dada; }
ul.decisions li.fired { color: #116329; } ul.decisions li.skipped { color: #5a6275; }
"""


def _layout(node: dict[str, Any], depth: int, next_leaf: list[int], placed: list) -> float:
    """x (in leaf slots) of `node`, children first; every node appended to `placed`."""
    children = node.get("children") or []
    if not children:
        x = float(next_leaf[0])
        next_leaf[0] += 1
    else:
        xs = [_layout(child, depth + 1, next_leaf, placed) for child in children]
        x = sum(xs) / len(xs)
    placed.append((node, x, depth, [id(c) for c in children]))
    return x


def tree_svg(tree: dict[str, Any]) -> str:
    """A join tree as an SVG picture: scans at the bottom, each join above its two sides."""
    placed: list = []
    leaves = [0]
    _layout(tree, 0, leaves, placed)
    depth = max(d for _, _, d, _ in placed)
    width = leaves[0] * (NODE_WIDTH + GAP_X)
    height = (depth + 1) * (NODE_HEIGHT + GAP_Y)
    at = {id(n): (x * (NODE_WIDTH + GAP_X), d * (NODE_HEIGHT + GAP_Y)) for n, x, d, _ in placed}
    # Scaled to the page's width (never above its own size): a left-deep join of 7 relations is
    # 1,900 px wide at full size.
    parts = [
        f'<svg class="join-tree" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
        f'style="width: 100%; max-width: {width}px">'
    ]
    for node, _, _, children in placed:  # edges under the boxes
        x, y = at[id(node)]
        for child in children:
            cx, cy = at[child]
            parts.append(
                f'<line x1="{x + NODE_WIDTH / 2}" y1="{y + NODE_HEIGHT}" x2="{cx + NODE_WIDTH / 2}" y2="{cy}"/>'
            )
    for node, _, _, _ in placed:
        x, y = at[id(node)]
        figures = f"{human_rows(node.get('rows'))}, {human_bytes(node.get('bytes'))}"
        if node.get("precision") == "absent":
            figures += " (no statistics)"
        lines = [_cut(node["label"]), ("estimated " if node.get("actual_rows") is not None else "") + figures]
        if node.get("actual_rows") is not None:
            lines.append(f"actual {human_rows(node['actual_rows'])} (q-error {node.get('q_error', 0):.2f})")
        if node["kind"] == "join":
            lines.append(_cut(node.get("algorithm", "")))
        texts = "".join(
            f'<text x="{x + 6}" y="{y + 16 + 15 * i}">{html.escape(line)}</text>' for i, line in enumerate(lines)
        )
        parts.append(
            f'<g class="node {node["kind"]}"><title>{html.escape(node["label"])}</title>'
            f'<rect x="{x}" y="{y}" width="{NODE_WIDTH}" height="{NODE_HEIGHT}"/>{texts}</g>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _cut(text: str, length: int = 44) -> str:
    return text if len(text) <= length else text[: length - 1] + "…"


def _outcome(record: dict[str, Any]) -> str:
    if "original_sql" not in record:  # a seed: only its statistics were recorded
        return "loaded; statistics after the build"
    if record.get("changed"):
        return "rewritten"
    if record.get("fallback_reason"):
        return f"fell back: {record['fallback_reason']}"
    return f"unchanged: {record.get('unchanged_reason') or 'no rewrite found a gain'}"


def _statistics_seconds(record: dict[str, Any]) -> float:
    inputs = sum(
        float(g.get("seconds") or 0) for g in (record.get("statistics_gathering") or {}).values() if isinstance(g, dict)
    )
    after = sum(float(c.get("gather_seconds") or 0) for c in (record.get("after_build_statistics") or {}).values())
    return inputs + after


def _model_section(name: str, record: dict[str, Any]) -> str:
    out = [f'<h2 id="{html.escape(name)}">{html.escape(name)}</h2><p>{html.escape(_outcome(record))}</p>']
    trees = record.get("join_trees") or {}
    written, chosen = trees.get("written") or {}, trees.get("chosen") or {}
    for block in list(written) + [b for b in chosen if b not in written]:
        figures = []
        if block in written:
            figures.append(("as written", written[block]))
        if block in chosen and chosen[block] != written.get(block):
            figures.append(("as rewritten" if block in written else "added by the rewrite", chosen[block]))
        out.append('<div class="trees">')
        for caption, tree in figures:
            out.append(f"<figure><figcaption>{html.escape(block)}, {caption}</figcaption>{tree_svg(tree)}</figure>")
        out.append("</div>")
    before, after = record.get("original_sql") or "", record.get("optimized_sql") or ""
    out.append("<h3>SQL dbt compiled</h3><pre>" + html.escape(before) + "</pre>")
    if record.get("changed"):
        from dbt.adapters.hiveopt.optimizer.dialect import formatted  # sqlglot, only for a rewrite

        out.append("<h3>SQL Spark ran, against it</h3>")
        out.append(
            difflib.HtmlDiff(wrapcolumn=90).make_table(
                formatted(before).splitlines(), formatted(after).splitlines(), "compiled (formatted)", "ran (formatted)"
            )
        )
    out.append('<h3>Decisions</h3><ul class="decisions">')
    for rule in record.get("rules") or []:
        for decision in rule.get("decisions") or []:
            kind = "fired" if decision.get("fired") else "skipped"
            out.append(
                f'<li class="{kind}"><b>{html.escape(rule["rule"])}</b> {kind}: {html.escape(decision["reason"])}</li>'
            )
    out.append("</ul>")
    return "".join(out)


def _q_error(record: dict[str, Any]) -> str:
    if record.get("worst_q_error") is not None:
        return f"{record['worst_q_error']:.2f}"
    status = str(record.get("actual_rows") or "")
    return html.escape("not available" if status.startswith("not available") else "-")


def _page(title: str, body: str, key: str = "") -> str:
    return (
        _DOCTYPE
        + (f"{_KEY_COMMENT}{key} -->" if key else "")
        + f'<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
        f"<style>{STYLE}</style></head><body>{body}</body></html>"
    )


def _page_key(name: str, record: dict[str, Any]) -> str:
    """What a model's page shows (_model_section: no timings), hashed. A page whose key has not
    changed is not written again: build after build the same SQL and decisions give the same page,
    and rewriting each one (truncating a file written a build ago) was file system work at the end
    of every invocation, on dbt's wall time (0.1 s of the 0.25 s this page writing took per
    warm build of the example project, py-spy, 2026-11-30)."""
    shown = [
        name,
        _outcome(record),
        record.get("join_trees"),
        record.get("original_sql"),
        record.get("optimized_sql") if record.get("changed") else None,
        [
            [rule.get("rule"), [[bool(d.get("fired")), d.get("reason")] for d in rule.get("decisions") or []]]
            for rule in record.get("rules") or []
        ],
    ]
    return hashlib.sha256(json.dumps(shown, sort_keys=True, default=str).encode()).hexdigest()[:20]


def _written_with(path: str) -> str | None:
    """The key of the page at `path` (a comment after its doctype), None when there is none."""
    try:
        with open(path) as handle:
            start = handle.read(len(_DOCTYPE) + len(_KEY_COMMENT) + 40)
    except OSError:
        return None
    head = _DOCTYPE + _KEY_COMMENT
    return start[len(head) :].split(" -->", 1)[0] if start.startswith(head) else None


_DOCTYPE, _KEY_COMMENT = "<!DOCTYPE html>", "<!-- hiveopt page "


def _file_name(name: str) -> str:
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in name) + ".html"


def write_index(folder: str, invocation_id: str | None) -> str | None:
    """Write folder/index.html (one row per model of `invocation_id`; all records when None) and a
    page per model, folder/<model>.html; returns the index's path."""
    if not os.path.isdir(folder):
        return None
    records: dict[str, dict[str, Any]] = {}
    for file in sorted(os.listdir(folder)):
        if not file.endswith(".json"):
            continue
        with open(os.path.join(folder, file)) as handle:
            record = json.load(handle)
        if invocation_id is None or record.get("invocation_id") == invocation_id:
            records[file[:-5]] = record
    rows = []
    for name, record in records.items():
        page = _file_name(name)
        key = _page_key(name, record)
        if _written_with(os.path.join(folder, page)) != key:
            body = '<p><a href="index.html">all models</a></p>' + _model_section(name, record)
            with open(os.path.join(folder, page), "w") as handle:
                handle.write(_page(f"hiveopt: {name}", body, key))
        rows.append(
            f'<tr><td><a href="{html.escape(page)}">{html.escape(name)}</a></td>'
            f"<td>{html.escape(str(record.get('materialization') or ''))}</td>"
            f"<td>{html.escape(_outcome(record))}</td>"
            f"<td>{html.escape(', '.join(record.get('fired_rules') or []) or '-')}</td>"
            f'<td class="num">{float(record.get("optimizer_ms") or 0):.1f}</td>'
            f'<td class="num">{_statistics_seconds(record):.2f}</td>'
            f"<td>{_q_error(record)}</td></tr>"
        )
    body = (
        "<h1>hiveopt: what the optimizer did</h1>"
        f"<p>dbt invocation {html.escape(invocation_id or 'all records')}: {len(records)} models and seeds. "
        "Worst q-error: of the join tree's estimates against the rows Spark counted when it built the model "
        "(max(estimated / actual, actual / estimated); 1.00 is exact).</p>"
        '<table class="models"><tr><th>model</th><th>materialized</th><th>outcome</th><th>rules fired</th>'
        "<th>optimizer ms</th><th>statistics s</th><th>worst q-error</th></tr>" + "".join(rows) + "</table>"
    )
    path = os.path.join(folder, "index.html")
    with open(path, "w") as handle:
        handle.write(_page("hiveopt report", body))
    return path
