#!/usr/bin/env bash
# `npm run test:unit`: the server-free test files listed in test/unit-tests.txt, with no nats-server and no
# open port (test/helpers/no-servers.ts refuses both). The build is incremental (its state kept in dist/,
# so a deleted dist/ means a full build), so a run after a small change does not wait for a full `tsc`.
set -euo pipefail
cd "$(dirname "$0")/.."
npx tsc -p . --incremental --tsBuildInfoFile dist/.tsbuildinfo
mapfile -t files < <(grep -Ev '^[[:space:]]*(#|$)' test/unit-tests.txt | sed -E 's#^test/(.*)\.ts$#dist/test/\1.js#')
bash scripts/ensure-tap-build.sh
exec npx tap --node-arg=--import=./dist/test/helpers/no-servers.js "${files[@]}"
