"""The chart's promises, checked on one rendered value set.

Each function takes the rendered objects and the values they were rendered
with, and records its checks on the shared `R` report. What is promised comes
from DESIGN.md section 7, seed 003 (no configuration through mounts, readiness
only on a verified configuration) and the CLI contract of `hawser controller`,
`hawser agent` and `hawser certs`.
"""

from __future__ import annotations

from manifests import (
    NAMESPACE, RELEASE, R, argv, container, find, group_of, one, pod_labels, pod_spec, port_number, walk_keys,
)

STATE = "/var/run/hawser/state"
AGENT_HEALTH = ["hawser", "agent", "health", "--state-dir", STATE]
HAPROXY_COMMAND = [
    "haproxy", "-W", "-db",
    "-S", f"{STATE}/run/master.sock",
    "-C", f"{STATE}/tree/current",
    "-f", "haproxy.cfg",
]
CERT_SECRETS = {"hawser-agent-issuer", "hawser-agent-identity", "hawser-controller-identity"}
CERT_MANAGER_KINDS = {"Issuer", "ClusterIssuer", "Certificate"}


def check_everywhere(objs: list[dict], rendered_text: str) -> None:
    """Promises that hold for every object in every case."""
    keys = set()
    for obj in objs:
        keys.update(walk_keys(obj))
    R.check("subPath" not in keys and "subPathExpr" not in keys, "no subPath anywhere")
    # The one ConfigMap is the Grafana dashboard, for Grafana to read; no pod mounts it (below).
    maps = [o["metadata"]["name"] for o in find(objs, "ConfigMap")]
    R.check(maps in ([], [f"{RELEASE}-dashboard"]), "the chart creates no ConfigMap but the Grafana dashboard",
            ", ".join(maps))
    for obj in objs:
        spec = pod_spec(obj)
        if spec is None:
            continue
        what = f"{obj['kind']} {obj['metadata']['name']}"
        cm_volumes = [v["name"] for v in spec.get("volumes") or [] if "configMap" in v
                      or any("configMap" in s for s in (v.get("projected") or {}).get("sources", []))]
        R.check(not cm_volumes, f"{what} mounts no ConfigMap", ", ".join(cm_volumes))
        R.check(spec.get("enableServiceLinks") is False,
                f"{what} has no Service links (they would add HAWSER_*_PORT variables)")
        psc = spec.get("securityContext") or {}
        R.check(psc.get("runAsNonRoot") is True, f"{what} runs as non-root")
        R.check((psc.get("seccompProfile") or {}).get("type") == "RuntimeDefault",
                f"{what} uses the RuntimeDefault seccomp profile")
        for c in (spec.get("initContainers") or []) + spec["containers"]:
            sc = c.get("securityContext") or {}
            R.check(sc.get("readOnlyRootFilesystem") is True,
                    f"{what}/{c['name']} has a read-only root filesystem")
            R.check("ALL" in (sc.get("capabilities") or {}).get("drop", []),
                    f"{what}/{c['name']} drops all capabilities")
            image = c["image"]
            R.check(image.startswith("ghcr.io/hawser-dev/hawser:"), f"{what}/{c['name']} runs the hawser image",
                    image)
        for v in spec.get("volumes") or []:
            if "secret" in v:
                R.check("items" not in v["secret"], f"{what} mounts Secret {v['secret']['secretName']} whole")
    for obj in objs:
        labels = obj["metadata"].get("labels") or {}
        what = f"{obj['kind']} {obj['metadata']['name']}"
        R.check(labels.get("app.kubernetes.io/name") == "hawser"
                and labels.get("app.kubernetes.io/instance") == RELEASE
                and bool(labels.get("app.kubernetes.io/component")),
                f"{what} has the name, instance and component labels")
        R.check(len(obj["metadata"]["name"]) <= 63, f"{what} has a name of at most 63 characters")
    # RBAC: no wildcard anywhere.
    for obj in find(objs, "Role") + find(objs, "ClusterRole"):
        for rule in obj.get("rules", []):
            for field in ("verbs", "resources", "apiGroups", "resourceNames"):
                R.check("*" not in (rule.get(field) or []),
                        f"{obj['kind']} {obj['metadata']['name']} has no wildcard {field}", str(rule))
            # `create` can never be narrowed by resourceNames: such a rule would silently not apply.
            if rule.get("resourceNames"):
                R.check("create" not in rule["verbs"],
                        f"{obj['kind']} {obj['metadata']['name']}: no create with resourceNames", str(rule))
    # Workloads select their own pods; Services and PDBs select existing pods.
    pods = [(o, pod_labels(o)) for o in objs if pod_spec(o) is not None]
    for obj in objs:
        what = f"{obj['kind']} {obj['metadata']['name']}"
        if obj["kind"] in ("Deployment", "DaemonSet"):
            sel = obj["spec"]["selector"]["matchLabels"]
            R.check(sel.items() <= pod_labels(obj).items(), f"{what} selects its own pods")
        selector = None
        if obj["kind"] == "Service":
            selector = obj["spec"].get("selector")
        elif obj["kind"] == "PodDisruptionBudget":
            selector = obj["spec"]["selector"]["matchLabels"]
        if selector:
            R.check(any(selector.items() <= labels.items() for _, labels in pods),
                    f"{what} selects pods the chart runs")
    R.check("\t" not in rendered_text, "no tab characters in the manifests")


