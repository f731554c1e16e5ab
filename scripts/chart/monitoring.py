"""The chart's monitoring objects: the Grafana dashboard and the PrometheusRule.

Every PromQL expression (each alert's `expr`, each dashboard query and the
series selector of each `label_values` variable) must parse with a real PromQL
parser (promql-parser) and may only name series hawser exposes (METRICS, with
the labels each carries) or HAProxy's own exporter (`haproxy_*`). Each alert
needs a severity, a summary, a description and a runbook_url whose anchor is a
heading of docs/operations.md (GitHub's anchor rules).
"""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Any

import promql_parser

from manifests import ROOT, R, find

OPERATIONS = ROOT / "docs" / "operations.md"

# The series hawser exposes and the labels each carries itself (not counting
# the target's: job, namespace, pod...). Counters end in _total; a histogram
# also answers to _bucket (with le), _sum and _count.
_ROUTE = {"namespace", "kind", "name"}
_SERVICE = {"namespace", "service", "port"}
CONTROLLER_METRICS: dict[str, set[str]] = {
    "hawser_renders_total": set(),
    "hawser_render_duration_seconds": set(),
    "hawser_rejected_objects": set(),
    "hawser_quarantined_objects": set(),
    "hawser_spare_backends": {"state"},
    "hawser_agents": set(),
    "hawser_agents_converged": set(),
    "hawser_pushes_total": set(),
    "hawser_push_duration_seconds": set(),
    "hawser_failed_pushes_total": set(),
    "hawser_push_bytes_total": set(),
    "hawser_leader": set(),
    "hawser_leader_epoch": set(),
    "hawser_certificate_expiry_seconds": set(),
    "hawser_sandbox_enforced": set(),
    "hawser_sandbox_landlock_abi": set(),
    "hawser_served_certificate_expiry_seconds": {"namespace", "secret"},
}
AGENT_METRICS: dict[str, set[str]] = {
    "hawser_applies_total": {"kind"},
    "hawser_apply_duration_seconds": set(),
    "hawser_reloads_total": set(),
    "hawser_failed_reloads_total": set(),
    "hawser_failed_stages_total": {"reason"},
    "hawser_runtime_operations_total": set(),
    "hawser_drift_repairs_total": set(),
    "hawser_haproxy_restarts_total": set(),
    "hawser_applied_generation": set(),
    "hawser_ready": set(),
    "hawser_certificate_expiry_seconds": set(),
    "hawser_sandbox_enforced": set(),
    "hawser_sandbox_landlock_abi": set(),
    "hawser_rollbacks_total": set(),
    "hawser_haproxy_old_workers": set(),
    "hawser_service_requests_total": _SERVICE,
    "hawser_service_responses_total": _SERVICE | {"code"},
    "hawser_service_bytes_in_total": _SERVICE,
    "hawser_service_bytes_out_total": _SERVICE,
    "hawser_service_connection_errors_total": _SERVICE,
    "hawser_service_response_errors_total": _SERVICE,
    "hawser_service_queue_current": _SERVICE,
    "hawser_service_servers": _SERVICE | {"state"},
    "hawser_service_queue_time_seconds": _SERVICE,
    "hawser_service_connect_time_seconds": _SERVICE,
    "hawser_service_response_time_seconds": _SERVICE,
    "hawser_service_total_time_seconds": _SERVICE,
    "hawser_route_requests_total": _ROUTE,
    "hawser_route_responses_total": _ROUTE | {"code"},
}
HISTOGRAMS = {"hawser_render_duration_seconds", "hawser_push_duration_seconds", "hawser_apply_duration_seconds"}
# What the Prometheus Operator adds to every scraped series.
TARGET_LABELS = {"job", "namespace", "pod", "instance", "container", "endpoint", "service"}
SEVERITIES = {"critical", "warning", "info"}
# Where the alerts use metrics.prometheusRule.thresholds: alert -> [(threshold, text of the expr)].
THRESHOLDS = {
    "HawserRoute5xxRatio": [("routeErrorRatio", ") > {}"), ("routeMinRequestRate", ">= {}")],
    "HawserServedCertificateExpiring": [("servedCertificateWarningDays", "< {} * 86400")],
    "HawserServedCertificateExpiringCritical": [("servedCertificateCriticalDays", "< {} * 86400")],
    "HawserIdentityCertificateExpiring": [("identityCertificateWarningDays", "< {} * 86400")],
    "HawserOldWorkersPilingUp": [("oldWorkers", "> {}")],
}
# Alerts whose `for` is a value.
DURATIONS = {"HawserOldWorkersPilingUp": "oldWorkersFor", "HawserAgentsNotConverged": "notConvergedFor"}


