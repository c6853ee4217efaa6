#!/bin/sh
# Install code-server (VS Code 1.96.4 in a browser) from the npm registry into a cache folder,
# for the real-VS-Code test (e2e/chat.e2e.mjs). Its own postinstall cannot run here, so this
# does what it does, three ways round:
#   - lib/vscode wants @vscode/proxy-agent from a git commit: take the registry's 0.27.0 tarball;
#   - kerberos builds against Debian's Kerberos headers (libkrb5-dev) instead of a prebuilt binary;
#   - @vscode/ripgrep would download rg from GitHub: Debian's rg is linked in its place.
# Native modules are built from source with node-gyp against the local node headers (node 20).
# Idempotent: a finished install leaves .installed and is reused (the cache survives `make clean`).
set -eu

VERSION=4.96.4
CACHE="${CODE_SERVER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/context-sidecar/code-server-$VERSION}"
if [ -f "$CACHE/.installed" ]; then
  echo "$CACHE"
  exit 0
fi

need_apt=""
[ -x /usr/bin/chromium ] || need_apt="$need_apt chromium"
[ -x /usr/bin/rg ] || need_apt="$need_apt ripgrep"
[ -f /usr/include/krb5.h ] || [ -f /usr/include/gssapi/gssapi.h ] || need_apt="$need_apt libkrb5-dev"
command -v g++ >/dev/null 2>&1 || need_apt="$need_apt g++ make"
command -v python3 >/dev/null 2>&1 || need_apt="$need_apt python3"
if [ -n "$need_apt" ]; then
  echo "installing Debian packages:$need_apt" >&2
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $need_apt >/dev/null
fi

major=$(node -p 'process.versions.node.split(".")[0]')
[ "$major" = 20 ] || { echo "code-server $VERSION needs node 20 (this is node $major)" >&2; exit 1; }

NPM_FLAGS="--omit=dev --ignore-scripts --no-audit --no-fund --loglevel=error"
work="$CACHE.partial"
rm -rf "$work"
mkdir -p "$work"
cd "$work"
npm pack "code-server@$VERSION" --silent >/dev/null
tar xzf "code-server-$VERSION.tgz" --strip-components=1
rm "code-server-$VERSION.tgz"

# code-server's own dependencies; argon2 (password auth) is built too, though the test runs --auth none.
npm install $NPM_FLAGS >&2
npm rebuild argon2 --build-from-source --loglevel=error >&2

cd lib/vscode
node -e '
  const fs = require("fs");
  const file = "npm-shrinkwrap.json";
  const lock = JSON.parse(fs.readFileSync(file, "utf8"));
  const entry = lock.packages["node_modules/@vscode/proxy-agent"];
  const { execFileSync } = require("child_process");
  const dist = JSON.parse(execFileSync("npm", ["view", "@vscode/proxy-agent@" + entry.version, "dist", "--json"], { encoding: "utf8" }));
  entry.resolved = dist.tarball;
  entry.integrity = dist.integrity;
  fs.writeFileSync(file, JSON.stringify(lock, null, 2));
'
npm install $NPM_FLAGS >&2
# the native modules Linux needs (the windows-* ones are for Windows; ripgrep is Debian's)
npm rebuild @parcel/watcher @vscode/deviceid @vscode/spdlog kerberos native-watchdog node-pty \
  --build-from-source --loglevel=error >&2
mkdir -p node_modules/@vscode/ripgrep/bin
ln -sf /usr/bin/rg node_modules/@vscode/ripgrep/bin/rg
ln -sfn node_modules node_modules.asar
(cd bin/remote-cli && ln -sf code-linux.sh code-server)
(cd bin/helpers && ln -sf browser-linux.sh browser.sh)
cd extensions
npm install $NPM_FLAGS >&2
node ./postinstall.mjs >/dev/null
cd "$work"

touch .installed
rm -rf "$CACHE"
mv "$work" "$CACHE"
echo "$CACHE"