def check_haproxy(objs: list[dict], values: dict) -> None:
    kind = values["haproxy"]["kind"]
    workload = one(objs, kind, "hawser-haproxy")
    other = "DaemonSet" if kind == "Deployment" else "Deployment"
    R.check(not find(objs, other, "hawser-haproxy"), f"HAProxy runs as a {kind} only")
    if not workload:
        return
    spec = pod_spec(workload)
    ports = values["haproxy"]["ports"]
    agent = container(spec, "agent", init=True)
    R.check(agent.get("restartPolicy") == "Always", "the agent is an initContainer with restartPolicy Always")
    R.check(not [c for c in spec["containers"] if c["name"] == "agent"], "the agent is not a regular container")
    expected_agent = [
        "hawser", "agent",
        "--listen", f"0.0.0.0:{values['agent']['port']}",
        "--tls-dir", "/var/run/hawser/tls",
        "--state-dir", STATE,
        "--health-port", str(ports["health"]),
        "--set", f"httpPort={ports['http']}",
        "--set", f"httpsPort={ports['https']}",
        "--admin", f"0.0.0.0:{values['agent']['adminPort']}",
    ]
    R.check(argv(agent) == expected_agent, "the agent runs the contract's command line", " ".join(argv(agent)))
    R.check("--spawn-haproxy" not in argv(agent), "the agent attaches to HAProxy (no --spawn-haproxy)")
    live = (agent.get("livenessProbe") or {}).get("exec", {}).get("command")
    R.check(live == AGENT_HEALTH, "the agent's liveness probe is exec `hawser agent health`", str(live))
    start = (agent.get("startupProbe") or {}).get("exec", {}).get("command")
    R.check(start == AGENT_HEALTH, "the agent's startup probe is exec `hawser agent health`", str(start))
    mounts = {m["name"]: m for m in agent.get("volumeMounts", [])}
    R.check(mounts.get("state", {}).get("mountPath") == STATE, "the agent mounts the state volume")
    R.check(mounts.get("tls", {}).get("mountPath") == "/var/run/hawser/tls", "the agent mounts its identity")
    volumes = {v["name"]: v for v in spec.get("volumes", [])}
    R.check("emptyDir" in volumes.get("state", {}), "the state volume is an emptyDir")
    R.check(volumes.get("tls", {}).get("secret", {}).get("secretName")
            == values["certificates"]["secrets"]["agentIdentity"],
            "the agent's tls volume is the agent identity Secret")

    haproxy = container(spec, "haproxy")
    R.check(argv(haproxy) == HAPROXY_COMMAND, "HAProxy runs the contract's command line", " ".join(argv(haproxy)))
    R.check([m["name"] for m in haproxy.get("volumeMounts", [])] == ["state"],
            "HAProxy mounts only the shared state volume")
    ready = haproxy.get("readinessProbe", {}).get("httpGet", {})
    R.check(ready.get("path") == "/healthz" and port_number(haproxy, ready.get("port")) == ports["health"],
            "HAProxy's readiness is httpGet /healthz on the health port", str(ready))
    alive = haproxy.get("livenessProbe", {})
    R.check(port_number(haproxy, alive.get("tcpSocket", {}).get("port")) == ports["health"]
            and alive.get("initialDelaySeconds", 0) >= 15,
            "HAProxy's liveness is tcpSocket on the health port with a generous delay", str(alive))
    named = {p["name"]: p["containerPort"] for p in haproxy.get("ports", [])}
    R.check(named == {"http": ports["http"], "https": ports["https"], "health": ports["health"]},
            "HAProxy exposes http, https and health", str(named))
    caps = (haproxy.get("securityContext") or {}).get("capabilities", {}).get("add") or []
    low = min(ports.values()) < 1024
    R.check(("NET_BIND_SERVICE" in caps) == low,
            f"HAProxy has NET_BIND_SERVICE {'because' if low else 'only if'} a port is below 1024", str(caps))
    R.check(spec.get("automountServiceAccountToken") is False, "HAProxy pods mount no API token")
    sa = one(objs, "ServiceAccount", "hawser-haproxy")
    R.check(sa.get("automountServiceAccountToken") is False, "the HAProxy ServiceAccount mounts no token")
    bound = [b["metadata"]["name"] for b in find(objs, "RoleBinding") + find(objs, "ClusterRoleBinding")
             if any(s.get("name") == "hawser-haproxy" for s in b["subjects"])]
    R.check(not bound, "no role is bound to the HAProxy ServiceAccount", ", ".join(bound))

    host = values["haproxy"]["hostNetwork"]
    R.check(bool(spec.get("hostNetwork")) == host, f"hostNetwork is {'on' if host else 'off'}")
    if host:
        R.check(spec.get("dnsPolicy") == "ClusterFirstWithHostNet", "hostNetwork pods use ClusterFirstWithHostNet")

    svc = find(objs, "Service", "hawser-haproxy")
    if values["haproxy"]["service"]["enabled"]:
        R.check(len(svc) == 1, "the HAProxy Service exists")
        if svc:
            s = svc[0]["spec"]
            R.check(s["type"] == values["haproxy"]["service"]["type"], f"the HAProxy Service is {s['type']}")
            routes = {p["port"]: p["targetPort"] for p in s["ports"]}
            R.check(routes == {80: "http", 443: "https"}, "the HAProxy Service sends 80 to http and 443 to https",
                    str(routes))

    pdb = find(objs, "PodDisruptionBudget", "hawser-haproxy")
    want_pdb = kind == "Deployment" and values["haproxy"]["replicas"] > 1
    R.check(bool(pdb) == want_pdb, f"an HAProxy PodDisruptionBudget {'exists' if want_pdb else 'is absent'}")
    check_haproxy_stop(spec, values)


