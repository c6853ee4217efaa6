// The sidecar client is the host library, editors/host, imported from its TypeScript source:
// esbuild bundles it (and vscode-jsonrpc) into dist/extension.js, so the .vsix needs no
// node_modules and a fix to the host library is a fix here too.
export * from "../../host/src/index.js";
