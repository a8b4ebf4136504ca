// Model output is untrusted: markdown is rendered without raw HTML, highlighted locally, then
// sanitized (no script, no styles, no images, no forms or frames). Streaming text is rendered in
// two parts: finished blocks once, and only the unfinished tail again on each frame.

import DOMPurify from 'dompurify';
import hljs from 'highlight.js/lib/core';
import bash from 'highlight.js/lib/languages/bash';
import c from 'highlight.js/lib/languages/c';
import cpp from 'highlight.js/lib/languages/cpp';
import css from 'highlight.js/lib/languages/css';
import diff from 'highlight.js/lib/languages/diff';
import go from 'highlight.js/lib/languages/go';
import java from 'highlight.js/lib/languages/java';
import javascript from 'highlight.js/lib/languages/javascript';
import json from 'highlight.js/lib/languages/json';
import lua from 'highlight.js/lib/languages/lua';
import markdownLang from 'highlight.js/lib/languages/markdown';
import python from 'highlight.js/lib/languages/python';
import rust from 'highlight.js/lib/languages/rust';
import shell from 'highlight.js/lib/languages/shell';
import sql from 'highlight.js/lib/languages/sql';
import typescript from 'highlight.js/lib/languages/typescript';
import xml from 'highlight.js/lib/languages/xml';
import yaml from 'highlight.js/lib/languages/yaml';
import MarkdownIt from 'markdown-it';

const languages = { bash, c, cpp, css, diff, go, java, javascript, json, lua, markdown: markdownLang, python, rust, shell, sql, typescript, xml, yaml };
for (const [name, lang] of Object.entries(languages)) hljs.registerLanguage(name, lang);
hljs.registerAliases(['sh', 'zsh', 'console'], { languageName: 'bash' });
hljs.registerAliases(['js', 'jsx', 'mjs'], { languageName: 'javascript' });
hljs.registerAliases(['ts', 'tsx'], { languageName: 'typescript' });
hljs.registerAliases(['py'], { languageName: 'python' });
hljs.registerAliases(['rs'], { languageName: 'rust' });
hljs.registerAliases(['html', 'svg'], { languageName: 'xml' });
hljs.registerAliases(['yml', 'toml'], { languageName: 'yaml' });

const md = new MarkdownIt({
  html: false,
  linkify: false,
  breaks: false,
  highlight(code: string, lang: string): string {
    const name = lang.trim().split(/\s+/)[0];
    if (name && hljs.getLanguage(name) && code.length < 200_000) {
      try {
        return `<pre class="hljs"><code>${hljs.highlight(code, { language: name, ignoreIllegals: true }).value}</code></pre>`;
      } catch {
        // fall through to the plain rendering
      }
    }
    return '';
  },
});

const PURIFY = {
  FORBID_TAGS: ['img', 'style', 'script', 'iframe', 'form', 'input', 'button', 'textarea', 'select', 'object', 'embed', 'svg', 'math', 'video', 'audio', 'source', 'link', 'meta', 'base'],
  FORBID_ATTR: ['style', 'srcset', 'src', 'action', 'formaction'],
  ALLOWED_URI_REGEXP: /^(?:https?:|mailto:|#)/i,
};

export function renderMarkdown(text: string): DocumentFragment {
  return DOMPurify.sanitize(md.render(text), { ...PURIFY, RETURN_DOM_FRAGMENT: true }) as unknown as DocumentFragment;
}

/**
 * The offset up to which `text` holds finished blocks: after the last blank line that is not
 * inside a fenced code block, searching from `from` (itself a block boundary).
 */
export function blockBoundary(text: string, from: number): number {
  let boundary = from;
  let fence: string | undefined;
  let lineStart = from;
  while (lineStart < text.length) {
    const nl = text.indexOf('\n', lineStart);
    if (nl < 0) break;
    const line = text.slice(lineStart, nl);
    const m = /^ {0,3}(`{3,}|~{3,})/.exec(line);
    if (m) {
      if (!fence) fence = m[1];
      else if (m[1][0] === fence[0] && m[1].length >= fence.length && line.trim() === m[1]) fence = undefined;
    } else if (!fence && line.trim() === '') {
      boundary = nl + 1;
    }
    lineStart = nl + 1;
  }
  return boundary;
}

/** Source characters of finished blocks gathered in one chunk (see StreamingMarkdown). */
const CHUNK_CHARS = 16_384;

/**
 * Renders a growing markdown text into `host`: finished blocks once, the tail each time.
 * Finished blocks are grouped into chunks of about CHUNK_CHARS source characters; a chunk is
 * the unit the browser skips when it is off-screen (`content-visibility: auto` in chat.css), so
 * the cost of a frame depends on the chunk being written, not on the length of the answer.
 */
export class StreamingMarkdown {
  private committed = 0;
  private source = '';
  private readonly done: HTMLElement;
  private readonly tail: HTMLElement;
  private chunk: HTMLElement | undefined;
  private chunkChars = 0;

  constructor(readonly host: HTMLElement) {
    this.done = document.createElement('div');
    this.tail = document.createElement('div');
    host.append(this.done, this.tail);
  }

  /**
   * Renders what changed; at most about `budget` characters of finished blocks per call, so one
   * frame stays short after a burst. Returns whether work is left for another frame.
   */
  update(text: string, final: boolean, budget = 8_192): boolean {
    if (text.length < this.committed || !text.startsWith(this.source.slice(0, this.committed))) {
      this.done.replaceChildren();
      this.chunk = undefined;
      this.committed = 0;
    }
    this.source = text;
    let boundary = final ? text.length : blockBoundary(text, this.committed);
    if (boundary - this.committed > budget) {
      const within = blockBoundary(text.slice(0, this.committed + budget), this.committed);
      if (within > this.committed) boundary = within;
    }
    if (boundary > this.committed) {
      this.commit(text.slice(this.committed, boundary));
      this.committed = boundary;
    }
    const more = this.committed < (final ? text.length : blockBoundary(text, this.committed));
    if (more) return true;
    const rest = text.slice(this.committed);
    if (rest) this.tail.replaceChildren(renderMarkdown(rest));
    else this.tail.replaceChildren();
    return false;
  }

  private commit(blocks: string): void {
    if (!this.chunk || this.chunkChars >= CHUNK_CHARS) {
      this.chunk = document.createElement('div');
      this.chunk.className = 'chunk';
      this.done.append(this.chunk);
      this.chunkChars = 0;
    }
    this.chunk.append(renderMarkdown(blocks));
    this.chunkChars += blocks.length;
  }
}
