# Sourced by benchmarks: Debian's nghttpx (package nghttp2-proxy, installed if missing) as an
# HTTPS front end of the sandbox, as Apple's edge is: frontend TLS with ALPN h2 and http/1.1,
# backend the sandbox (its own HTTPS when it has it), HTTP/1.1, pooled.
#
#   edge_proxy_start WORKDIR SANDBOX_URL [SANDBOX_CA]
#
# Sets proxy_url (https://127.0.0.1:PORT), proxy_pid (kill it when done) and proxy_trust: a PEM
# bundle of the proxy's certificate and the sandbox's CA, for SIWA_CA_FILE. One worker thread, no
# access log (it costs CPU), 100 streams per HTTP/2 connection.
edge_proxy_start() {
  local work=$1 sandbox_url=$2 sandbox_ca=${3:-} port backend
  if ! command -v nghttpx >/dev/null; then
    echo "installing: nghttp2-proxy" >&2
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nghttp2-proxy >/dev/null
  fi
  # The proxy's certificate (P-256, 127.0.0.1 and localhost, one day), made with the openssl CLI.
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj "/CN=siwa bench edge proxy" \
    -addext "subjectAltName=IP:127.0.0.1,DNS:localhost" -keyout "$work/proxy.key" -out "$work/proxy.pem" 2>/dev/null
  cat "$work/proxy.pem" ${sandbox_ca:+"$sandbox_ca"} > "$work/trust.pem"
  proxy_trust=$work/trust.pem
  port=$(python3 -c "import socket; s=socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
  backend="127.0.0.1,${sandbox_url##*:};;proto=http/1.1"
  local backend_tls=()
  if [ "${sandbox_url%%:*}" = https ]; then
    backend="$backend;tls;sni=localhost"   # nghttpx checks the backend's name (not an IP SAN)
    backend_tls=(--cacert="$sandbox_ca")
  fi
  nghttpx --conf=/dev/null --no-ocsp --frontend="127.0.0.1,$port" --backend="$backend" "${backend_tls[@]}" --workers=1 \
    --frontend-http2-max-concurrent-streams=100 --backend-keep-alive-timeout=30s \
    --errorlog-file="$work/nghttpx.err" "$work/proxy.key" "$work/proxy.pem" &
  proxy_pid=$!
  for _ in $(seq 1 100); do
    curl -s -o /dev/null --cacert "$work/proxy.pem" "https://127.0.0.1:$port/" && break; sleep 0.1
  done
  proxy_url="https://127.0.0.1:$port"
}

# CPU seconds (user + system) of a process and its live children (nghttpx forks its worker).
tree_cpu() {
  python3 - "$1" <<'PY'
import os, sys
tick, root, total = os.sysconf("SC_CLK_TCK"), int(sys.argv[1]), 0
for entry in os.listdir("/proc"):
    if not entry.isdigit():
        continue
    try:
        raw = open(f"/proc/{entry}/stat").read()
    except OSError:
        continue
    f = raw[raw.rindex(")") + 2:].split()
    if int(entry) == root or int(f[1]) == root:
        total += int(f[11]) + int(f[12])
print(total / tick)
PY
}
