#!/usr/bin/env bash
# The Debian packages `make test` and `make serve` need beside Python: a Java JDK (the OWL API
# ontology check), Chromium with its driver (the query page's browser test) and Node.js/npm
# (YASGUI's files, the comunica client test). As root, missing ones are installed with apt-get;
# as anyone else, one line names them and the command that installs them, and the script fails
# before anything else runs. The commands looked for can be overridden (JAVAC, CHROMIUM,
# CHROMEDRIVER, NPM) so a test can stand for a machine without them.
set -euo pipefail

javac_bin="${JAVAC:-javac}"
chromium_bin="${CHROMIUM:-/usr/bin/chromium}"
chromedriver_bin="${CHROMEDRIVER:-chromedriver}"
npm_bin="${NPM:-npm}"

missing=()
command -v "${javac_bin}" >/dev/null 2>&1 || missing+=(default-jdk-headless)
if [[ ! -x "${chromium_bin}" ]] || ! command -v "${chromedriver_bin}" >/dev/null 2>&1; then
    missing+=(chromium chromium-driver)
fi
command -v "${npm_bin}" >/dev/null 2>&1 || missing+=(nodejs npm)

if [[ ${#missing[@]} -eq 0 ]]; then
    exit 0
fi
if [[ "$(id -u)" -ne 0 ]]; then
    echo "jido-kg needs these Debian packages: ${missing[*]}; install them with: sudo make system-deps" >&2
    exit 1
fi
echo "installing ${missing[*]} from Debian"
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
