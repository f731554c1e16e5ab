#!/usr/bin/env python3
"""Checks the Helm chart in charts/hawser, offline.

For each value set in CASES: `helm lint` must report no warning or error, the
chart must render, every rendered object must pass the Kubernetes OpenAPI
schemas (strict: unknown fields are errors) of the oldest Kubernetes the chart
supports and of a recent one, and the chart's promises must hold (see the
functions in promises.py). A few value sets must be refused with a clear message.

Run through scripts/test-chart.sh, which provides the three libraries:
helm-python-sdk (Helm v4's own chart engine, through its C library: render and
lint need no cluster and no network), kubernetes-validate (the Kubernetes
OpenAPI schemas of many versions, bundled) and promql-parser (a PromQL parser,
for the alerts and the dashboard's queries: see monitoring.py).
"""

from __future__ import annotations

import re
import sys
import time
from typing import Any, Callable

import helm_python as helm
import jsonschema
import kubernetes_validate
import yaml

from manifests import (
    CHART, NAMESPACE, ROOT, R, argv, deep_merge, find, group_of, objects_of, pod_spec, render,
)
from monitoring import check_github_anchors, check_monitoring
from promises import (
    check_certificates, check_config_objects, check_controller, check_gateway_class, check_everywhere, check_haproxy, check_options,
    check_webhook, stop_numbers,
)

CHART_CRDS = CHART / "crds"
DEPLOY_CRDS = ROOT / "deploy" / "crds"

# The oldest Kubernetes the chart supports (Chart.yaml kubeVersion) and a recent one.
KUBE_VERSIONS = ["1.30", "1.34"]

# Objects kubernetes-validate cannot know: it bundles only the built-in
# Kubernetes API. They are skipped there, explicitly, and checked otherwise:
SKIPPED_GROUPS = {
    # our own CRD: checked below against the CRD's openAPIV3Schema
    "hawser.dev": "checked against the HawserConfig CRD's schema",
    # cert-manager's CRDs (Issuer, Certificate): shape checked by check_cert_manager
    "cert-manager.io": "cert-manager CRD, not bundled",
    # the Prometheus Operator's CRDs (ServiceMonitor, PrometheusRule): shape
    # checked by check_options and check_monitoring, every expression parsed
    "monitoring.coreos.com": "Prometheus Operator CRD, not bundled",
    # the Gateway API's GatewayClass: shape checked by check_gateway_class
    "gateway.networking.k8s.io": "Gateway API CRD, not bundled",
}

# name -> (values, what the case is about)
CASES: dict[str, tuple[dict[str, Any], str]] = {
    "default": ({}, "bootstrap certificates, Deployment"),
    "cert-manager": ({"certificates": {"mode": "cert-manager"}}, "cert-manager certificates and webhook"),
    "external": ({"certificates": {"mode": "external"}}, "identities you provide"),
    "daemonset-hostnetwork": (
        {"haproxy": {"kind": "DaemonSet", "hostNetwork": True, "ports": {"http": 80, "https": 443}}},
        "DaemonSet on the node's network, ports 80/443",
    ),
    "options": (
        {
            "certificates": {"mode": "external"},
            "webhook": {"enabled": True, "caBundle": "Q0E=", "tlsSecret": "hawser-webhook-tls",
                        "failurePolicy": "Fail"},
            "metrics": {"serviceMonitor": {"enabled": True, "labels": {"release": "prometheus"}}},
            "controller": {"replicas": 1, "extraArgs": ["--verbose"]},
            "haproxy": {"replicas": 3, "service": {"type": "NodePort", "externalTrafficPolicy": "Local",
                                                   "nodePorts": {"http": 30080}}},
            "hawserConfig": {"settings": {"timeouts": {"server": "2m"}},
                             "templates": {"snippets": {"global-tuning": "tune.bufsize 32768\n"}}},
            "ingressClass": {"default": True},
            "gatewayClass": {"create": True, "name": "edge"},
            "image": {"tag": "9.9.9"},
        },
        "webhook with your own certificate, ServiceMonitors, NodePort, one controller",
    ),
    "monitoring": (
        {
            "metrics": {
                "serviceMonitor": {"enabled": True, "haproxyExporter": True, "labels": {"release": "prometheus"}},
                "dashboard": {"enabled": True, "namespace": "grafana", "label": "grafana.example.com/dashboard",
                              "labelValue": "hawser", "labels": {"team": "edge"},
                              "annotations": {"grafana_folder": "Ingress"}},
                "prometheusRule": {"enabled": True, "labels": {"release": "prometheus"},
                                   "alertLabels": {"team": "edge"},
                                   "runbookBaseUrl": "https://docs.example.com/hawser/operations.md/",
                                   "thresholds": {"routeErrorRatio": 0.2, "oldWorkers": 5},
                                   "oldWorkersFor": "1h"},
            },
        },
        "ServiceMonitors with HAProxy's exporter, the Grafana dashboard and the alerts, all options set",
    ),
    "long-drain": (
        {"haproxy": {"terminationGracePeriodSeconds": 330, "preStopSleepSeconds": 25}},
        "a long grace period: the hook's wait and drain follow it",
    ),
}

