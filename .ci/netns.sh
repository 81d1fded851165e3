# shellcheck shell=bash
# Sourced by .ci/run: the test hosts of tests/support/hosts.py (network namespaces on a bridge,
# link faults as iptables rules) need `ip` (iproute2) and `iptables`. Installed from Debian
# when missing (needs root and apt); without them those tests skip, saying why.

flexjob_netns_install() {
  local missing=()
  command -v ip >/dev/null 2>&1 || missing+=(iproute2)
  command -v iptables >/dev/null 2>&1 || missing+=(iptables)
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "netns.sh: installing ${missing[*]} from Debian" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q "${missing[@]}" >&2 \
      || { apt-get update -q >&2 && apt-get install -y -q "${missing[@]}" >&2; } \
      || echo "netns.sh: could not install ${missing[*]}; the test-host tests will skip" >&2
  fi
}

flexjob_netns_install
