#!/usr/bin/env bash
# Rebuilds the vendored browser libraries in static/vendor/ from the exact versions in package.json:
#   codemirror-<version>-<hash>.bundle.js  (one minified ES module, see codemirror-entry.js; the hash
#                                   of its content names it: browsers cache it as immutable)
#   socket.io-<version>.min.js      (the Socket.IO client, a plain script defining `io`)
#   plotly-<version>.min.js         (plotly.js, a plain script defining `Plotly`)
# Needs node and npm; run from anywhere: bash static/vendor/build/build.sh
set -euo pipefail
cd "$(dirname "$0")"
npm ci --no-audit --no-fund
version() { node -p "require('./node_modules/$1/package.json').version"; }

rm -f ../codemirror-*.bundle.js ../socket.io-*.min.js ../plotly-*.min.js
./node_modules/.bin/esbuild codemirror-entry.js --bundle --minify --format=esm \
  --legal-comments=eof --banner:js="/* CodeMirror 6 and its Lezer parsers, MIT License (codemirror.net). Built by static/vendor/build/build.sh. */" --outfile=codemirror.bundle.js
mv codemirror.bundle.js "../codemirror-$(version codemirror)-$(sha256sum codemirror.bundle.js | cut -c1-8).bundle.js"
echo "templates/editor.html's import map names the bundle: update it to the name above."
cp node_modules/socket.io-client/dist/socket.io.min.js "../socket.io-$(version socket.io-client).min.js"
cp node_modules/plotly.js-dist-min/plotly.min.js "../plotly-$(version plotly.js-dist-min).min.js"
ls -l ../*.js
