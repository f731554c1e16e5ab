#!/usr/bin/env bash
# Makes tls.yaml: a self-signed certificate for the demo hosts, as a
# kubernetes.io/tls Secret. Demo material only: the key is public.
set -euo pipefail
cd "$(dirname "$0")"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 3650 \
  -subj "/CN=shop.example.com" \
  -addext "subjectAltName=DNS:shop.example.com,DNS:*.shop.example.com" \
  -keyout "$tmp/tls.key" -out "$tmp/tls.crt" 2>/dev/null
{
  printf 'apiVersion: v1\nkind: Secret\nmetadata:\n  name: shop-tls\n  namespace: shop\ntype: kubernetes.io/tls\nstringData:\n'
  printf '  tls.crt: |\n'; sed 's/^/    /' "$tmp/tls.crt"
  printf '  tls.key: |\n'; sed 's/^/    /' "$tmp/tls.key"
} > tls.yaml