# The preStop hook's fixed part; its numbers follow (see check_haproxy_stop).
STOP_HOOK = ["hawser", "haproxy-stop", "--master-socket", f"{STATE}/run/master.sock"]
# The least drain the chart allows, in seconds.
MIN_DRAIN = 5


def stop_numbers(haproxy: dict) -> dict[str, int] | None:
    """The hook's --wait-before, --drain and --hard-stop-wait, or None when
    the container has no such hook."""
    command = (((haproxy.get("lifecycle") or {}).get("preStop") or {}).get("exec") or {}).get("command") or []
    if command[:len(STOP_HOOK)] != STOP_HOOK:
        return None
    rest = command[len(STOP_HOOK):]
    flags = dict(zip(rest[::2], rest[1::2]))
    try:
        return {name: int(flags[f"--{name}"]) for name in ("wait-before", "drain", "hard-stop-wait")}
    except (KeyError, ValueError):
        return None


def check_haproxy_stop(spec: dict, values: dict) -> None:
    """HAProxy's stop agrees with the pod's grace period: the preStop hook
    serves through preStopSleepSeconds, soft-stops HAProxy, and ends (its
    hard stop included) before the kubelet's SIGKILL; the agent, a native
    sidecar without a hook, is stopped only after HAProxy."""
    haproxy = container(spec, "haproxy")
    grace = spec.get("terminationGracePeriodSeconds")
    R.check(grace == values["haproxy"]["terminationGracePeriodSeconds"],
            "the HAProxy pods have haproxy.terminationGracePeriodSeconds", str(grace))
    numbers = stop_numbers(haproxy)
    R.check(numbers is not None, "HAProxy's preStop hook is `hawser haproxy-stop` on the master socket",
            str(haproxy.get("lifecycle")))
    if numbers is None or grace is None:
        return
    wait, drain, hard = numbers["wait-before"], numbers["drain"], numbers["hard-stop-wait"]
    R.check(wait == values["haproxy"]["preStopSleepSeconds"],
            "the hook serves through haproxy.preStopSleepSeconds before the soft stop", str(numbers))
    R.check(drain >= MIN_DRAIN, f"the drain is at least {MIN_DRAIN} s", str(numbers))
    # The hook's last moment: the wait, the whole drain, then the hard stop's wait.
    R.check(wait + drain + hard < grace,
            f"the hook ends ({wait} + {drain} + {hard} s) before the grace period ({grace} s) runs out",
            str(numbers))
    agent = container(spec, "agent", init=True)
    R.check(agent.get("restartPolicy") == "Always" and "lifecycle" not in agent,
            "the agent is a native sidecar without a hook: the kubelet stops it after HAProxy")


