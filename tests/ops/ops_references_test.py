#!/usr/bin/env python3
"""The Grafana dashboard and the Prometheus alert rules refer only to things that exist.

- every metric name in their PromQL is one belfry registers in src/ (BuildCounter/BuildGauge/
  BuildHistogram ... .Name("belfry_...")), a histogram's _bucket/_sum/_count of one, or
  Prometheus's own `up`;
- every label name they select, group or join by, or print in a legend, is a label belfry gives
  its series in src/, or job/instance (added by Prometheus) or le (histogram buckets);
- every dashboard query (with Grafana's variables filled in) parses as PromQL (`promtool check
  rules` on a generated rule file; the alert rules themselves are parsed by ops_alert_rules);
- the dashboard defines the datasource, job and instance variables, every panel reads the
  datasource variable, and every $variable its queries use is defined;
- every alert's runbook_url points at a heading of docs/operations.md.

Usage: ops_references_test.py --source-dir DIR --promtool PATH [--dashboard F] [--rules F]
Exit 0 when all hold; otherwise 1, one line per problem.
"""
import argparse
import json
import pathlib
import re
import subprocess
import sys
import tempfile

import yaml

# Labels Prometheus or the client library adds to every series of a target or a histogram.
IMPLICIT_LABELS = {"job", "instance", "le"}
# Metrics that Prometheus itself writes for every scrape target.
PROMETHEUS_METRICS = {"up"}
PROMQL_KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "and", "or", "unless",
                   "offset", "bool", "inf", "nan", "atan2"}


def exported_metrics(src):
    """Metric names belfry registers, with the series names each one exports."""
    names = {}
    for path in sorted(src.rglob("*.cc")):
        text = path.read_text()
        for kind, name in re.findall(r"Build(Counter|Gauge|Histogram|Summary|Info)\(\)\s*\.Name\(\"(\w+)\"\)", text):
            series = {name}
            if kind in ("Histogram", "Summary"):
                series |= {name + "_sum", name + "_count"}
            if kind == "Histogram":
                series.add(name + "_bucket")
            names[name] = series
    return names


def exported_labels(src):
    """Label names belfry puts on its series: the keys of the label maps passed to Family::Add and
    to the commands family's CommandCounter, in the files that register metrics."""
    labels = set()
    for path in sorted(src.rglob("*.cc")):
        text = path.read_text()
        if not re.search(r"Build(Counter|Gauge|Histogram|Summary|Info)\(\)", text):
            continue
        for body in re.findall(r"(?:\.Add|CommandCounter)\(\s*\{((?:\s*\{\"\w+\",[^{}]*\},?)*)\s*\}", text):
            labels |= set(re.findall(r"\{\"(\w+)\",", body))
    return labels


def strip_grafana_vars(expr):
    expr = expr.replace("$__rate_interval", "5m").replace("$__interval", "1m").replace("$__range", "1h")
    return re.sub(r"\$\{?\w+\}?", ".*", expr)


def references(expr):
    """(metric names, label names) an expression uses."""
    labels = set()
    e = strip_grafana_vars(expr)
    # Label matchers: {name="v", name=~"v", ...}. Strings first, so that braces inside them do not count.
    strings = []
    e = re.sub(r'"(?:[^"\\]|\\.)*"', lambda m: strings.append(m.group(0)) or '""', e)
    for body in re.findall(r"\{([^{}]*)\}", e):
        labels |= set(re.findall(r"([a-zA-Z_]\w*)\s*(?:=~|!~|!=|=)", body))
    e = re.sub(r"\{[^{}]*\}", " ", e)
    e = re.sub(r"\[[^\]]*\]", " ", e)
    for body in re.findall(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^()]*)\)", e):
        labels |= {x.strip() for x in body.split(",") if x.strip()}
    e = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)", " ", e)
    e = re.sub(r'""', " ", e)
    metrics = set()
    for m in re.finditer(r"[a-zA-Z_:][\w:]*", e):
        word = m.group(0)
        if word.lower() in PROMQL_KEYWORDS:
            continue
        if re.match(r"\s*\(", e[m.end():]):  # a function
            continue
        if re.fullmatch(r"\d+[smhdwy]|e\d+", word):
            continue
        metrics.add(word)
    return metrics, labels


