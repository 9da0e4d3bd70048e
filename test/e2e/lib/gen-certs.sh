#!/usr/bin/env bash
# Test PKI and auth files for the local kube-apiserver, made with openssl (ECDSA P-256, 10 years).
# Usage: gen-certs.sh DIR [APISERVER_PORT] [TOKEN]
# Writes into DIR:
#   ca.crt ca.key                 test CA
#   apiserver.crt apiserver.key   serving cert, SAN 127.0.0.1 / localhost / kubernetes.default.svc / 10.0.0.1
#   sa.key sa.pub                 service-account token signing pair
#   admin.crt admin.key           client cert CN=admin O=system:masters (bypasses RBAC)
#   tokens.csv                    static token file: TOKEN -> user admin, group system:masters
#   token.kubeconfig              bearer-token kubeconfig (the one the tests use)
#   cert.kubeconfig               client-certificate kubeconfig (same user, for tools that want certs)
set -euo pipefail
D=${1:?usage: gen-certs.sh DIR [APISERVER_PORT] [TOKEN]}
PORT=${2:-${TIDAL_E2E_APISERVER_PORT:-26443}}
TOKEN=${3:-${TIDAL_E2E_TOKEN:-tidal-e2e-admin-token}}
command -v openssl >/dev/null || { echo "gen-certs: openssl not found (apt-get install -y openssl)" >&2; exit 1; }
mkdir -p "$D"; D=$(cd "$D" && pwd); cd "$D"
umask 077

EC=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
openssl req -x509 "${EC[@]}" -days 3650 -keyout ca.key -out ca.crt -subj "/CN=tidal-e2e-ca" \
  -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null

sign() {  # sign NAME SUBJECT EXTFILE-CONTENT
  printf '%s\n' "$3" >"$1.ext"
  openssl req "${EC[@]}" -keyout "$1.key" -out "$1.csr" -subj "$2" 2>/dev/null
  openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 3650 \
    -extfile "$1.ext" -out "$1.crt" 2>/dev/null
  rm -f "$1.csr" "$1.ext"
}
sign apiserver "/CN=kube-apiserver" "$(printf '%s\n%s\n%s' \
  'subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,IP:10.0.0.1' \
  'keyUsage=critical,digitalSignature,keyEncipherment' 'extendedKeyUsage=serverAuth')"
sign admin "/O=system:masters/CN=admin" "$(printf '%s\n%s' \
  'keyUsage=critical,digitalSignature,keyEncipherment' 'extendedKeyUsage=clientAuth')"
rm -f ca.srl

openssl ecparam -name prime256v1 -genkey -noout -out sa.key 2>/dev/null
openssl ec -in sa.key -pubout -out sa.pub 2>/dev/null

printf '%s,admin,admin-uid,"system:masters"\n' "$TOKEN" >tokens.csv

kubeconfig() {  # kubeconfig USER-YAML
  cat <<EOF
apiVersion: v1
kind: Config
clusters:
- name: tidal-e2e
  cluster:
    server: https://127.0.0.1:${PORT}
    certificate-authority: ${D}/ca.crt
users:
- name: admin
  user:
$1
contexts:
- name: tidal-e2e
  context: {cluster: tidal-e2e, user: admin}
current-context: tidal-e2e
EOF
}
kubeconfig "    token: ${TOKEN}" >token.kubeconfig
kubeconfig "    client-certificate: ${D}/admin.crt
    client-key: ${D}/admin.key" >cert.kubeconfig
chmod 644 ./*.crt sa.pub
