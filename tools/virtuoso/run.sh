#!/usr/bin/env bash
# Run the store contract suite against Virtuoso Open Source 7 on loopback (slow; not in `make test`).
#
#   bash tools/virtuoso/run.sh [extra pytest args]
#
# Installs the Debian packages if missing, starts Virtuoso in a temporary directory with a
# minimal virtuoso.ini, grants SPARQL_UPDATE to the anonymous "SPARQL" user through isql-vt,
# runs tests/remote/test_store_contract.py with KG_TEST_REMOTE=virtuoso, then stops Virtuoso.
set -euo pipefail
cd "$(dirname "$0")/../.."
PYTHON=${PYTHON:-.venv/bin/python}

if ! command -v virtuoso-t >/dev/null 2>&1; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
    virtuoso-opensource-7-bin virtuoso-opensource-7-common
fi

free_port() { "$PYTHON" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
WORK=$(mktemp -d)
SQL_PORT=$(free_port)
HTTP_PORT=$(free_port)
cat > "$WORK/virtuoso.ini" <<INI
[Database]
DatabaseFile = $WORK/virtuoso.db
ErrorLogFile = $WORK/virtuoso.log
LockFile = $WORK/virtuoso.lck
TransactionFile = $WORK/virtuoso.trx
xa_persistent_file = $WORK/virtuoso.pxa
ErrorLogLevel = 7
FileExtend = 200
MaxCheckpointRemap = 2000
Striping = 0
TempStorage = TempDatabase

[TempDatabase]
DatabaseFile = $WORK/virtuoso-temp.db
TransactionFile = $WORK/virtuoso-temp.trx
MaxCheckpointRemap = 2000
Striping = 0

[Parameters]
ServerPort = 127.0.0.1:$SQL_PORT
DisableTcpSocket = 0
ServerThreads = 10
CheckpointInterval = 60
NumberOfBuffers = 10000
MaxDirtyBuffers = 6000
DirsAllowed = ., $WORK
DefaultIsolation = 4

[HTTPServer]
ServerPort = 127.0.0.1:$HTTP_PORT
ServerRoot = $WORK
ServerThreads = 10
MaxClientConnections = 10
KeepAliveTimeout = 10

[SPARQL]
ResultSetMaxRows = 100000
MaxQueryExecutionTime = 60
DefaultQuery = select distinct ?Concept where {[] a ?Concept} LIMIT 100
INI

virtuoso-t +foreground +configfile "$WORK/virtuoso.ini" > "$WORK/stdout.log" 2>&1 &
VIRTUOSO_PID=$!
cleanup() { kill "$VIRTUOSO_PID" 2>/dev/null || true; wait "$VIRTUOSO_PID" 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT

for _ in $(seq 1 120); do
  if isql-vt "$SQL_PORT" dba dba exec="select 1;" >/dev/null 2>&1; then break; fi
  sleep 0.5
done
isql-vt "$SQL_PORT" dba dba exec='GRANT SPARQL_UPDATE TO "SPARQL";' >/dev/null
for _ in $(seq 1 60); do
  if curl -fs "http://127.0.0.1:$HTTP_PORT/sparql?query=ASK%7B%7D" >/dev/null; then break; fi
  sleep 0.5
done
echo "Virtuoso $(virtuoso-t -? 2>&1 | head -1 | tr -d '\r') on http://127.0.0.1:$HTTP_PORT/sparql" >&2

KG_TEST_REMOTE=virtuoso KG_TEST_VIRTUOSO_URL="http://127.0.0.1:$HTTP_PORT" \
  "$PYTHON" -m pytest tests/remote/test_store_contract.py -q -p no:cacheprovider "$@"
