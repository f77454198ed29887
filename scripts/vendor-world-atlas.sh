#!/usr/bin/env bash
# Vendor the map's world outlines into the package: Natural Earth's 110m countries (public
# domain) as TopoJSON, from the npm `world-atlas` package (ISC), and the ISO 3166-1 table
# that names its countries' numeric codes by their two letters (the crawls' country codes),
# from `i18n-iso-countries` (MIT). Repeatable: the versions are pinned here; run
# `make vendor` and commit the result.
set -euo pipefail
ATLAS=2.0.2
CODES=7.14.0
DEST="$(cd "$(dirname "$0")/.." && pwd)/crawldash/static/vendor"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
(cd "$WORK" && npm pack "world-atlas@$ATLAS" "i18n-iso-countries@$CODES" --silent >/dev/null)
mkdir -p "$WORK/atlas" "$WORK/codes" "$DEST"
tar xzf "$WORK/world-atlas-$ATLAS.tgz" -C "$WORK/atlas"
tar xzf "$WORK/i18n-iso-countries-$CODES.tgz" -C "$WORK/codes"
cp "$WORK/atlas/package/countries-110m.json" "$DEST/"
cp "$WORK/atlas/package/LICENSE" "$DEST/world-atlas.LICENSE"
cp "$WORK/codes/package/codes.json" "$DEST/iso-3166-codes.json"
cp "$WORK/codes/package/LICENSE" "$DEST/iso-3166-codes.LICENSE"
cat > "$DEST/world-atlas.VERSION" <<VERSIONS
world-atlas@$ATLAS countries-110m.json: Natural Earth 4.1.0 (public domain), ISC licence
i18n-iso-countries@$CODES codes.json (as iso-3166-codes.json): MIT licence
VERSIONS
echo "vendored world-atlas@$ATLAS and i18n-iso-countries@$CODES into $DEST"