# More value sets: lint, render, Kubernetes schemas, the promises every case
# keeps, and the check given. name -> (values, what, check(objects)).
def _workload(objs: list[dict]) -> dict:
    return [o for o in objs if o["kind"] in ("Deployment", "DaemonSet") and o["metadata"]["name"] == "hawser-haproxy"][0]


VARIANTS: dict[str, tuple[dict[str, Any], str, Callable[[list[dict]], bool]]] = {
    "cert-manager-own-issuer": (
        {"certificates": {"mode": "cert-manager",
                          "certManager": {"issuerRef": {"name": "corp-ca", "kind": "ClusterIssuer",
                                                        "group": "cert-manager.io"}}}},
        "cert-manager with your issuer: no Issuer created, every Certificate signed by it",
        lambda objs: not find(objs, "Issuer") and len(find(objs, "Certificate")) == 3
        and all(c["spec"]["issuerRef"]["name"] == "corp-ca" for c in find(objs, "Certificate")),
    ),
    "deployment-hostnetwork": (
        {"haproxy": {"hostNetwork": True}},
        "a Deployment on the node's network never surges a second pod onto a node",
        lambda objs: _workload(objs)["spec"]["strategy"]["rollingUpdate"] == {"maxSurge": 0, "maxUnavailable": 1}
        and _workload(objs)["spec"]["template"]["spec"]["dnsPolicy"] == "ClusterFirstWithHostNet",
    ),
    "tuned": (
        {
            "haproxy": {"stateVolume": {"medium": "Memory"}, "podDisruptionBudget": {"enabled": False},
                        "updateStrategy": {"type": "Recreate"}, "nodeSelector": {"role": "edge"},
                        "tolerations": [{"key": "edge", "operator": "Exists", "effect": "NoSchedule"}],
                        "extraEnv": [{"name": "TZ", "value": "UTC"}], "preStopSleepSeconds": 0,
                        "podAnnotations": {"example.com/a": "b"}},
            "controller": {"podDisruptionBudget": {"enabled": False}, "publishService": {"enabled": False}},
            "commonLabels": {"team": "edge"},
            "image": {"digest": "sha256:" + "0" * 64},
            "ingressClass": {"create": False},
            "hawserConfig": {"create": False, "name": "edge"},
        },
        "options off and on: no PDBs, no IngressClass/HawserConfig, Recreate, a digest",
        lambda objs: not find(objs, "PodDisruptionBudget") and not find(objs, "IngressClass")
        and not find(objs, "HawserConfig")
        and _workload(objs)["spec"]["strategy"] == {"type": "Recreate"}
        and _workload(objs)["spec"]["template"]["spec"]["volumes"][0]["emptyDir"]["medium"] == "Memory"
        and stop_numbers(_workload(objs)["spec"]["template"]["spec"]["containers"][0])["wait-before"] == 0
        and all(o["metadata"]["labels"].get("team") == "edge" for o in objs)
        and "--publish-service" not in argv(find(objs, "Deployment", "hawser-controller")[0]["spec"]["template"]
                                              ["spec"]["containers"][0])
        and "edge" in argv(find(objs, "Deployment", "hawser-controller")[0]["spec"]["template"]["spec"]
                           ["containers"][0])
        and all(c["image"].endswith("@sha256:" + "0" * 64) for o in objs if pod_spec(o)
                for c in pod_spec(o)["containers"]),
    ),
}

