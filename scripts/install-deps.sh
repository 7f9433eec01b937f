#!/usr/bin/env bash
# Installs the Debian packages inferd builds against, only when one is missing,
# so `make serve` and `make test` work on a fresh machine and cost nothing after.
set -euo pipefail
# openssl and curl: the TLS tests make a self-signed certificate and call the server over HTTPS.
# libgnutls28-dev: inferd healthcheck speaks HTTPS to a server with tls_cert set.
# libpq-dev: the PostgreSQL session store (store_url); postgresql: the throwaway server its tests start;
# haproxy: the load balancer of the reference deployment make test runs (scripts/cluster-test.py).
# libcurl4-openssl-dev: the remote backend's HTTP client (backend openai).
pkgs=(libmicrohttpd-dev libsqlite3-dev libgnutls28-dev libpq-dev postgresql haproxy libcurl4-openssl-dev pkg-config openssl curl)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
echo "installing: ${missing[*]}" >&2
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
