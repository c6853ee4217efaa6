// Markdown to HTML for the chat: markdown-it with raw HTML off (a model's `<script>` shows as
// text), links only of safe schemes (markdown-it's own check), code blocks left for main.ts to
// give copy / insert buttons.
import MarkdownIt from "markdown-it";

const md = new MarkdownIt({ html: false, linkify: false, breaks: false });

export function renderMarkdown(text: string): string {
  return md.render(text);
}
