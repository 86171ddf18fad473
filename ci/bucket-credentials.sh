#!/usr/bin/env bash
# The bucket's credentials for the job's later steps, the standard way: boto3 (builders publish,
# promote-release) reads them from the AWS environment. Endpoint and region come from the job's env
# (AWS_ENDPOINT_URL, AWS_REGION: repository variables), so an S3-compatible store works as AWS does.
#   AWS_ROLE_ARN set (AWS, or a store that trusts GitHub's OIDC issuer): the job's GitHub OIDC token
#     (audience sts.amazonaws.com, valid about 5 minutes) is exchanged here, at once, for a session of
#     the role (AssumeRoleWithWebIdentity at AWS_ENDPOINT_URL_STS or AWS_ENDPOINT_URL, else AWS's STS;
#     builders/channels/credentials.py). Its AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and
#     AWS_SESSION_TOKEN (masked in the log), AWS_CREDENTIAL_EXPIRATION, BUCKET_SESSION_SECONDS and
#     AWS_ROLE_SESSION_NAME go to $GITHUB_ENV: a refused token or role fails this step, not a publish
#     halfway. The session lasts BUCKET_SESSION_SECONDS (the workflow passes the job's timeout; held to
#     900..43200; the role's MaxSessionDuration must allow it), and builders' own commands renew it,
#     with a new token, some minutes before it ends. Needs `id-token: write`; no secret.
#   otherwise: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY must be in the environment (secrets of
#     the job's environment), or nothing is written and the job fails here, not halfway.
# PYTHON (default python) is the interpreter builders is installed in.
#   usage: ci/bucket-credentials.sh
set -euo pipefail

die() { echo "::error::ci/bucket-credentials.sh: $*"; exit 1; }

[ -n "${INDEX_BUCKET:-}" ] || die "INDEX_BUCKET (s3://BUCKET/ or s3://BUCKET/PREFIX/) is not set: set the repository variable"
if [ -n "${AWS_ROLE_ARN:-}" ]; then
  [ -n "${ACTIONS_ID_TOKEN_REQUEST_URL:-}" ] && [ -n "${ACTIONS_ID_TOKEN_REQUEST_TOKEN:-}" ] \
    || die "AWS_ROLE_ARN is set but the job cannot mint an OIDC token: give it permissions id-token: write"
  : "${GITHUB_ENV:?ci/bucket-credentials.sh writes to \$GITHUB_ENV}"
  # The environment is handed to builders as a mapping (it reads no os.environ of its own).
  "${PYTHON:-python}" -c 'import os, sys
from builders.channels import credentials
sys.exit(credentials.main(sys.argv[1:], dict(os.environ)))' exchange \
    || die "no session of role $AWS_ROLE_ARN (above: what GitHub's token service or STS answered)"
elif [ -n "${AWS_ACCESS_KEY_ID:-}" ] && [ -n "${AWS_SECRET_ACCESS_KEY:-}" ]; then
  echo "bucket credentials: access key from the environment's secrets"
else
  die "no bucket credentials: set the variable AWS_ROLE_ARN (OIDC) or the secrets AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
fi
echo "bucket: $INDEX_BUCKET, endpoint: ${AWS_ENDPOINT_URL:-AWS}"