# Value sets the chart must refuse: name -> (values, text the error must contain).
REFUSED: dict[str, tuple[dict[str, Any], str]] = {
    "webhook without its certificate": (
        {"webhook": {"enabled": True}}, "webhook.caBundle"),
    "unknown certificates.mode": (
        {"certificates": {"mode": "self-signed"}}, "mode"),
    "unknown haproxy.kind": (
        {"haproxy": {"kind": "StatefulSet"}}, "kind"),
    "misspelt value": (
        {"haproxy": {"replica": 3}}, "replica"),
    "one name for both roles": (
        {"certificates": {"agentName": "x", "controllerName": "x"}}, "must differ"),
    "a grace period shorter than preStop and a drain": (
        {"haproxy": {"terminationGracePeriodSeconds": 15, "preStopSleepSeconds": 10}},
        "haproxy.terminationGracePeriodSeconds (15) must cover haproxy.preStopSleepSeconds (10)"),
    "a grace period below the least drain": (
        {"haproxy": {"terminationGracePeriodSeconds": 5, "preStopSleepSeconds": 0}},
        "terminationGracePeriodSeconds"),
}


def check_schemas(objs: list[dict], crd_schema: dict) -> None:
    """Every object against the Kubernetes OpenAPI schemas (strict)."""
    skipped: dict[str, int] = {}
    for obj in objs:
        clean = {k: v for k, v in obj.items() if k != "__source"}
        group = group_of(obj["apiVersion"])
        what = f"{obj['kind']} {obj['metadata']['name']}"
        if group in SKIPPED_GROUPS:
            skipped[group] = skipped.get(group, 0) + 1
            if group == "hawser.dev":
                errors = sorted(jsonschema.Draft7Validator(crd_schema).iter_errors(clean), key=str)
                R.check(not errors, f"{what} matches the CRD schema",
                        "; ".join(e.message for e in errors[:3]))
            continue
        for version in KUBE_VERSIONS:
            try:
                kubernetes_validate.validate(clean, version, strict=True)
                R.check(True, f"{what} valid for Kubernetes {version}")
            except kubernetes_validate.ValidationError as e:
                path = "/".join(str(p) for p in e.caught.absolute_path)
                R.check(False, f"{what} valid for Kubernetes {version}", f"{path}: {e.caught.message}")
            except kubernetes_validate.SchemaNotFoundError as e:
                R.check(False, f"{what} has a Kubernetes {version} schema", e.message)
    if skipped:
        print("    schema check skipped (not in the bundled Kubernetes API): "
              + ", ".join(f"{n} {g} object(s) ({SKIPPED_GROUPS[g]})" for g, n in sorted(skipped.items())))