def dashboard_queries(dashboard):
    """(where, expr, legend) for every panel target and every query variable."""
    out = []

    def walk(panels):
        for p in panels:
            for t in p.get("targets", []):
                if "expr" in t:
                    out.append((f"panel {p.get('title')!r} target {t.get('refId')}", t["expr"], t.get("legendFormat", "")))
            walk(p.get("panels", []))

    walk(dashboard.get("panels", []))
    for v in dashboard.get("templating", {}).get("list", []):
        if v.get("type") != "query":
            continue
        q = v.get("query")
        q = q.get("query", "") if isinstance(q, dict) else (q or "")
        m = re.fullmatch(r"\s*label_values\((.*),\s*(\w+)\s*\)\s*", q)
        if m:
            out.append((f"variable {v['name']!r}", m.group(1), "{{%s}}" % m.group(2)))
        else:
            out.append((f"variable {v['name']!r}", q, ""))
    return out


def rule_queries(rules):
    out = []
    for g in rules.get("groups", []):
        for r in g.get("rules", []):
            out.append((f"rule {r.get('alert') or r.get('record')!r}", r["expr"], r))
    return out


def anchors(markdown):
    """GitHub's heading anchors of a Markdown file."""
    result = set()
    for line in markdown.splitlines():
        m = re.match(r"#{1,6}\s+(.*)", line)
        if m:
            title = m.group(1).strip().lower()
            title = re.sub(r"[^\w\- ]", "", title)
            result.add(title.replace(" ", "-"))
    return result


def check_variables(dashboard):
    """Every $variable a query or a data source uses is defined; every panel reads the datasource
    variable (so that the dashboard works with any Prometheus), and the job and instance
    variables exist."""
    defined = {v.get("name") for v in dashboard.get("templating", {}).get("list", [])}
    problems = [f"no {n!r} variable" for n in ("datasource", "job", "instance") if n not in defined]

    def uses(text):
        return {m for m in re.findall(r"\$\{?(\w+)", text) if not m.startswith("__")}

    def walk(panels):
        for p in panels:
            for obj in [p] + p.get("targets", []):
                ds = obj.get("datasource")
                if ds is not None and (not isinstance(ds, dict) or ds.get("uid") != "${datasource}"):
                    problems.append(f"panel {p.get('title')!r}: data source {ds!r} is not ${{datasource}}")
            for t in p.get("targets", []):
                for v in sorted(uses(t.get("expr", "")) - defined):
                    problems.append(f"panel {p.get('title')!r} target {t.get('refId')}: undefined variable ${v}")
            walk(p.get("panels", []))

    walk(dashboard.get("panels", []))
    for v in dashboard.get("templating", {}).get("list", []):
        ds = v.get("datasource")
        if v.get("type") == "query" and (not isinstance(ds, dict) or ds.get("uid") != "${datasource}"):
            problems.append(f"variable {v.get('name')!r}: data source {ds!r} is not ${{datasource}}")
        q = v.get("query")
        q = q.get("query", "") if isinstance(q, dict) else (q or "")
        for u in sorted(uses(q) - defined):
            problems.append(f"variable {v.get('name')!r}: undefined variable ${u}")
    return problems


