#!/usr/bin/env bash
# The shared compile cache for a build job's later steps (docs/compile-cache.md), from the
# repository's variables and secrets. builders decides by itself what the run may do with it
# (write only in the scheduled run of the default branch, read elsewhere: GITHUB_EVENT_NAME,
# GITHUB_REF and the matrix's compile_cache.trusted); this script only says where it is and
# hands the credentials over, to $GITHUB_ENV, from where a container build gets them by name.
#   COMPILE_CACHE empty: nothing (each job keeps its own ccache, as without the key).
#   COMPILE_CACHE (s3://BUCKET/PREFIX, redis://..., http(s)://...): BUILDERS_COMPILER_CACHE.
#   For s3://: COMPILE_CACHE_ENDPOINT (an S3-compatible store; empty: AWS) and
#   COMPILE_CACHE_REGION go to SCCACHE_ENDPOINT (SCCACHE_S3_USE_SSL=false for http://) and
#   SCCACHE_REGION; the credentials, in this order:
#     COMPILE_CACHE_WRITER_ROLE_ARN on a trusted run, else COMPILE_CACHE_ROLE_ARN (the reader):
#       a GitHub OIDC token (audience sts.amazonaws.com) exchanged for the role's temporary keys
#       (AssumeRoleWithWebIdentity through boto3, which the lock pins), masked. Needs
#       `id-token: write`. Keys, not a token file: the build's container sees no runner file.
#     COMPILE_CACHE_ACCESS_KEY_ID and COMPILE_CACHE_SECRET_ACCESS_KEY (secrets; a store without
#       OIDC): exported as AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY.
#     none: SCCACHE_S3_NO_CREDENTIALS=true (a public-read store: reads only).
#   TRUSTED (true/false, from the workflow: the scheduled run of the default branch) picks the
#   writer role; it grants nothing by itself: the role's own trust policy decides who may assume it.
#   usage: ci/compile-cache.sh
set -euo pipefail

die() { echo "::error::ci/compile-cache.sh: $*"; exit 1; }
env_out=${GITHUB_ENV:?ci/compile-cache.sh writes to \$GITHUB_ENV}

location=${COMPILE_CACHE:-}
if [ -z "$location" ]; then
  echo "no shared compile cache (the variable COMPILE_CACHE is empty): each job keeps its own ccache"
  exit 0
fi
echo "BUILDERS_COMPILER_CACHE=$location" >> "$env_out"
case $location in
  s3://*) ;;
  redis://* | rediss://* | http://* | https://*)
    echo "compile cache: $location (credentials, if any, from the store's own variables)"; exit 0 ;;
  *) die "COMPILE_CACHE is '$location', not s3://, redis:// or http(s)://" ;;
esac

endpoint=${COMPILE_CACHE_ENDPOINT:-}
if [ -n "$endpoint" ]; then
  echo "SCCACHE_ENDPOINT=$endpoint" >> "$env_out"
  [[ $endpoint != http://* ]] || echo "SCCACHE_S3_USE_SSL=false" >> "$env_out"
fi
echo "SCCACHE_REGION=${COMPILE_CACHE_REGION:-us-east-1}" >> "$env_out"

role=${COMPILE_CACHE_ROLE_ARN:-}
[ "${TRUSTED:-false}" != true ] || role=${COMPILE_CACHE_WRITER_ROLE_ARN:-$role}
if [ -n "$role" ]; then
  [ -n "${ACTIONS_ID_TOKEN_REQUEST_URL:-}" ] && [ -n "${ACTIONS_ID_TOKEN_REQUEST_TOKEN:-}" ] \
    || die "a compile-cache role is set but the job cannot mint an OIDC token: give it permissions id-token: write"
  token=$(curl --fail --silent --show-error --retry 3 -H "Authorization: bearer $ACTIONS_ID_TOKEN_REQUEST_TOKEN" \
    "$ACTIONS_ID_TOKEN_REQUEST_URL&audience=sts.amazonaws.com" | jq -er '.value') || die "no OIDC token from GitHub"
  echo "::add-mask::$token"
  ROLE=$role TOKEN=$token python - "$env_out" <<'EOF'
import os, sys
import boto3
kwargs = {"endpoint_url": os.environ["COMPILE_CACHE_STS_ENDPOINT"]} if os.environ.get("COMPILE_CACHE_STS_ENDPOINT") else {}
sts = boto3.client("sts", region_name=os.environ.get("COMPILE_CACHE_REGION") or "us-east-1", **kwargs)
name = f"builders-cache-{os.environ.get('GITHUB_RUN_ID', 'run')}-{os.environ.get('GITHUB_JOB', 'job')}"[:64]
keys = sts.assume_role_with_web_identity(RoleArn=os.environ["ROLE"], RoleSessionName=name,
                                         WebIdentityToken=os.environ["TOKEN"], DurationSeconds=3600)["Credentials"]
values = {"AWS_ACCESS_KEY_ID": keys["AccessKeyId"], "AWS_SECRET_ACCESS_KEY": keys["SecretAccessKey"],
          "AWS_SESSION_TOKEN": keys["SessionToken"]}
for value in values.values():
    print(f"::add-mask::{value}")
with open(sys.argv[1], "a") as out:
    out.writelines(f"{name}={value}\n" for name, value in values.items())
EOF
  echo "compile cache: $location, OIDC role $role"
elif [ -n "${COMPILE_CACHE_ACCESS_KEY_ID:-}" ] && [ -n "${COMPILE_CACHE_SECRET_ACCESS_KEY:-}" ]; then
  {
    echo "AWS_ACCESS_KEY_ID=$COMPILE_CACHE_ACCESS_KEY_ID"
    echo "AWS_SECRET_ACCESS_KEY=$COMPILE_CACHE_SECRET_ACCESS_KEY"
  } >> "$env_out"
  echo "compile cache: $location, access key from the secrets"
else
  echo "SCCACHE_S3_NO_CREDENTIALS=true" >> "$env_out"
  echo "compile cache: $location, no credentials (a public-read store: this job reads only)"
fi
echo "compile cache endpoint: ${endpoint:-AWS}"
