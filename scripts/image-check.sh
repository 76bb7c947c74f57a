#!/usr/bin/env bash
# Builds the container image from Containerfile with buildah and checks it from inside: the server
# starts as the image's command does, /readyz and the image's HEALTHCHECK answer, the process is not
# root, a Mate life cycle (token, create, take, solve) works, and SIGTERM drains and exits 0
# (scripts/image-check.js). Prints the image's size.
#
# Needs buildah, podman and mmdebstrap (apt-get install -y buildah podman mmdebstrap) and root. No
# registry image is pulled: the base is Debian 13 (trixie, Node.js 20.19 and npm from Debian's
# packages) made with mmdebstrap and given to the build as BASE. The base's tarball is cached in
# QUEUEMATE_IMAGE_CACHE (default /var/cache/queuemate-image-check, outside the clone), so later
# runs skip the minutes mmdebstrap takes (20 on a busy machine); delete it to refresh the base.
# Intermediate layers are cached too (buildah --layers: an unchanged package-lock.json reuses the
# installed dependencies' layer), and so is npm's download cache (the Containerfile's cache mounts).
set -euo pipefail
cd "$(dirname "$0")/.."

CACHE=${QUEUEMATE_IMAGE_CACHE:-/var/cache/queuemate-image-check}
BASE_IMAGE=localhost/queuemate-check-base:trixie
IMAGE=localhost/queuemate:check
CA=/etc/ssl/certs/ca-certificates.crt
started=$SECONDS
say() { printf 'image-check: %s (%d s)\n' "$*" "$((SECONDS - started))"; }

for tool in buildah podman mmdebstrap; do
  command -v "$tool" >/dev/null || { echo "image-check: $tool is not installed (apt-get install -y buildah podman mmdebstrap)" >&2; exit 1; }
done

mkdir -p "$CACHE"
if [[ ! -s "$CACHE/base.tar" ]]; then
  say "making the base image's tarball with mmdebstrap (once; cached in $CACHE)"
  rm -f "$CACHE/base.tar.partial"
  # passwd: useradd, which the Containerfile uses (Debian's slim images have it; the apt variant not)
  mmdebstrap --quiet --variant=apt --format=tar --include=nodejs,npm,ca-certificates,passwd trixie "$CACHE/base.tar.partial"
  mv "$CACHE/base.tar.partial" "$CACHE/base.tar"
fi
if [[ ! "$(podman image inspect --format '{{.Id}}' "$BASE_IMAGE" 2>/dev/null)" ]] || [[ "$CACHE/base.tar" -nt "$CACHE/base.imported" ]]; then
  say "importing $CACHE/base.tar as $BASE_IMAGE"
  podman import --quiet "$CACHE/base.tar" "$BASE_IMAGE" >/dev/null
  touch "$CACHE/base.imported"
fi

say "building $IMAGE from Containerfile (BASE=$BASE_IMAGE)"
previous=$(podman image inspect --format '{{.Id}}' "$IMAGE" 2>/dev/null || true)
# --format docker keeps the HEALTHCHECK (the OCI image format has no field for it); npm in the
# build reaches the registry with the host's CA bundle
buildah bud --quiet --isolation chroot --layers --format docker \
  --build-arg "BASE=$BASE_IMAGE" \
  --volume "$CA:$CA:ro" \
  -f Containerfile -t "$IMAGE" . >/dev/null
current=$(podman image inspect --format '{{.Id}}' "$IMAGE")
if [[ -n "$previous" && "$previous" != "$current" ]]; then podman rmi "$previous" >/dev/null 2>&1 || true; fi
# the image's configuration: its user and its HEALTHCHECK's `node -e` script
config=$(buildah inspect --type image "$IMAGE")
user=$(node -e 'process.stdout.write(JSON.parse(require("fs").readFileSync(0, "utf8")).Docker.config.User ?? "")' <<<"$config")
healthcheck=$(node -e 'const t = JSON.parse(require("fs").readFileSync(0, "utf8")).Docker.config.Healthcheck?.Test ?? [];
  if (t[0] === "CMD" && t[1] === "node" && t[2] === "-e") process.stdout.write(t[3]);' <<<"$config")
base_size=$(podman image inspect --format '{{.Size}}' "$BASE_IMAGE")
size=$(podman image inspect --format '{{.Size}}' "$IMAGE")
say "built $IMAGE: $((size / 1000000)) MB, of which $(((size - base_size) / 1000000)) MB on top of the base; user $user"
[[ "$user" == 10001:10001 ]] || { echo "image-check: FAILED: the image's user is '$user', not 10001:10001" >&2; exit 1; }
# the chroot isolation shares the host's network: a free port of the host, not 8080
port=$(node -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { process.stdout.write(String(s.address().port)); s.close(); });')

container=$(buildah from --quiet "$IMAGE")
trap 'buildah rm "$container" >/dev/null 2>&1 || true' EXIT
say "running the check inside $container"
buildah run --isolation chroot \
  --env "PORT=$port" \
  --env "HEALTHCHECK_SCRIPT=$healthcheck" \
  --volume "$PWD/scripts/image-check.js:/tmp/image-check.js:ro" \
  "$container" -- node /tmp/image-check.js

# cached layers no build has used for a week (a changed lockfile leaves its old npm ci layer behind)
podman image prune --force --filter until=168h >/dev/null 2>&1 || true
say "passed"
