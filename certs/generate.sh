#!/usr/bin/env bash
# Regenerates the test PKI in this folder: a CA, a server certificate for localhost/127.0.0.1/::1
# signed by it, a client certificate signed by it, and an unrelated self-signed server certificate.
# Valid for 20 years. Test material only: the private keys are public.
set -euo pipefail
cd "$(dirname "$0")"
days=7300
ext=$(mktemp)
trap 'rm -f "$ext" ./*.csr ./*.srl' EXIT

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days "$days" \
  -subj "/CN=h2load-rs test CA" -keyout ca.key -out ca.crt \
  -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null

cat > "$ext" <<'CONF'
[server]
basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=serverAuth
subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1
[client]
basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=clientAuth
CONF

for name in server client; do
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=h2load-rs test $name" \
    -keyout "$name.key" -out "$name.csr" 2>/dev/null
  openssl x509 -req -in "$name.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days "$days" \
    -extfile "$ext" -extensions "$name" -out "$name.crt" 2>/dev/null
done

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days "$days" \
  -subj "/CN=localhost" -keyout selfsigned.key -out selfsigned.crt \
  -addext "subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1" 2>/dev/null

# PKCS#8 keys: every server in the test bed and rustls read them.
for key in ca server client selfsigned; do
  openssl pkcs8 -topk8 -nocrypt -in "$key.key" -out "$key.key.tmp" && mv "$key.key.tmp" "$key.key"
done
echo "certs: regenerated ca, server, client and selfsigned (valid $days days)"