def metric_labels() -> dict[str, set[str]]:
    """Every series name a query may use, with the labels it may be matched on."""
    known: dict[str, set[str]] = {}
    for name, labels in list(CONTROLLER_METRICS.items()) + list(AGENT_METRICS.items()):
        known.setdefault(name, set()).update(labels)
    for name in HISTOGRAMS:
        known[f"{name}_bucket"] = known[name] | {"le"}
        known[f"{name}_sum"] = known[name]
        known[f"{name}_count"] = known[name]
        del known[name]
    return known


KNOWN = metric_labels()


def selectors(expr: Any) -> list[Any]:
    found: list[Any] = []

    def visit(node: Any) -> None:
        if isinstance(node, promql_parser.VectorSelector):
            found.append(node)

    promql_parser.walk(expr, visit)
    return found


def check_promql(text: str, what: str) -> bool:
    """Parses `text`; every series it selects must be hawser's or HAProxy's, matched on labels it has."""
    try:
        expr = promql_parser.parse(text)
    except ValueError as e:
        return R.check(False, f"{what} parses as PromQL", f"{e}: {text}")
    R.check(True, f"{what} parses as PromQL")
    ok = True
    for sel in selectors(expr):
        matchers = sel.matchers.matchers
        name = sel.name or next((m.value for m in matchers if m.name == "__name__"
                                 and m.op == promql_parser.MatchOp.Equal), None)
        if name is None:
            ok &= R.check(False, f"{what} names each series it selects", str(sel))
            continue
        if name.startswith("haproxy_"):
            continue
        ok &= R.check(name in KNOWN, f"{what}: {name} is a series hawser exposes", text)
        unknown = sorted(m.name for m in matchers if m.name != "__name__"
                         and m.name not in KNOWN.get(name, set()) | TARGET_LABELS)
        ok &= R.check(not unknown, f"{what}: {name} is matched on labels it has", ", ".join(unknown))
    return ok


def github_anchors(markdown: str) -> set[str]:
    """The anchors GitHub gives the headings of a Markdown file."""
    anchors: set[str] = set()
    seen: dict[str, int] = {}
    fence = None
    for line in markdown.splitlines():
        stripped = line.lstrip()
        marker = re.match(r"(`{3,}|~{3,})", stripped)
        if marker:
            if fence is None:
                fence = marker.group(1)[0] * len(marker.group(1))
            elif stripped.startswith(fence):
                fence = None
            continue
        if fence is not None:
            continue
        heading = re.match(r"^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not heading:
            continue
        text = heading.group(1)
        text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)  # links and images keep their text
        text = re.sub(r"<[^>]+>", "", text)  # inline HTML
        slug = "".join(c for c in text.lower()
                       if c in " -_" or unicodedata.category(c)[0] in ("L", "N"))
        slug = slug.replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        anchors.add(slug if count == 0 else f"{slug}-{count}")
    return anchors


def check_github_anchors() -> None:
    """The anchor rules themselves, on headings whose GitHub anchors are known."""
    sample = ("# Operating hawser\n## Probes, and what they mean\n```sh\n# not a heading\n```\n"
              "### Pods stay in `ContainerCreating`\n## Metrics\n## Metrics\n### HawserNoLeader\n"
              "## [The sandbox](security.md) ##\n")
    want = {"operating-hawser", "probes-and-what-they-mean", "pods-stay-in-containercreating", "metrics",
            "metrics-1", "hawsernoleader", "the-sandbox"}
    got = github_anchors(sample)
    R.check(got == want, "GitHub's heading anchors are computed as GitHub does", f"{sorted(got ^ want)}")


