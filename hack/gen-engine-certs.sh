#!/usr/bin/env bash
# A small PKI for tidal-engine's mutual TLS (docs/security.md), made with openssl
# (ECDSA P-256). For tests and trials; in production use your own CA or cert-manager.
# Usage: hack/gen-engine-certs.sh DIR [SERVER_SANS] [DAYS]
#   SERVER_SANS  subjectAltName of the engine's certificate
#                (default DNS:localhost,IP:127.0.0.1,DNS:tidal-engine,DNS:tidal-engine.tidal-system.svc)
# Writes into DIR (keys mode 0600):
#   ca.crt ca.key               the CA (kept and reused when DIR already has one: re-running renews
#                               the leaf certificates under the same CA, as a rotation would)
#   engine.crt engine.key       server certificate (tidal-engine --tls-cert/--tls-key)
#   scheduler.crt scheduler.key client certificate CN=tidal-scheduler (the Kubernetes shim)
#   slurm.crt slurm.key         client certificate CN=tidal-slurm
# tidal-engine's --tls-client-ca and the clients' CA are both ca.crt here; they may differ.
set -euo pipefail
D=${1:?usage: gen-engine-certs.sh DIR [SERVER_SANS] [DAYS]}
SANS=${2:-DNS:localhost,IP:127.0.0.1,DNS:tidal-engine,DNS:tidal-engine.tidal-system.svc}
DAYS=${3:-365}
command -v openssl >/dev/null || { echo "gen-engine-certs: openssl not found (apt-get install -y openssl)" >&2; exit 1; }
mkdir -p "$D"; cd "$D"
umask 077
EC=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
if [ ! -s ca.key ] || [ ! -s ca.crt ]; then
  openssl req -x509 "${EC[@]}" -days "$DAYS" -keyout ca.key -out ca.crt -subj "/CN=tidal-engine-ca-$RANDOM$RANDOM" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
fi
sign() {  # sign NAME SUBJECT EXTFILE-CONTENT: writes NAME.key and NAME.crt
  printf '%s\n' "$3" >"$1.ext"
  openssl req "${EC[@]}" -keyout "$1.key.new" -out "$1.csr" -subj "$2" 2>/dev/null
  openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -set_serial "0x$(openssl rand -hex 16)" -days "$DAYS" \
    -extfile "$1.ext" -out "$1.crt.new" 2>/dev/null
  mv -f "$1.key.new" "$1.key"
  mv -f "$1.crt.new" "$1.crt"
  rm -f "$1.csr" "$1.ext"
}
sign engine "/CN=tidal-engine" "$(printf '%s\n%s\n%s' "subjectAltName=$SANS" \
  'keyUsage=critical,digitalSignature,keyEncipherment' 'extendedKeyUsage=serverAuth')"
for c in scheduler slurm; do
  sign "$c" "/CN=tidal-$c" "$(printf '%s\n%s' 'keyUsage=critical,digitalSignature,keyEncipherment' 'extendedKeyUsage=clientAuth')"
done
chmod 0644 ca.crt engine.crt scheduler.crt slurm.crt