def check_controller(objs: list[dict], values: dict, webhook: bool) -> None:
    dep = one(objs, "Deployment", "hawser-controller")
    if not dep:
        return
    R.check(dep["spec"]["replicas"] == values["controller"]["replicas"],
            f"the controller runs {values['controller']['replicas']} replica(s)")
    spec = pod_spec(dep)
    c = container(spec, "controller")
    expected = [
        "hawser", "controller", "--kubernetes",
        "--namespace", "$(POD_NAMESPACE)",
        "--config-name", values["hawserConfig"]["name"],
        "--tls-dir", "/var/run/hawser/tls",
        "--agent-selector", f"app.kubernetes.io/instance={RELEASE},app.kubernetes.io/component=haproxy",
        "--agent-port", str(values["agent"]["port"]),
        "--lease-name", "hawser-controller",
        "--admin", "0.0.0.0:9181",
    ]
    if webhook:
        expected += ["--webhook-listen", "0.0.0.0:9443", "--webhook-tls-dir", "/var/run/hawser/webhook-tls"]
    if values["haproxy"]["service"]["enabled"]:
        expected += ["--publish-service", f"{NAMESPACE}/hawser-haproxy"]
    expected += values["controller"]["extraArgs"]
    R.check(argv(c) == expected, "the controller runs the contract's command line", " ".join(argv(c)))
    env = {e["name"]: e for e in c.get("env", [])}
    R.check(env.get("POD_NAMESPACE", {}).get("valueFrom", {}).get("fieldRef", {}).get("fieldPath")
            == "metadata.namespace", "POD_NAMESPACE comes from the downward API")
    R.check(env.get("POD_NAME", {}).get("valueFrom", {}).get("fieldRef", {}).get("fieldPath")
            == "metadata.name", "POD_NAME comes from the downward API")
    R.check(env.get("HAWSER_LOG_FORMAT", {}).get("value") == "json", "the controller logs JSON")
    live = c.get("livenessProbe", {}).get("httpGet", {})
    ready = c.get("readinessProbe", {}).get("httpGet", {})
    R.check(live.get("path") == "/healthz" and port_number(c, live.get("port")) == 9181,
            "the controller's liveness is GET /healthz on 9181")
    R.check(ready.get("path") == "/readyz" and port_number(c, ready.get("port")) == 9181,
            "the controller's readiness is GET /readyz on 9181")
    volumes = {v["name"]: v for v in spec.get("volumes", [])}
    mounts = {m["mountPath"]: m["name"] for m in c.get("volumeMounts", [])}
    R.check(volumes.get(mounts.get("/var/run/hawser/tls"), {}).get("secret", {}).get("secretName")
            == values["certificates"]["secrets"]["controllerIdentity"],
            "the controller mounts its identity Secret at /var/run/hawser/tls")
    if webhook:
        R.check("/var/run/hawser/webhook-tls" in mounts, "the controller mounts the webhook certificate")
    R.check(bool(find(objs, "PodDisruptionBudget", "hawser-controller")) == (values["controller"]["replicas"] > 1),
            "a controller PodDisruptionBudget exists exactly when replicas > 1")

    role = one(objs, "ClusterRole", "hawser-controller")
    granted = {(g, r, v) for rule in role.get("rules", []) for g in rule["apiGroups"]
               for r in rule["resources"] for v in rule["verbs"]}
    needed = {("networking.k8s.io", r, v) for r in ("ingresses", "ingressclasses") for v in ("get", "list", "watch")}
    # configmaps: the TCP services map settings.tcpServices names.
    needed |= {("", r, v) for r in ("services", "secrets", "pods", "configmaps")
               for v in ("get", "list", "watch")}
    needed |= {("discovery.k8s.io", "endpointslices", v) for v in ("get", "list", "watch")}
    needed |= {("hawser.dev", "hawserconfigs", v) for v in ("get", "list", "watch")}
    needed.add(("hawser.dev", "hawserconfigs/status", "patch"))  # the Valid condition
    needed |= {("networking.k8s.io", "ingresses/status", v) for v in ("update", "patch")}
    needed |= {(g, "events", v) for g in ("", "events.k8s.io") for v in ("create", "patch")}
    gateway_kinds = ("gatewayclasses", "gateways", "httproutes", "grpcroutes", "tlsroutes", "tcproutes")
    needed |= {("gateway.networking.k8s.io", r, v) for r in gateway_kinds + ("referencegrants",)
               for v in ("get", "list", "watch")}
    needed |= {("gateway.networking.k8s.io", f"{r}/status", "patch") for r in gateway_kinds}
    needed |= {("", "namespaces", v) for v in ("get", "list", "watch")}  # allowedRoutes selectors
    R.check(granted == needed, "the controller's ClusterRole grants exactly what it needs",
            f"missing {sorted(needed - granted)}, extra {sorted(granted - needed)}")
    lease = one(objs, "Role", "hawser-controller")
    lease_grants = {(g, r, v) for rule in lease.get("rules", []) for g in rule["apiGroups"]
                    for r in rule["resources"] for v in rule["verbs"]}
    expected = {("coordination.k8s.io", "leases", v) for v in ("get", "create", "update", "patch")}
    expected.add(("", "secrets", "create"))  # the shared default certificate
    R.check(lease_grants == expected,
            "the controller's Role grants its Lease and creating the default-certificate Secret only",
            str(sorted(lease_grants)))


