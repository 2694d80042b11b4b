#!/bin/sh
# vit serve's web page in a real browser (tests/browser/page.test.js): Debian's chromium driven
# by playwright-core from npm. Needs chromium (apt-get install chromium), node and
# tests/browser/node_modules (cd tests/browser && npm ci); skips loudly without them.
# VIT_CHROMIUM=... picks another browser binary. Prints a cmocka-style summary for tests/run.
set -u
cd "$(dirname "$0")/.." || exit 1
skip() {
    echo "SKIP browser: $*"
    echo "[  SKIPPED ] 1 test(s), listed below:"
    exit 0
}
chromium=${VIT_CHROMIUM:-/usr/bin/chromium}
[ -x "$chromium" ] || skip "no $chromium (Debian: apt-get install chromium)"
command -v node >/dev/null 2>&1 || skip "no node (Debian: apt-get install nodejs npm)"
[ -f tests/browser/node_modules/playwright-core/package.json ] ||
    skip "no playwright-core (cd tests/browser && npm ci)"
[ -x "${VIT_BIN:-bin/vit}" ] || skip "no ${VIT_BIN:-bin/vit} (make)"
"${VIT_BIN:-bin/vit}" serve --port 0 -m /nonexistent 2>&1 | grep -q "not built in" &&
    skip "this vit has no serve (built without libmicrohttpd)"
if VIT_CHROMIUM=$chromium node tests/browser/page.test.js; then
    echo "[  PASSED  ] 1 test(s)."
else
    echo "[  FAILED  ] 1 test(s), listed below:"
    exit 1
fi
