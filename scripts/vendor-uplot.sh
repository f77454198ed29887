#!/usr/bin/env bash
# Vendor uPlot (the dashboard's chart library) from the npm registry into the package.
# Repeatable: the version is pinned here; run `make vendor` and commit the result.
set -euo pipefail
VERSION=1.6.32
DEST="$(cd "$(dirname "$0")/.." && pwd)/crawldash/static/vendor"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
(cd "$WORK" && npm pack "uplot@$VERSION" --silent >/dev/null && tar xzf "uplot-$VERSION.tgz")
mkdir -p "$DEST"
cp "$WORK/package/dist/uPlot.iife.min.js" "$WORK/package/dist/uPlot.min.css" "$DEST/"
cp "$WORK/package/LICENSE" "$DEST/uPlot.LICENSE"
echo "uplot@$VERSION" > "$DEST/VERSION"
echo "vendored uplot@$VERSION into $DEST"