def check_certificates(objs: list[dict], values: dict) -> None:
    mode = values["certificates"]["mode"]
    jobs = find(objs, "Job")
    cronjobs = find(objs, "CronJob")
    cm_objs = [o for o in objs if group_of(o["apiVersion"]) == "cert-manager.io"]
    R.check(bool(jobs) == (mode == "bootstrap"), f"a certificate Job {'exists' if mode == 'bootstrap' else 'is absent'}")
    R.check(bool(cronjobs) == (mode == "bootstrap"),
            f"a certificate CronJob {'exists' if mode == 'bootstrap' else 'is absent'}")
    R.check(bool(cm_objs) == (mode == "cert-manager"),
            f"cert-manager objects {'exist' if mode == 'cert-manager' else 'are absent'}")
    for obj in jobs + cronjobs:
        c = pod_spec(obj)["containers"][0]
        R.check(argv(c)[:6] == ["hawser", "certs", "renew", "--kubernetes", "--namespace", "$(POD_NAMESPACE)"],
                f"{obj['kind']} {obj['metadata']['name']} runs `hawser certs renew --kubernetes --namespace`")
    for job in jobs:
        hook = job["metadata"].get("annotations", {}).get("helm.sh/hook")
        R.check(hook == "pre-install,pre-upgrade", "the certificate Job is a pre-install,pre-upgrade hook", str(hook))
        sa = pod_spec(job)["serviceAccountName"]
        for kind in ("ServiceAccount", "Role", "RoleBinding"):
            dep = find(objs, kind, sa)
            R.check(bool(dep) and "helm.sh/hook" in dep[0]["metadata"].get("annotations", {})
                    and int(dep[0]["metadata"]["annotations"]["helm.sh/hook-weight"])
                    < int(job["metadata"]["annotations"]["helm.sh/hook-weight"]),
                    f"the Job's {kind} is a hook created before it")
    for cj in cronjobs:
        R.check(cj["spec"]["schedule"] == "@hourly", "the CronJob runs hourly")
        R.check(cj["spec"].get("concurrencyPolicy") == "Forbid", "CronJob runs never overlap")
    for role in find(objs, "Role"):
        if role["metadata"]["labels"].get("app.kubernetes.io/component") != "certs":
            continue
        named = [r for r in role["rules"] if r.get("resourceNames")]
        R.check(len(named) == 1 and set(named[0]["resourceNames"]) == CERT_SECRETS
                and sorted(named[0]["verbs"]) == ["get", "update"],
                f"Role {role['metadata']['name']} reads and updates only the three certificate Secrets")
        unnamed = [r for r in role["rules"] if not r.get("resourceNames")]
        R.check(len(unnamed) == 1 and unnamed[0]["verbs"] == ["create"] and unnamed[0]["resources"] == ["secrets"],
                f"Role {role['metadata']['name']} may otherwise only create Secrets")
    if mode == "cert-manager":
        check_cert_manager(objs, values)