def check_rules(objs: list[dict], values: dict, namespace: str) -> None:
    pr = values["metrics"]["prometheusRule"]
    rules_objs = find(objs, "PrometheusRule")
    R.check(len(rules_objs) == (1 if pr["enabled"] else 0),
            f"a PrometheusRule {'exists' if pr['enabled'] else 'is absent'}", f"found {len(rules_objs)}")
    if not rules_objs:
        return
    obj = rules_objs[0]
    R.check(obj["apiVersion"] == "monitoring.coreos.com/v1", "the PrometheusRule is monitoring.coreos.com/v1")
    R.check(obj["metadata"]["namespace"] == (pr["namespace"] or namespace),
            "the PrometheusRule is in metrics.prometheusRule.namespace (or the release's)")
    labels = obj["metadata"].get("labels") or {}
    R.check(pr["labels"].items() <= labels.items(), "the PrometheusRule carries metrics.prometheusRule.labels")
    anchors = github_anchors(OPERATIONS.read_text())
    base = pr["runbookBaseUrl"].rstrip("/")
    names: list[str] = []
    for group in obj["spec"]["groups"]:
        R.check(bool(group.get("name")) and bool(group.get("rules")), f"rule group {group.get('name')} has rules")
        for rule in group["rules"]:
            alert = rule.get("alert", "")
            what = f"alert {alert}"
            names.append(alert)
            R.check(bool(re.fullmatch(r"Hawser[A-Z][A-Za-z0-9]*", alert)), f"{what} is named Hawser<CamelCase>")
            R.check(set(rule) <= {"alert", "expr", "for", "labels", "annotations", "keep_firing_for"},
                    f"{what} has only the fields of an alerting rule", str(sorted(rule)))
            check_promql(rule.get("expr", ""), what)
            if "for" in rule:
                try:
                    promql_parser.parse_duration(rule["for"])
                    R.check(True, f"{what}: `for` is a duration")
                except ValueError as e:
                    R.check(False, f"{what}: `for` is a duration", f"{rule['for']}: {e}")
            for threshold, form in THRESHOLDS.get(alert, []):
                text = form.format(pr["thresholds"][threshold])
                R.check(text in rule.get("expr", ""), f"{what} uses thresholds.{threshold} ({text})")
            if alert in DURATIONS:
                R.check(rule.get("for") == pr[DURATIONS[alert]], f"{what} waits {DURATIONS[alert]}")
            rule_labels = rule.get("labels") or {}
            R.check(rule_labels.get("severity") in SEVERITIES, f"{what} has a severity label",
                    str(rule_labels.get("severity")))
            R.check(pr["alertLabels"].items() <= rule_labels.items(),
                    f"{what} carries metrics.prometheusRule.alertLabels")
            notes = rule.get("annotations") or {}
            R.check(bool(notes.get("summary")) and bool(notes.get("description")),
                    f"{what} has a summary and a description")
            R.check(notes.get("description", "").count("{{") == notes.get("description", "").count("}}"),
                    f"{what}'s description has balanced template braces")
            url = notes.get("runbook_url", "")
            anchor = url[len(base) + 1:] if url.startswith(base + "#") else ""
            R.check(bool(anchor), f"{what}'s runbook_url is metrics.prometheusRule.runbookBaseUrl#<anchor>", url)
            R.check(anchor in anchors, f"{what}'s runbook anchor #{anchor} is a heading of docs/operations.md")
    R.check(set(THRESHOLDS) | set(DURATIONS) <= set(names), "the alerts the thresholds are for exist")
    R.check(len(names) == len(set(names)), "alert names are unique",
            ", ".join(sorted({n for n in names if names.count(n) > 1})))


def check_dashboard(objs: list[dict], values: dict, namespace: str) -> None:
    db = values["metrics"]["dashboard"]
    maps = find(objs, "ConfigMap")
    R.check(len(maps) == (1 if db["enabled"] else 0),
            f"the dashboard ConfigMap {'exists' if db['enabled'] else 'is absent'}", f"found {len(maps)}")
    if not maps:
        return
    cm = maps[0]
    labels = cm["metadata"].get("labels") or {}
    R.check(labels.get(db["label"]) == db["labelValue"],
            f"the dashboard ConfigMap carries Grafana's sidecar label {db['label']}={db['labelValue']!r}")
    R.check(db["labels"].items() <= labels.items(), "the dashboard ConfigMap carries metrics.dashboard.labels")
    R.check(db["annotations"].items() <= (cm["metadata"].get("annotations") or {}).items(),
            "the dashboard ConfigMap carries metrics.dashboard.annotations")
    R.check(cm["metadata"]["namespace"] == (db["namespace"] or namespace),
            "the dashboard ConfigMap is in metrics.dashboard.namespace (or the release's)")
    files = sorted((cm.get("data") or {}).keys())
    R.check(files == ["hawser.json"], "the dashboard ConfigMap holds hawser.json only", str(files))
    try:
        dash = json.loads(cm["data"]["hawser.json"])
    except (KeyError, json.JSONDecodeError) as e:
        R.check(False, "the dashboard is JSON", str(e))
        return
    R.check(True, "the dashboard is JSON")
    check_dashboard_json(dash)


