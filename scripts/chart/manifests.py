"""Rendering the chart and reading what it rendered: shared by the chart checks.

`render` runs Helm's own engine (helm-python-sdk) offline; `Report` counts the
checks and prints failures; the small helpers find objects, pod specs,
containers and ports in the rendered manifests.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, Iterator

import helm_python as helm
import yaml

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "hawser"
RELEASE = "hawser"
NAMESPACE = "hawser-system"


class Report:
    """Counts checks; prints each failure and a summary line per case."""

    def __init__(self) -> None:
        self.verbose = False
        self.passed = 0
        self.failed: list[str] = []
        self.case = ""
        self.case_checks = 0
        self.case_failed = 0

    def check(self, ok: bool, what: str, detail: str = "") -> bool:
        self.case_checks += 1
        if ok:
            self.passed += 1
            if self.verbose:
                print(f"       ok {self.case}: {what}")
        else:
            message = f"{self.case}: {what}" + (f" ({detail})" if detail else "")
            self.failed.append(message)
            self.case_failed += 1
            print(f"  FAIL {message}", flush=True)
        return ok

    def begin(self, case: str) -> None:
        self.case = case
        self.case_checks = 0
        self.case_failed = 0

    def summary(self, text: str) -> None:
        status = "FAIL" if self.case_failed else "ok  "
        print(f"  {status} {self.case}: {text}", flush=True)


R = Report()


def deep_merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def render(values: dict[str, Any]) -> dict[str, str]:
    with helm.Chart.load(str(CHART)) as chart:
        return chart.render(values, name=RELEASE, namespace=NAMESPACE, is_install=True)


def objects_of(manifests: dict[str, str]) -> list[dict[str, Any]]:
    objs = []
    for path, text in sorted(manifests.items()):
        if path.endswith("NOTES.txt"):
            continue
        for doc in yaml.safe_load_all(text):
            if doc:
                doc.setdefault("__source", path)
                objs.append(doc)
    return objs


def walk_keys(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            yield key
            yield from walk_keys(value)
    elif isinstance(node, list):
        for item in node:
            yield from walk_keys(item)


def find(objs: list[dict], kind: str, name: str | None = None) -> list[dict]:
    return [o for o in objs if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)]


def one(objs: list[dict], kind: str, name: str) -> dict:
    found = find(objs, kind, name)
    R.check(len(found) == 1, f"exactly one {kind} {name}", f"found {len(found)}")
    return found[0] if found else {}


def pod_spec(obj: dict) -> dict | None:
    spec = obj.get("spec", {})
    if obj["kind"] in ("Deployment", "DaemonSet", "StatefulSet", "Job"):
        return spec["template"]["spec"]
    if obj["kind"] == "CronJob":
        return spec["jobTemplate"]["spec"]["template"]["spec"]
    return None


def pod_labels(obj: dict) -> dict:
    spec = obj.get("spec", {})
    if obj["kind"] == "CronJob":
        return spec["jobTemplate"]["spec"]["template"]["metadata"].get("labels", {})
    return spec["template"]["metadata"].get("labels", {})


def container(spec: dict, name: str, init: bool = False) -> dict:
    key = "initContainers" if init else "containers"
    for c in spec.get(key) or []:
        if c["name"] == name:
            return c
    R.check(False, f"{key} has a container {name}")
    return {}


def argv(c: dict) -> list[str]:
    return list(c.get("command") or []) + list(c.get("args") or [])


def port_number(c: dict, port: Any) -> Any:
    if isinstance(port, int):
        return port
    for p in c.get("ports") or []:
        if p.get("name") == port:
            return p["containerPort"]
    return None


def group_of(api_version: str) -> str:
    return api_version.split("/")[0] if "/" in api_version else ""