def check_cert_manager(objs: list[dict], values: dict) -> None:
    certs = {o["metadata"]["name"]: o["spec"] for o in find(objs, "Certificate")}
    kinds = {o["kind"] for o in objs if group_of(o["apiVersion"]) == "cert-manager.io"}
    R.check(kinds <= CERT_MANAGER_KINDS, "only Issuers and Certificates from cert-manager", str(kinds))
    issuers = {o["metadata"]["name"]: o["spec"] for o in find(objs, "Issuer")}
    R.check("selfSigned" in issuers.get("hawser-selfsigned", {}), "a self-signed Issuer")
    ca = certs.get("hawser-ca", {})
    R.check(ca.get("isCA") is True and ca.get("issuerRef", {}).get("name") == "hawser-selfsigned",
            "a CA Certificate from the self-signed Issuer")
    R.check(issuers.get("hawser-ca", {}).get("ca", {}).get("secretName") == ca.get("secretName"),
            "a CA Issuer using the CA's Secret")
    agent = certs.get("hawser-agent", {})
    ctrl = certs.get("hawser-controller", {})
    secrets = values["certificates"]["secrets"]
    R.check(agent.get("secretName") == secrets["agentIdentity"] and agent.get("dnsNames") == ["hawser-agent"]
            and "server auth" in agent.get("usages", []) and "client auth" not in agent.get("usages", [])
            and agent.get("issuerRef", {}).get("name") == "hawser-ca",
            "the agent Certificate: serverAuth, SAN hawser-agent, from the CA Issuer")
    R.check(ctrl.get("secretName") == secrets["controllerIdentity"] and ctrl.get("dnsNames") == ["hawser-controller"]
            and "client auth" in ctrl.get("usages", []) and "server auth" not in ctrl.get("usages", [])
            and ctrl.get("issuerRef", {}).get("name") == "hawser-ca",
            "the controller Certificate: clientAuth, SAN hawser-controller, from the CA Issuer")
    R.check(ca.get("secretName") not in (secrets["issuer"], secrets["agentIdentity"], secrets["controllerIdentity"]),
            "the cert-manager CA Secret is not one the bootstrap mode writes")


