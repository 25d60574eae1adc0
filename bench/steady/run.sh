#!/usr/bin/env bash
# leasehold and graphile-worker side by side under the same steady stream on one PostgreSQL, each in
# a fresh database of its own (soak_lh, soak_gw), then the comparison (compare.mjs). Needs `npm run build`.
#   MINUTES=15 RATE=200 bash bench/steady/run.sh [output directory]
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-$(mktemp -d)}
mkdir -p "$out"
base=${PG_BASE:-postgres://postgres@127.0.0.1:5432}
for db in soak_lh soak_gw; do
  psql "$base/postgres" -qc "DROP DATABASE IF EXISTS $db WITH (FORCE)"
  psql "$base/postgres" -qc "CREATE DATABASE $db"
done
URL="$base/soak_lh" node --expose-gc bench/steady/leasehold.mjs > "$out/leasehold.log" 2> "$out/leasehold.err" &
lh=$!
URL="$base/soak_gw" node --expose-gc bench/steady/graphile.mjs > "$out/graphile.log" 2> "$out/graphile.err" &
gw=$!
wait $lh $gw
echo "logs in $out"
node bench/steady/compare.mjs "$out/leasehold.log" "$out/graphile.log"