# Grafana's own variables, and a value each may take in a query.
BUILTIN_VARIABLES = {"__rate_interval": "5m", "__interval": "1m", "__range": "1h", "__range_s": "3600",
                     "__interval_ms": "60000", "__range_ms": "3600000"}
VARIABLE = re.compile(r"\$(?:\{(\w+)(?::\w+)?\}|(\w+))|\[\[(\w+)\]\]")


def check_dashboard_json(dash: dict) -> None:
    R.check(bool(dash.get("uid")) and bool(dash.get("title")), "the dashboard has a uid and a title")
    R.check(isinstance(dash.get("schemaVersion"), int) and dash["schemaVersion"] >= 36,
            "the dashboard has a recent schemaVersion (36 or later)", str(dash.get("schemaVersion")))
    variables = {v["name"]: v for v in (dash.get("templating") or {}).get("list", [])}
    ds = variables.get("datasource", {})
    R.check(ds.get("type") == "datasource" and ds.get("query") == "prometheus",
            "the dashboard's data source is a variable ($datasource) of Prometheus data sources")
    samples = dict(BUILTIN_VARIABLES)
    for name, var in variables.items():
        samples[name] = str((var.get("current") or {}).get("value") or "sample") if var["type"] == "textbox" \
            else "hawser-system"

    def substitute(text: str, what: str) -> str:
        names = {a or b or c for a, b, c in VARIABLE.findall(text)}
        unknown = sorted(names - samples.keys())
        R.check(not unknown, f"{what} uses only the dashboard's variables", ", ".join(unknown))
        return VARIABLE.sub(lambda m: samples.get(m.group(1) or m.group(2) or m.group(3), "x"), text)

    for name, var in variables.items():
        if var["type"] != "query":
            continue
        query = var["query"]["query"] if isinstance(var["query"], dict) else var["query"]
        call = re.fullmatch(r"\s*label_values\((.*),\s*(\w+)\)\s*", query, re.S)
        R.check(bool(call), f"variable ${name} is label_values(<series>, <label>)", query)
        if call:
            check_promql(substitute(call.group(1), f"variable ${name}"), f"variable ${name}")
        R.check((var.get("datasource") or {}).get("uid") == "${datasource}", f"variable ${name} queries $datasource")

    def all_panels(panels: list[dict]) -> list[dict]:
        out = []
        for p in panels:
            out.append(p)
            out.extend(all_panels(p.get("panels") or []))
        return out

    panels = all_panels(dash.get("panels") or [])
    graphs = [p for p in panels if p.get("type") != "row"]
    R.check(len(graphs) >= 10, "the dashboard has panels", f"{len(graphs)} panels")
    ids = [p.get("id") for p in panels]
    R.check(len(ids) == len(set(ids)) and None not in ids, "panel ids are set and unique")
    cells: dict[tuple[int, int], str] = {}
    overlaps = set()
    for p in panels:
        g = p.get("gridPos") or {}
        for x in range(g.get("x", 0), g.get("x", 0) + g.get("w", 0)):
            for y in range(g.get("y", 0), g.get("y", 0) + g.get("h", 0)):
                if (x, y) in cells:
                    overlaps.add(f"{cells[(x, y)]!r} and {p.get('title')!r}")
                cells[(x, y)] = p.get("title", "")
    R.check(not overlaps, "no two panels overlap", "; ".join(sorted(overlaps)))
    queries = 0
    for p in graphs:
        what = f"panel {p.get('title')!r}"
        g = p.get("gridPos") or {}
        R.check(g.get("w", 0) > 0 and g.get("x", -1) >= 0 and g["x"] + g["w"] <= 24, f"{what} fits the 24-column grid")
        R.check((p.get("datasource") or {}).get("uid") == "${datasource}", f"{what} queries $datasource")
        targets = p.get("targets") or []
        R.check(bool(targets) and all(t.get("expr") for t in targets), f"{what} has queries")
        for t in targets:
            queries += 1
            check_promql(substitute(t.get("expr", ""), what), f"{what} query {t.get('refId')}")
    R.check(queries >= len(graphs), f"the dashboard's {len(graphs)} panels hold {queries} queries")


def check_monitoring(objs: list[dict], values: dict, namespace: str) -> None:
    check_dashboard(objs, values, namespace)
    check_rules(objs, values, namespace)
