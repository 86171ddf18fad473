#!/usr/bin/env bash
# Build images once per release run and share them through a container registry, by digest.
#   ci/images.sh push TARGET REF_FILE   build the image TARGET builds in (always: a tag in the
#                                       registry proves nothing about what it holds), push it
#                                       under its content-addressed tag, and write the pushed
#                                       reference, REGISTRY/NAME@sha256:..., to REF_FILE and
#                                       name=/digest= to $GITHUB_OUTPUT (for the attestation)
#   ci/images.sh pull TARGET REF_FILE   pull exactly that digest and give it the local tag the
#                                       build looks for; no REF_FILE (its images job failed): on
#                                       a release (RELEASE=true) an error, since a release ships
#                                       only wheels built in images its images jobs pushed and
#                                       attested; otherwise a warning, and the build builds the
#                                       image itself from the same digest-pinned base. A pull
#                                       that fails is an error.
# The tag comes from `nox -s images -- --target TARGET --dry-run` (localhost/builders-FAMILY:HASH);
# in the registry it is $REGISTRY/builders-FAMILY:HASH.
# Environment: REGISTRY (default ghcr.io/<owner>/<repository>, lower-case), CONTAINER_ENGINE
# (default podman where there is one, else docker), REGISTRY_USER and REGISTRY_TOKEN (a token
# that may read, or for push write, packages). A registry without TLS (a local one) is declared
# to the engine the usual way (registries.conf, CONTAINERS_REGISTRIES_CONF), not here.
# The login goes to ~/.docker/config.json, whatever the engine: actions/attest's push-to-registry
# reads registry credentials from that file only (sigstore-js, packages/oci/src/credentials.ts:
# os.homedir()/.docker/config.json, its `auths`), and podman's default, $XDG_RUNTIME_DIR/
# containers/auth.json, would leave the attestation signed and its push refused.
set -euo pipefail

engine=${CONTAINER_ENGINE:-}
if [ -z "$engine" ]; then  # what the build will use: podman first, as builders' engine search does
  engine=docker
  command -v podman >/dev/null && engine=podman
fi
repository=${GITHUB_REPOSITORY:-}
registry=${REGISTRY:-${repository:+ghcr.io/${repository,,}}}
authfile="$HOME/.docker/config.json"
export REGISTRY_AUTH_FILE=$authfile  # podman's push and pull read the same file

die() { echo "::error::ci/images.sh: $*"; exit 1; }

# The local tag of TARGET's image, as `images --dry-run` prints it in the build command.
local_tag() {
  nox -s images -- --target "$1" --dry-run --container-engine "$engine" | python3 -c '
import shlex, sys
argv = shlex.split(sys.stdin.read())
tags = sorted({argv[i + 1] for i, arg in enumerate(argv[:-1]) if arg == "--tag"})
if len(tags) != 1:
    sys.exit(f"expected one image tag from images --dry-run, found {tags}")
print(tags[0])'
}

remote_of() {
  local name=${1#localhost/}
  [ -n "$registry" ] || die "set REGISTRY (or GITHUB_REPOSITORY): where the images live"
  [[ $name == builders-*:* ]] || die "unexpected image tag '$1' (want localhost/builders-FAMILY:HASH)"
  echo "$registry/$name"
}

login() {
  local host=${registry%%/*}
  [ -n "${REGISTRY_TOKEN:-}" ] || { echo "no REGISTRY_TOKEN: not logging in to $host"; return 0; }
  mkdir -p "$(dirname "$authfile")"
  if [ "$engine" = podman ]; then
    printf '%s' "$REGISTRY_TOKEN" | podman login --authfile "$authfile" --username "${REGISTRY_USER:?}" --password-stdin "$host"
  else
    printf '%s' "$REGISTRY_TOKEN" | docker --config "$(dirname "$authfile")" login --username "${REGISTRY_USER:?}" --password-stdin "$host"
  fi
  # A credential store (credsStore) would keep the secret out of the file, where attest cannot read it.
  python3 -c 'import json, sys; auths = json.load(open(sys.argv[1])).get("auths") or {}
sys.exit(0 if any(sys.argv[2] in k and v.get("auth") for k, v in auths.items()) else 1)' "$authfile" "$host" \
    || die "the login to $host left no credentials in $authfile, where actions/attest reads them"
}

push() {
  local tag remote digestfile digest
  tag=$(local_tag "$1")
  remote=$(remote_of "$tag")
  login
  nox -s images -- --target "$1" --container-engine "$engine"
  "$engine" tag "$tag" "$remote"
  digestfile=$(mktemp)
  if [ "$engine" = podman ]; then
    podman push --digestfile "$digestfile" "$remote"
  else
    docker push "$remote"
    docker inspect --format '{{range .RepoDigests}}{{println .}}{{end}}' "$remote" | sed -n "s|^${remote%:*}@||p" | head -n1 > "$digestfile"
  fi
  digest=$(tr -d '[:space:]' < "$digestfile")
  [[ $digest =~ ^sha256:[0-9a-f]{64}$ ]] || die "no digest for $remote after the push (got '$digest')"
  mkdir -p "$(dirname "$2")"
  echo "${remote%:*}@$digest" > "$2"
  [ -z "${GITHUB_OUTPUT:-}" ] || printf 'name=%s\ndigest=%s\n' "${remote%:*}" "$digest" >> "$GITHUB_OUTPUT"
  echo "pushed $remote as ${remote%:*}@$digest"
}

pull() {
  local tag reference
  tag=$(local_tag "$1")
  if [ ! -f "$2" ]; then
    [ "${RELEASE:-false}" != true ] || die "no image reference at $2: a release builds only in images its images jobs pushed and attested"
    echo "::warning::no image reference at $2 (its images job failed?): the build builds $tag itself"
    return 0
  fi
  reference=$(tr -d '[:space:]' < "$2")
  [[ $reference == *@sha256:* ]] || die "$2 holds '$reference', not a reference by digest"
  login
  "$engine" pull "$reference" || die "cannot pull $reference (the image its images job pushed)"
  "$engine" tag "$reference" "$tag"
  echo "$tag from $reference"
}

[ $# -eq 3 ] || die "usage: ci/images.sh push|pull TARGET REF_FILE"
case $1 in
  push) push "$2" "$3" ;;
  pull) pull "$2" "$3" ;;
  *) die "usage: ci/images.sh push|pull TARGET REF_FILE" ;;
esac
