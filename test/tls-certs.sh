#!/usr/bin/env bash
# Certificates and keys for the TLS tests, made with openssl only, in DIR
# (created if missing). Idempotent: a DIR that is complete (its .complete
# stamp matches this script's version and every file is there) is left
# as it is, in a few ms; concurrent runs on one DIR take turns (flock).
#
#   test/tls-certs.sh DIR        prints DIR (absolute) when done
#
# All RSA-2048, PEM. Private keys are unencrypted PKCS#8 unless said.
#   ca.pem ca.key                  the CA the server trusts (its truststore)
#   server.cert.pem server.key.pem  CN=localhost, subjectAltName
#                                  IP:127.0.0.1, DNS:localhost,
#                                  extendedKeyUsage serverAuth,clientAuth
#   server.keystore.pem            server.key.pem + server.cert.pem in one
#                                  file (ssl.keyStore.type=PEM)
#   client.cert.pem client.key.pem  a client signed by ca (same SAN/EKU)
#   client.keystore.pem            client key + cert in one file (a Java
#                                  client's ssl.keyStore, type PEM)
#   client-enc.key.pem             client.key.pem's key encrypted (PKCS#8,
#   client-enc.pass                AES-256) with the passphrase in .pass
#                                  (one line, no newline: "zkl-client-pw")
#   other-ca.pem other-ca.key      a second CA, unrelated to ca
#   other-client.cert.pem          a client signed by other-ca: the
#   other-client.key.pem           server does not trust it
#   other-client.keystore.pem      (key + cert, for a Java client)
#   expired.cert.pem expired.key.pem  a server certificate signed by ca
#   expired.keystore.pem           (server.key.pem's key, same SAN/EKU),
#                                  valid 2020-01-01..2021-01-01 only
#                                  (openssl ca -startdate/-enddate)
#   zk-cert.txt                    "DIR/ca.pem,DIR/client.cert.pem,DIR/client.key.pem",
#   zk-cert-enc.txt                the same with client-enc.key.pem and
#                                  its passphrase: zookeeper_init_ssl's cert
#                                  argument
set -euo pipefail

[ $# = 1 ] || { echo "usage: $0 DIR" >&2; exit 2; }
mkdir -p "$1"
dir=$(cd "$1" && pwd)
VERSION=1
FILES="ca.pem ca.key server.cert.pem server.key.pem server.keystore.pem
client.cert.pem client.key.pem client.keystore.pem client-enc.key.pem
client-enc.pass other-ca.pem other-ca.key other-client.cert.pem
other-client.key.pem other-client.keystore.pem expired.cert.pem
expired.key.pem expired.keystore.pem zk-cert.txt zk-cert-enc.txt"
PASS=zkl-client-pw

complete() {
    local f
    [ "$(cat "$dir/.complete" 2>/dev/null)" = "$VERSION" ] || return 1
    for f in $FILES; do [ -s "$dir/$f" ] || return 1; done
}

complete && { echo "$dir"; exit 0; }

exec 9>"$dir/.lock"
flock 9
complete && { echo "$dir"; exit 0; }

rm -f "$dir/.complete"
w=$(mktemp -d "$dir/.work.XXXXXX")
trap 'rm -rf "$w"' EXIT
cd "$w"

ossl() { openssl "$@" 2>"$w/err" || { cat "$w/err" >&2; return 1; }; }

key() { # file: an unencrypted PKCS#8 RSA-2048 key
    ossl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$1"
}

cat > ext.cnf <<'EXT'
[ca_ext]
basicConstraints=critical,CA:TRUE
keyUsage=critical,keyCertSign,cRLSign
subjectKeyIdentifier=hash

[leaf_ext]
basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth,clientAuth
subjectAltName=IP:127.0.0.1,DNS:localhost
subjectKeyIdentifier=hash
authorityKeyIdentifier=keyid
EXT

leaf() { # name, subject, ca name
    key "$1.key.pem"
    ossl req -new -key "$1.key.pem" -subj "$2" -config /dev/null -out "$1.csr"
    ossl x509 -req -in "$1.csr" -CA "$3.pem" -CAkey "$3.key" -CAcreateserial \
        -days 3650 -sha256 -extfile ext.cnf -extensions leaf_ext -out "$1.cert.pem"
    cat "$1.key.pem" "$1.cert.pem" > "$1.keystore.pem"
}

# The CA, the server, a client.
ossl req -new -x509 -newkey rsa:2048 -noenc -keyout ca.key -subj "/CN=zklock test CA" \
    -days 3650 -sha256 -config ext.cnf -extensions ca_ext -out ca.pem
leaf server "/CN=localhost" ca
leaf client "/CN=zklock test client" ca
ossl pkcs8 -topk8 -v2 aes-256-cbc -in client.key.pem -passout "pass:$PASS" -out client-enc.key.pem
printf '%s' "$PASS" > client-enc.pass

# An unrelated CA, and a client it signed.
ossl req -new -x509 -newkey rsa:2048 -noenc -keyout other-ca.key -subj "/CN=zklock other CA" \
    -days 3650 -sha256 -config ext.cnf -extensions ca_ext -out other-ca.pem
leaf other-client "/CN=zklock untrusted client" other-ca

# An expired server certificate: openssl 3.0's x509 -req has no
# -not_before/-not_after, but `openssl ca` has -startdate/-enddate.
# (The server's key, to save a key generation.)
cp server.key.pem expired.key.pem
ossl req -new -key expired.key.pem -subj "/CN=localhost" -config /dev/null -out expired.csr
mkdir -p cadb
: > cadb/index.txt
echo 1000 > cadb/serial
cat > ca.cnf <<CNF
[ca]
default_ca = zkl
[zkl]
dir = $w/cadb
database = \$dir/index.txt
serial = \$dir/serial
new_certs_dir = \$dir
certificate = $w/ca.pem
private_key = $w/ca.key
default_md = sha256
policy = anything
unique_subject = no
email_in_dn = no
[anything]
commonName = supplied
CNF
ossl ca -batch -config ca.cnf -notext -startdate 20200101000000Z -enddate 20210101000000Z \
    -extfile ext.cnf -extensions leaf_ext -in expired.csr -out expired.cert.pem
cat expired.key.pem expired.cert.pem > expired.keystore.pem

# Checks: the chains, the expiry, the SAN.
ossl verify -CAfile ca.pem server.cert.pem client.cert.pem >/dev/null
ossl verify -CAfile other-ca.pem other-client.cert.pem >/dev/null
if openssl verify -CAfile ca.pem other-client.cert.pem >/dev/null 2>&1; then
    echo "other-client verified against ca" >&2; exit 1
fi
v=$(openssl verify -CAfile ca.pem expired.cert.pem 2>&1 || true)
case "$v" in *'certificate has expired'*) ;; *) echo "$v" >&2; exit 1 ;; esac
v=$(openssl x509 -in server.cert.pem -noout -ext subjectAltName)
case "$v" in *'IP Address:127.0.0.1'*) ;; *) echo "$v" >&2; exit 1 ;; esac
ossl pkey -in client-enc.key.pem -passin "file:client-enc.pass" -noout

printf '%s' "$dir/ca.pem,$dir/client.cert.pem,$dir/client.key.pem" > zk-cert.txt
printf '%s' "$dir/ca.pem,$dir/client.cert.pem,$dir/client-enc.key.pem,$PASS" > zk-cert-enc.txt

chmod 600 ./*.key ./*.key.pem ./*.keystore.pem
for f in $FILES; do mv -f "$f" "$dir/$f"; done
echo "$VERSION" > "$dir/.complete"
echo "$dir"