# Defaults the design fixes (DESIGN.md section 7 and the CLI contract): values.yaml must keep them.
CONTRACT_DEFAULTS = {
    "image.repository": "ghcr.io/hawser-dev/hawser",
    "image.tag": "",
    "logFormat": "json",
    "controller.replicas": 2,
    "controller.adminPort": 9181,
    "haproxy.kind": "Deployment",
    "haproxy.replicas": 2,
    "haproxy.hostNetwork": False,
    "haproxy.ports.http": 8080,
    "haproxy.ports.https": 8443,
    "haproxy.ports.health": 8404,
    "haproxy.service.type": "LoadBalancer",
    "haproxy.service.ports.http": 80,
    "haproxy.service.ports.https": 443,
    "agent.port": 7443,
    "agent.adminPort": 9182,
    "certificates.mode": "bootstrap",
    "certificates.agentName": "hawser-agent",
    "certificates.controllerName": "hawser-controller",
    "certificates.secrets.agentIdentity": "hawser-agent-identity",
    "certificates.secrets.controllerIdentity": "hawser-controller-identity",
    "certificates.secrets.issuer": "hawser-agent-issuer",
    "hawserConfig.name": "hawser",
    "ingressClass.name": "hawser",
    "ingressClass.controller": "hawser.dev/ingress-controller",
    "ingressClass.default": False,
    "gatewayClass.create": False,
    "gatewayClass.controllerName": "hawser.dev/gateway-controller",
    "webhook.port": 9443,
    "webhook.failurePolicy": "Ignore",
    "webhook.timeoutSeconds": 5,
    "metrics.serviceMonitor.enabled": False,
    "metrics.serviceMonitor.haproxyExporter": False,
    "metrics.dashboard.enabled": False,
    "metrics.dashboard.label": "grafana_dashboard",
    "metrics.dashboard.labelValue": "1",
    "metrics.prometheusRule.enabled": False,
}


def check_defaults(defaults: dict) -> None:
    R.begin("defaults")
    for dotted, want in CONTRACT_DEFAULTS.items():
        node: Any = defaults
        for part in dotted.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        R.check(node == want, f"values.yaml: {dotted} defaults to {want!r}", f"it is {node!r}")
    R.check("enabled" not in defaults["webhook"], "values.yaml: webhook.enabled is unset (follows the mode)")
    R.summary(f"{R.case_checks} contract defaults in values.yaml")


def check_refused() -> None:
    R.begin("refused")
    for what, (values, needle) in REFUSED.items():
        try:
            render(values)
            R.check(False, f"refuses {what}", "rendered without error")
        except helm.HelmError as e:
            text = str(e)
            R.check(needle in text, f"refuses {what} with a message naming {needle!r}", text[-300:])
    R.summary(f"{len(REFUSED)} value sets refused with a clear message")


