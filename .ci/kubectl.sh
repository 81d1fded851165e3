# shellcheck shell=bash
# Sourced by .ci/run: make sure `kubectl` is on PATH for tests/operator/test_kubectl.py (kubectl
# against the Kubernetes emulator). Any kubectl already installed is used as it is; otherwise
# Debian's `kubernetes-client` is installed (needs root and apt). Without one, those tests skip.

flexjob_kubectl_install() {
  command -v kubectl >/dev/null 2>&1 && return 0
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "kubectl.sh: installing kubectl (kubernetes-client) from Debian" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q kubernetes-client >&2 \
      || { apt-get update -q >&2 && apt-get install -y -q kubernetes-client >&2; } \
      || echo "kubectl.sh: could not install kubernetes-client; kubectl tests will skip" >&2
  fi
}

flexjob_kubectl_install