def check_webhook(objs: list[dict], values: dict, webhook: bool) -> None:
    vwc = find(objs, "ValidatingWebhookConfiguration")
    R.check(bool(vwc) == webhook, f"the admission webhook is {'on' if webhook else 'off'}")
    svc = one(objs, "Service", "hawser-controller")
    svc_ports = {p["name"]: p["port"] for p in svc.get("spec", {}).get("ports", [])}
    R.check(svc_ports.get("admin") == 9181, "the controller Service exposes the admin port 9181")
    if not webhook or not vwc:
        R.check("webhook" not in svc_ports, "the controller Service has no webhook port")
        return
    R.check(svc_ports.get("webhook") == 9443, "the controller Service exposes the webhook on 9443")
    hooks = vwc[0]["webhooks"]
    resources = sorted(r for h in hooks for rule in h["rules"] for r in rule["resources"])
    R.check(resources == ["hawserconfigs", "ingresses"], "the webhook checks Ingresses and HawserConfigs")
    for h in hooks:
        ref = h["clientConfig"]["service"]
        R.check(ref == {"name": "hawser-controller", "namespace": NAMESPACE, "path": "/validate", "port": 9443},
                f"webhook {h['name']} calls the controller Service at :9443/validate", str(ref))
        R.check(h["failurePolicy"] == values["webhook"]["failurePolicy"] and h["timeoutSeconds"] == 5,
                f"webhook {h['name']}: failurePolicy {values['webhook']['failurePolicy']}, timeout 5 s")
        R.check(all(sorted(r["operations"]) == ["CREATE", "UPDATE"] for r in h["rules"]),
                f"webhook {h['name']} checks CREATE and UPDATE")
    ingress_rule = [r for h in hooks for r in h["rules"] if "ingresses" in r["resources"]][0]
    R.check(ingress_rule["apiGroups"] == ["networking.k8s.io"] and ingress_rule["apiVersions"] == ["v1"],
            "the Ingress rule is for networking.k8s.io/v1")
    if values["certificates"]["mode"] == "cert-manager":
        inject = vwc[0]["metadata"].get("annotations", {}).get("cert-manager.io/inject-ca-from")
        R.check(inject == f"{NAMESPACE}/hawser-webhook", "cert-manager injects the webhook's CA", str(inject))
        cert = find(objs, "Certificate", "hawser-webhook")
        names = cert[0]["spec"].get("dnsNames", []) if cert else []
        R.check(f"hawser-controller.{NAMESPACE}.svc" in names, "a serving Certificate for the controller Service",
                str(names))
    else:
        R.check(all(h["clientConfig"].get("caBundle") == values["webhook"]["caBundle"] for h in hooks),
                "the webhook trusts webhook.caBundle")


