#!/usr/bin/env bash
# The bucket's credentials for the job's later steps, the standard way: boto3 (builders publish,
# promote-release) reads them from the AWS environment. Endpoint and region come from the job's env
# (AWS_ENDPOINT_URL, AWS_REGION: repository variables), so an S3-compatible store works as AWS does.
#   AWS_ROLE_ARN set (AWS, or a store that trusts GitHub's OIDC issuer): a GitHub OIDC token for
#     audience sts.amazonaws.com is written to a file and AWS_WEB_IDENTITY_TOKEN_FILE, AWS_ROLE_ARN
#     and AWS_ROLE_SESSION_NAME go to $GITHUB_ENV; boto3 assumes the role itself
#     (AssumeRoleWithWebIdentity) at its first request. Needs `id-token: write`; no secret.
#   otherwise: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY must be in the environment (secrets of
#     the job's environment), or nothing is written and the job fails here, not halfway.
#   usage: ci/bucket-credentials.sh
set -euo pipefail

die() { echo "::error::ci/bucket-credentials.sh: $*"; exit 1; }

[ -n "${INDEX_BUCKET:-}" ] || die "INDEX_BUCKET (s3://BUCKET/ or s3://BUCKET/PREFIX/) is not set: set the repository variable"
if [ -n "${AWS_ROLE_ARN:-}" ]; then
  [ -n "${ACTIONS_ID_TOKEN_REQUEST_URL:-}" ] && [ -n "${ACTIONS_ID_TOKEN_REQUEST_TOKEN:-}" ] \
    || die "AWS_ROLE_ARN is set but the job cannot mint an OIDC token: give it permissions id-token: write"
  token_file=${RUNNER_TEMP:?}/bucket-web-identity-token
  umask 077
  curl --fail --silent --show-error --retry 3 -H "Authorization: bearer $ACTIONS_ID_TOKEN_REQUEST_TOKEN" \
    "$ACTIONS_ID_TOKEN_REQUEST_URL&audience=sts.amazonaws.com" | jq -er '.value' > "$token_file" \
    || die "no OIDC token from GitHub"
  echo "::add-mask::$(cat "$token_file")"
  {
    echo "AWS_WEB_IDENTITY_TOKEN_FILE=$token_file"
    echo "AWS_ROLE_ARN=$AWS_ROLE_ARN"
    echo "AWS_ROLE_SESSION_NAME=builders-${GITHUB_RUN_ID:-run}-${GITHUB_JOB:-job}"
  } >> "${GITHUB_ENV:?ci/bucket-credentials.sh writes to \$GITHUB_ENV}"
  echo "bucket credentials: OIDC, role $AWS_ROLE_ARN"
elif [ -n "${AWS_ACCESS_KEY_ID:-}" ] && [ -n "${AWS_SECRET_ACCESS_KEY:-}" ]; then
  echo "bucket credentials: access key from the environment's secrets"
else
  die "no bucket credentials: set the variable AWS_ROLE_ARN (OIDC) or the secrets AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
fi
echo "bucket: $INDEX_BUCKET, endpoint: ${AWS_ENDPOINT_URL:-AWS}"