def check_promql_parses(promtool, queries):
    rules = {"groups": [{"name": "dashboard", "rules": [
        {"record": f"dashboard:query_{i}", "expr": strip_grafana_vars(expr)} for i, (_, expr, _) in enumerate(queries)]}]}
    with tempfile.NamedTemporaryFile("w", suffix=".yml", delete=False) as f:
        yaml.safe_dump(rules, f)
    try:
        run = subprocess.run([promtool, "check", "rules", f.name], capture_output=True, text=True)
    except FileNotFoundError:
        return [f"promtool {promtool!r} not found (Debian package prometheus; scripts/setup installs it)"]
    finally:
        pathlib.Path(f.name).unlink()
    if run.returncode == 0:
        return []
    problems = []
    text = run.stdout + run.stderr
    for i, (where, expr, _) in enumerate(queries):
        if f'"dashboard:query_{i}"' in text:
            problems.append(f"{where}: does not parse as PromQL: {expr}")
    return problems or [f"promtool check rules failed on the dashboard's queries: {text.strip()}"]


def reference_problems(file_name, where, expr, labels, known_series, known_labels):
    """The metrics `expr` reads, and what is wrong with them and with `labels` (the labels it and
    its legend use): no metric at all, a series belfry does not export, a label it does not set."""
    metrics, expr_labels = references(expr)
    labels = labels | expr_labels
    problems = []
    if not metrics:
        problems.append(f"{file_name}: {where}: no metric in {expr!r}")
    for m in sorted(metrics - known_series):
        problems.append(f"{file_name}: {where}: unknown metric {m!r} (belfry exports no such series)")
    for lab in sorted(labels - known_labels):
        problems.append(f"{file_name}: {where}: unknown label {lab!r}")
    return metrics, problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source-dir", required=True, type=pathlib.Path)
    ap.add_argument("--promtool", required=True)
    ap.add_argument("--dashboard", type=pathlib.Path)
    ap.add_argument("--rules", type=pathlib.Path)
    args = ap.parse_args()
    root = args.source_dir
    dashboard_path = args.dashboard or root / "deploy/grafana/belfry.json"
    rules_path = args.rules or root / "deploy/prometheus/belfry-alerts.yml"

    families = exported_metrics(root / "src")
    if len(families) < 10:
        print(f"FAIL: found only {len(families)} metric registrations in src/; the pattern no longer matches the code")
        return 1
    known_series = set().union(*families.values()) | PROMETHEUS_METRICS
    known_labels = exported_labels(root / "src") | IMPLICIT_LABELS
    problems = []
    used = set()

    dashboard = json.loads(dashboard_path.read_text())
    queries = dashboard_queries(dashboard)
    if not queries:
        problems.append(f"{dashboard_path}: no queries found")
    for where, expr, legend in queries:
        legend_labels = set(re.findall(r"\{\{\s*(\w+)\s*\}\}", legend))
        metrics, found = reference_problems(dashboard_path.name, where, expr, legend_labels, known_series, known_labels)
        problems += found
        used |= metrics
    problems += [f"{dashboard_path.name}: {p}" for p in check_promql_parses(args.promtool, queries)]
    problems += [f"{dashboard_path.name}: {p}" for p in check_variables(dashboard)]

    rules = yaml.safe_load(rules_path.read_text())
    docs = root / "docs/operations.md"
    doc_anchors = anchors(docs.read_text())
    rq = rule_queries(rules)
    if not rq:
        problems.append(f"{rules_path}: no rules found")
    for where, expr, rule in rq:
        metrics, found = reference_problems(rules_path.name, where, expr, set(), known_series, known_labels)
        problems += found
        url = rule.get("annotations", {}).get("runbook_url", "")
        m = re.fullmatch(r"docs/operations\.md#([\w-]+)", url)
        if not m:
            problems.append(f"{rules_path.name}: {where}: runbook_url {url!r} is not docs/operations.md#<anchor>")
        elif m.group(1) not in doc_anchors:
            problems.append(f"{rules_path.name}: {where}: runbook_url {url!r}: docs/operations.md has no such heading")
        used |= metrics

    for p in problems:
        print("FAIL:", p)
    print(f"{len(families)} metric families exported by src/; {len(queries)} dashboard queries and {len(rq)} rules "
          f"use {len(used)} series names; {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