def check_config_objects(objs: list[dict], values: dict) -> None:
    cfg = one(objs, "HawserConfig", values["hawserConfig"]["name"])
    want = dict(values["hawserConfig"]["settings"] or {})
    monitor = values["metrics"]["serviceMonitor"]
    if monitor["enabled"] and monitor["haproxyExporter"]:
        # What the ServiceMonitor scrapes on the health port is served there.
        want.setdefault("haproxyMetrics", True)
    R.check(cfg.get("spec", {}).get("settings") == want,
            "the HawserConfig carries spec.settings from the values", str(cfg.get("spec", {}).get("settings")))
    ic = one(objs, "IngressClass", "hawser")
    R.check(ic.get("spec", {}).get("controller") == "hawser.dev/ingress-controller",
            "the IngressClass names hawser.dev/ingress-controller")
    default = ic.get("metadata", {}).get("annotations", {}).get("ingressclass.kubernetes.io/is-default-class")
    R.check(default == str(values["ingressClass"]["default"]).lower(),
            f"the IngressClass is{'' if values['ingressClass']['default'] else ' not'} the default class")


def check_gateway_class(objs: list[dict], values: dict) -> None:
    classes = find(objs, "GatewayClass")
    want = values["gatewayClass"]
    R.check(bool(classes) == want["create"],
            f"a GatewayClass {'exists' if want['create'] else 'is absent'} as gatewayClass.create says")
    if classes:
        R.check(classes[0]["metadata"]["name"] == want["name"]
                and classes[0].get("spec", {}).get("controllerName") == want["controllerName"],
                "the GatewayClass names hawser's Gateway controller", str(classes[0]))


def check_options(objs: list[dict], values: dict) -> None:
    monitors = find(objs, "ServiceMonitor")
    on = values["metrics"]["serviceMonitor"]["enabled"]
    R.check(bool(monitors) == on, f"ServiceMonitors {'exist' if on else 'are absent'}")
    if on:
        exporter = values["metrics"]["serviceMonitor"]["haproxyExporter"]
        endpoints = {e["port"]: e for m in monitors for e in m["spec"]["endpoints"]}
        want = ["admin", "agent-admin"] + (["haproxy-metrics"] if exporter else [])
        R.check(sorted(endpoints) == want,
                f"ServiceMonitors scrape the controller and the agents{' and HAProxy' if exporter else ''}",
                str(sorted(endpoints)))
        # The traffic series and the served certificates carry the namespace
        # (and Service) they are about: the target's must not rename them.
        R.check(all(endpoints.get(p, {}).get("honorLabels") is True for p in ("admin", "agent-admin")),
                "the controller and agent endpoints keep hawser's own namespace and service labels")
        R.check(all(e.get("path") == "/metrics" for e in endpoints.values()), "every endpoint scrapes /metrics")
        metrics = one(objs, "Service", "hawser-haproxy-metrics")
        ports = [p["port"] for p in metrics.get("spec", {}).get("ports", [])]
        health = values["haproxy"]["ports"]["health"]
        R.check(ports == [9182] + ([health] if exporter else []),
                f"the agents' metrics Service exposes 9182{f' and {health}' if exporter else ''}", str(ports))
        for m in monitors:
            R.check(m["metadata"]["labels"].get("release") == "prometheus",
                    f"ServiceMonitor {m['metadata']['name']} carries metrics.serviceMonitor.labels")
        configs = find(objs, "HawserConfig")
        if exporter and configs:
            settings = configs[0]["spec"].get("settings", {})
            R.check(settings.get("haproxyMetrics") is True,
                    "the HawserConfig has HAProxy serve the exporter the ServiceMonitor scrapes",
                    str(settings))
    tag = values["image"]["tag"] or "0.1.0"
    images = {c["image"] for o in objs if pod_spec(o) for c in
              (pod_spec(o).get("initContainers") or []) + pod_spec(o)["containers"]}
    R.check(images == {f"ghcr.io/hawser-dev/hawser:{tag}"}, "one image everywhere, tagged appVersion by default",
            str(images))
