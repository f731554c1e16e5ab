#!/usr/bin/env bash
# Tests the Helm chart in charts/hawser offline: helm lint, rendering with
# several value sets, every manifest against the Kubernetes OpenAPI schemas,
# and the chart's promises (no subPath, no ConfigMap-mounted configuration,
# the agent as a native sidecar, probes, certificate modes, RBAC without
# wildcards...), and the monitoring objects (the dashboard's queries and the
# alerts parse as PromQL and name series hawser exposes; every alert has a
# runbook). See scripts/chart/check_chart.py; -v prints every check.
#
# Needs python3. The three libraries it uses (Helm's chart engine as a Python
# package, the Kubernetes schemas and a PromQL parser) are installed once from
# the package index into a virtualenv outside the repository, then reused.
set -euo pipefail
cd "$(dirname "$0")/.."
started=$SECONDS

requirements="helm-python-sdk==0.2.2 kubernetes-validate==1.37.0 promql-parser==0.12.0"
venv="${HAWSER_CHART_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/hawser/chart-venv}"

ready() {
  [ "$(cat "$venv/.requirements" 2>/dev/null)" = "$requirements" ] &&
    "$venv/bin/python" -c 'import helm_python, kubernetes_validate, promql_parser' 2>/dev/null
}

if ! ready; then
  mkdir -p "$(dirname "$venv")"
  # One installer at a time when several runs share the cache.
  exec 9>"$venv.lock"
  command -v flock >/dev/null && flock 9
  if ! ready; then
    echo "== chart: installing $requirements into $venv"
    if ! python3 -m venv --clear "$venv" 2>/dev/null; then
      # Debian splits venv support out of python3.
      sudo=""
      [ "$(id -u)" -eq 0 ] || sudo="sudo"
      if command -v apt-get >/dev/null; then
        echo "== chart: installing python3-venv"
        $sudo apt-get update -qq && $sudo apt-get install -y -qq python3-venv >/dev/null
      fi
      python3 -m venv --clear "$venv" || {
        echo "test-chart: cannot create a virtualenv with python3 -m venv (on Debian: apt-get install python3-venv)" >&2
        exit 1
      }
    fi
    # shellcheck disable=SC2086 # one word per requirement
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check $requirements
    echo "$requirements" >"$venv/.requirements"
  fi
  exec 9>&-
fi

status=0
PYTHONDONTWRITEBYTECODE=1 "$venv/bin/python" scripts/chart/check_chart.py "$@" || status=$?
echo "== chart tests took $((SECONDS - started)) s"
exit "$status"
