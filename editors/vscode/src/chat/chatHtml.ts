// The chat webview's page: the bundled script (dist/webview.js) under a nonce, the stylesheet
// (media/chat.css), and a Content-Security-Policy with no inline script: scripts only with the
// nonce, styles only from the extension (the elements' own styles are constructed stylesheets).
// Pure: the tests check the policy.
import { randomBytes } from "node:crypto";

export interface ChatPageUris {
  /** `webview.cspSource`. */
  cspSource: string;
  script: string;
  style: string;
}

export function newNonce(): string {
  return randomBytes(18).toString("base64").replace(/[^A-Za-z0-9]/g, "");
}

export function chatCsp(cspSource: string, nonce: string): string {
  return [
    "default-src 'none'",
    `script-src 'nonce-${nonce}'`,
    `style-src ${cspSource}`,
    `font-src ${cspSource}`,
    `img-src ${cspSource} data:`,
  ].join("; ");
}

export function chatHtml(uris: ChatPageUris, nonce: string): string {
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${chatCsp(uris.cspSource, nonce)}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${uris.style}">
<title>Context Sidecar Chat</title>
</head>
<body>
<div id="app" data-testid="chat"></div>
<script nonce="${nonce}" src="${uris.script}"></script>
</body>
</html>`;
}