def check_crds() -> dict:
    """The chart's CRD copies; returns the HawserConfig openAPIV3Schema."""
    R.begin("crds")
    chart_crd = CHART_CRDS / "hawserconfigs.hawser.dev.yaml"
    R.check(chart_crd.is_file(), f"{chart_crd.relative_to(ROOT)} exists")
    if DEPLOY_CRDS.is_dir():
        for src in sorted(DEPLOY_CRDS.glob("*.yaml")):
            copy_ = CHART_CRDS / src.name
            R.check(copy_.is_file() and copy_.read_bytes() == src.read_bytes(),
                    f"{copy_.relative_to(ROOT)} is an exact copy of {src.relative_to(ROOT)}",
                    f"run: cp {src.relative_to(ROOT)} {copy_.relative_to(ROOT)}")
    else:
        print(f"    note: {DEPLOY_CRDS.relative_to(ROOT)}/ does not exist yet; the chart holds a placeholder CRD")
    schema: dict = {}
    for path in sorted(CHART_CRDS.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if not doc:
                continue
            for version in KUBE_VERSIONS:
                try:
                    kubernetes_validate.validate(doc, version, strict=True)
                    R.check(True, f"{path.name} valid for Kubernetes {version}")
                except kubernetes_validate.ValidationError as e:
                    R.check(False, f"{path.name} valid for Kubernetes {version}", e.caught.message)
            if doc["metadata"]["name"] == "hawserconfigs.hawser.dev":
                spec = doc["spec"]
                R.check(spec["group"] == "hawser.dev" and spec["names"]["kind"] == "HawserConfig",
                        "the CRD defines hawser.dev HawserConfig")
                versions = {v["name"]: v for v in spec["versions"]}
                R.check("v1alpha1" in versions and versions["v1alpha1"].get("served"), "v1alpha1 is served")
                schema = versions.get("v1alpha1", {}).get("schema", {}).get("openAPIV3Schema", {})
    R.check(bool(schema), "the HawserConfig CRD has an openAPIV3Schema")
    R.summary(f"{R.case_checks} checks")
    return schema


def check_sources() -> None:
    """What rendering cannot show: branches not taken by any case."""
    R.begin("sources")
    for path in sorted((CHART / "templates").rglob("*")):
        if path.is_file():
            text = path.read_text()
            R.check(not re.search(r"^\s*-?\s*subPath(Expr)?\s*:", text, re.M),
                    f"{path.relative_to(ROOT)} declares no subPath")
            R.check(not re.search(r"^\s*-?\s*configMap\s*:", text, re.M),
                    f"{path.relative_to(ROOT)} declares no configMap volume")
    R.summary(f"{R.case_checks} checks of the template sources")


def lint(values: dict) -> None:
    report = helm.lint(str(CHART), values, namespace=NAMESPACE)
    problems = [m for m in report.get("messages", []) if m.get("severity", 0) >= 2]
    problems_text = "; ".join(f"{m['path']}: {m['error']}" for m in problems)
    R.check(not problems and not report.get("errors"), "helm lint reports no warning or error",
            problems_text + " ".join(report.get("errors") or []))
    return None


def main() -> int:
    started = time.monotonic()
    R.verbose = "-v" in sys.argv[1:] or "--verbose" in sys.argv[1:]
    print(f"== chart: {CHART.relative_to(ROOT)} with Helm SDK {helm.helm_sdk_version()}, "
          f"Kubernetes schemas {', '.join(KUBE_VERSIONS)}")
    with helm.Chart.load(str(CHART)) as chart:
        defaults = chart.values
        info = [m for m in helm.lint(str(CHART), {}, namespace=NAMESPACE).get("messages", [])
                if m.get("severity") == 1]
    for m in info:
        print(f"    lint info: {m['path']}: {m['error']}")

    check_defaults(defaults)
    R.begin("runbooks")
    check_github_anchors()
    R.summary(f"{R.case_checks} checks of the runbook anchors")
    crd_schema = check_crds()
    check_sources()

    for case, (overrides, about) in CASES.items():
        R.begin(case)
        values = deep_merge(defaults, overrides)
        lint(overrides)
        try:
            manifests = render(overrides)
        except helm.HelmError as e:
            R.check(False, "renders", str(e))
            continue
        objs = objects_of(manifests)
        text = "\n".join(manifests.values())
        mode = values["certificates"]["mode"]
        webhook = values["webhook"].get("enabled", mode == "cert-manager")
        check_schemas(objs, crd_schema)
        check_everywhere(objs, text)
        check_haproxy(objs, values)
        check_controller(objs, values, webhook)
        check_certificates(objs, values)
        check_webhook(objs, values, webhook)
        check_config_objects(objs, values)
        check_options(objs, values)
        check_gateway_class(objs, values)
        check_monitoring(objs, values, NAMESPACE)
        kinds = sorted({o["kind"] for o in objs})
        R.summary(f"{about}: {len(objs)} objects, {R.case_checks} checks; {', '.join(kinds)}")

    for case, (overrides, about, check) in VARIANTS.items():
        R.begin(case)
        lint(overrides)
        try:
            manifests = render(overrides)
        except helm.HelmError as e:
            R.check(False, "renders", str(e))
            continue
        objs = objects_of(manifests)
        check_schemas(objs, crd_schema)
        check_everywhere(objs, "\n".join(manifests.values()))
        R.check(check(objs), about)
        R.summary(f"{about}: {len(objs)} objects, {R.case_checks} checks")

    check_refused()

    failed = len(R.failed)
    print(f"chart: {R.passed} passed, {failed} failed")
    print(f"== chart checks took {time.monotonic() - started:.1f} s")
    if failed:
        print("chart checks FAILED:", file=sys.stderr)
        for f in R.failed:
            print(f"  {f}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
