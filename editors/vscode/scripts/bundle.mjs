// Bundle the extension with esbuild: src/extension.ts plus the host library's source
// (editors/host/src) and vscode-jsonrpc into one CommonJS file, dist/extension.js; `vscode` stays
// external (VS Code provides it). The chat webview's script is a browser bundle, dist/webview.js.
// The node tests are bundled the same way as the extension into dist/test/.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

// The host library imports vscode-jsonrpc from its own folder, where it may not be installed:
// resolve it from this package, whose lockfile decides what goes into the .vsix.
const jsonrpcFromHere = {
  name: "vscode-jsonrpc-from-the-extension",
  setup(build) {
    build.onResolve({ filter: /^vscode-jsonrpc(\/|$)/ }, (args) => {
      if (args.pluginData === "from-extension") return undefined;
      return build.resolve(args.path, { kind: args.kind, resolveDir: root, pluginData: "from-extension" });
    });
  },
};

const common = {
  bundle: true,
  platform: "node",
  format: "cjs",
  target: "node18",
  external: ["vscode"],
  sourcemap: true,
  logLevel: "warning",
  plugins: [jsonrpcFromHere],
};

fs.rmSync(path.join(root, "dist"), { recursive: true, force: true });
await esbuild.build({ ...common, entryPoints: [path.join(root, "src", "extension.ts")], outfile: path.join(root, "dist", "extension.js") });
// The chat webview's script: a browser bundle (IIFE) with @vscode-elements/elements and markdown-it.
await esbuild.build({
  bundle: true,
  platform: "browser",
  format: "iife",
  target: "es2022",
  minify: true,
  logLevel: "warning",
  entryPoints: [path.join(root, "src", "webview", "main.ts")],
  outfile: path.join(root, "dist", "webview.js"),
});
const tests = fs
  .readdirSync(path.join(root, "src", "test"))
  .filter((name) => name.endsWith(".test.ts"))
  .map((name) => path.join(root, "src", "test", name));
await esbuild.build({ ...common, entryPoints: tests, outdir: path.join(root, "dist", "test") });
process.stdout.write(`bundled dist/extension.js, dist/webview.js and ${tests.length} test files\n`);
