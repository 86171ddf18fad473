#!/usr/bin/env bash
# Build images once per release run and share them through the GitHub container registry.
#   ci/images.sh push TARGET   build the image TARGET builds in and push it under its
#                              content-addressed tag, unless the registry already has that tag
#   ci/images.sh pull TARGET   pull that image and give it the local tag the build looks for
#                              (no image in the registry: a warning, and the build builds it)
# The tag comes from `nox -s images -- --target TARGET --dry-run` (localhost/builders-FAMILY:HASH);
# in the registry it is $REGISTRY/builders-FAMILY:HASH.
# Environment: REGISTRY (default ghcr.io/<owner>/<repository>, lower-case), CONTAINER_ENGINE
# (default podman where there is one, else docker), REGISTRY_USER and REGISTRY_TOKEN (a token
# that may read, or for push write, packages).
set -euo pipefail

engine=${CONTAINER_ENGINE:-}
if [ -z "$engine" ]; then  # what the build will use: podman first, as builders' engine search does
  engine=docker
  command -v podman >/dev/null && engine=podman
fi
repository=${GITHUB_REPOSITORY:-}
registry=${REGISTRY:-${repository:+ghcr.io/${repository,,}}}

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
  [ -n "${REGISTRY_TOKEN:-}" ] || { echo "no REGISTRY_TOKEN: not logging in to ${registry%%/*}"; return 0; }
  printf '%s' "$REGISTRY_TOKEN" | "$engine" login --username "${REGISTRY_USER:?}" --password-stdin "${registry%%/*}"
}

# Whether the registry has the tag, without pulling it.
exists() {
  if command -v skopeo >/dev/null; then
    skopeo inspect --raw "docker://$1" >/dev/null 2>&1
  else
    docker manifest inspect "$1" >/dev/null 2>&1
  fi
}

push() {
  local tag remote
  tag=$(local_tag "$1")
  remote=$(remote_of "$tag")
  login
  if exists "$remote"; then
    echo "$remote exists: not built, not pushed"
    return 0
  fi
  nox -s images -- --target "$1" --container-engine "$engine"
  "$engine" tag "$tag" "$remote"
  "$engine" push "$remote"
  echo "pushed $remote"
}

pull() {
  local tag remote
  tag=$(local_tag "$1")
  remote=$(remote_of "$tag")
  login
  if "$engine" pull "$remote"; then
    "$engine" tag "$remote" "$tag"
    echo "$tag from $remote"
  else
    echo "::warning::$remote could not be pulled; the build builds $tag itself"
  fi
}

[ $# -eq 2 ] || die "usage: ci/images.sh push|pull TARGET"
case $1 in
  push) push "$2" ;;
  pull) pull "$2" ;;
  *) die "usage: ci/images.sh push|pull TARGET" ;;
esac
