/**
 * A small Markdown renderer for model output that builds React elements and never injects HTML.
 *
 * Blocks: paragraphs (single newlines kept as line breaks), fenced code (an unclosed fence runs
 * to the end, so half-streamed code renders as code), ATX headings, block quotes, bullet and
 * numbered lists (nested by indentation), GFM tables and rules. Inline: code spans, strong,
 * emphasis, strikethrough, links and bare URLs. Link targets other than http(s) and mailto are
 * shown as plain text, so `javascript:` can never become a link.
 */

import { memo, useState, type ReactNode } from "react";

type Block =
  | { kind: "paragraph"; text: string }
  | { kind: "heading"; level: number; text: string }
  | { kind: "code"; lang: string; code: string; closed: boolean }
  | { kind: "quote"; blocks: Block[] }
  | { kind: "list"; ordered: boolean; start: number; items: Block[][] }
  | { kind: "table"; head: string[]; align: Array<"left" | "center" | "right" | null>; rows: string[][] }
  | { kind: "rule" };

const FENCE = /^ {0,3}(`{3,}|~{3,})\s*([\w+#.-]*)/;
const HEADING = /^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$/;
const RULE = /^ {0,3}([-*_])(\s*\1){2,}\s*$/;
const QUOTE = /^ {0,3}> ?/;
const LIST_ITEM = /^( *)([-*+]|\d{1,9}[.)])\s+(.*)$/;
const TABLE_SEPARATOR = /^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$/;

function indentOf(line: string): number {
  return line.length - line.trimStart().length;
}

function splitRow(line: string): string[] {
  let row = line.trim();
  if (row.startsWith("|")) row = row.slice(1);
  if (row.endsWith("|") && !row.endsWith("\\|")) row = row.slice(0, -1);
  const cells: string[] = [];
  let cell = "";
  for (let i = 0; i < row.length; i++) {
    if (row[i] === "\\" && row[i + 1] === "|") {
      cell += "|";
      i++;
    } else if (row[i] === "|") {
      cells.push(cell.trim());
      cell = "";
    } else {
      cell += row[i];
    }
  }
  cells.push(cell.trim());
  return cells;
}

function startsBlock(line: string): boolean {
  return FENCE.test(line) || HEADING.test(line) || QUOTE.test(line) || RULE.test(line) || LIST_ITEM.test(line);
}

export function parseBlocks(source: string): Block[] {
  const lines = source.replace(/\r\n?/g, "\n").split("\n");
  const blocks: Block[] = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (!line.trim()) {
      i++;
      continue;
    }
    const fence = FENCE.exec(line);
    if (fence) {
      const marker = fence[1];
      const body: string[] = [];
      let closed = false;
      i++;
      while (i < lines.length) {
        if (lines[i].trim().startsWith(marker[0].repeat(marker.length)) && !lines[i].trim().slice(marker.length).trim()) {
          closed = true;
          i++;
          break;
        }
        body.push(lines[i]);
        i++;
      }
      blocks.push({ kind: "code", lang: fence[2] ?? "", code: body.join("\n"), closed });
      continue;
    }
    const heading = HEADING.exec(line);
    if (heading) {
      blocks.push({ kind: "heading", level: heading[1].length, text: heading[2] });
      i++;
      continue;
    }
    if (RULE.test(line)) {
      blocks.push({ kind: "rule" });
      i++;
      continue;
    }
    if (QUOTE.test(line)) {
      const body: string[] = [];
      while (i < lines.length && lines[i].trim() && QUOTE.test(lines[i])) {
        body.push(lines[i].replace(QUOTE, ""));
        i++;
      }
      blocks.push({ kind: "quote", blocks: parseBlocks(body.join("\n")) });
      continue;
    }
    const item = LIST_ITEM.exec(line);
    if (item) {
      const base = item[1].length;
      const ordered = /\d/.test(item[2]);
      const items: string[][] = [];
      while (i < lines.length) {
        const current = lines[i];
        const match = LIST_ITEM.exec(current);
        if (match && match[1].length <= base + 1 && /\d/.test(match[2]) === ordered) {
          items.push([match[3]]);
          i++;
        } else if (current.trim() && items.length && (indentOf(current) > base || !startsBlock(current))) {
          // An indented line (or a lazy continuation) belongs to the current item.
          items[items.length - 1].push(current.slice(Math.min(indentOf(current), base + 2)));
          i++;
        } else if (!current.trim() && i + 1 < lines.length && indentOf(lines[i + 1]) > base && lines[i + 1].trim()) {
          items[items.length - 1].push("");
          i++;
        } else {
          break;
        }
      }
      blocks.push({
        kind: "list",
        ordered,
        start: ordered ? parseInt(item[2], 10) : 1,
        items: items.map((body) => parseBlocks(body.join("\n"))),
      });
      continue;
    }
    if (line.includes("|") && i + 1 < lines.length && TABLE_SEPARATOR.test(lines[i + 1]) && lines[i + 1].includes("-")) {
      const head = splitRow(line);
      const align = splitRow(lines[i + 1]).map((cell) => {
        const left = cell.startsWith(":");
        const right = cell.endsWith(":");
        return left && right ? "center" : right ? "right" : left ? "left" : null;
      });
      const rows: string[][] = [];
      i += 2;
      while (i < lines.length && lines[i].trim() && lines[i].includes("|")) {
        rows.push(splitRow(lines[i]));
        i++;
      }
      blocks.push({ kind: "table", head, align, rows });
      continue;
    }
    const body: string[] = [];
    while (i < lines.length && lines[i].trim() && (body.length === 0 || !startsBlock(lines[i]))) {
      body.push(lines[i].trim());
      i++;
    }
    blocks.push({ kind: "paragraph", text: body.join("\n") });
  }
  return blocks;
}

const SAFE_URL = /^(https?:\/\/|mailto:)/i;

export function safeHref(url: string): string | null {
  const trimmed = url.trim();
  return SAFE_URL.test(trimmed) ? trimmed : null;
}

// One alternation, tried left to right at each position; the first group that matches wins.
const INLINE = new RegExp(
  [
    "(`+)([\\s\\S]*?[^`])\\1(?!`)", // 1,2: code span
    "\\\\([\\\\`*_{}\\[\\]()#+\\-.!~|>])", // 3: escaped character
    "\\[([^\\]\\n]+)\\]\\(\\s*<?([^)\\s>]+)>?(?:\\s+\"[^\"]*\")?\\s*\\)", // 4,5: link
    "(https?:\\/\\/[^\\s<>()\\[\\]]*[^\\s<>()\\[\\].,;:!?'\"*_~])", // 6: bare URL
    "(\\*\\*|__)(?=\\S)([\\s\\S]*?\\S)\\7", // 7,8: strong
    "~~(?=\\S)([\\s\\S]*?\\S)~~", // 9: strikethrough
    "\\*(?=[^\\s*])([\\s\\S]*?[^\\s*])\\*(?!\\*)", // 10: emphasis with *
    "(?<![\\w])_(?=[^\\s_])([\\s\\S]*?[^\\s_])_(?![\\w])", // 11: emphasis with _
  ].join("|"),
  "g",
);

export function renderInline(text: string, keyPrefix = "i"): ReactNode[] {
  const out: ReactNode[] = [];
  let last = 0;
  let n = 0;
  const pushText = (value: string) => {
    // Keep single newlines as line breaks: chat replies rarely mean them as spaces.
    value.split("\n").forEach((piece, index) => {
      if (index > 0) out.push(<br key={`${keyPrefix}-br${n++}`} />);
      if (piece) out.push(piece);
    });
  };
  // matchAll works on a copy of the regex, so the recursive calls below cannot disturb this scan.
  for (const m of text.matchAll(INLINE)) {
    if (m.index > last) pushText(text.slice(last, m.index));
    const key = `${keyPrefix}-${n++}`;
    if (m[2] !== undefined) {
      out.push(<code key={key}>{m[2].replace(/^ (.*) $/s, "$1")}</code>);
    } else if (m[3] !== undefined) {
      out.push(m[3]);
    } else if (m[4] !== undefined) {
      const href = safeHref(m[5]);
      const label = renderInline(m[4], key);
      out.push(
        href ? (
          <a key={key} href={href} target="_blank" rel="noopener noreferrer nofollow">
            {label}
          </a>
        ) : (
          <span key={key}>{label}</span>
        ),
      );
    } else if (m[6] !== undefined) {
      out.push(
        <a key={key} href={m[6]} target="_blank" rel="noopener noreferrer nofollow">
          {m[6]}
        </a>,
      );
    } else if (m[8] !== undefined) {
      out.push(<strong key={key}>{renderInline(m[8], key)}</strong>);
    } else if (m[9] !== undefined) {
      out.push(<del key={key}>{renderInline(m[9], key)}</del>);
    } else if (m[10] !== undefined || m[11] !== undefined) {
      out.push(<em key={key}>{renderInline(m[10] ?? m[11], key)}</em>);
    }
    last = m.index + m[0].length;
  }
  if (last < text.length) pushText(text.slice(last));
  return out;
}

function CodeBlock({ lang, code }: { lang: string; code: string }) {
  const [copied, setCopied] = useState(false);
  const copy = () => {
    void navigator.clipboard?.writeText(code).then(() => {
      setCopied(true);
      window.setTimeout(() => setCopied(false), 1500);
    });
  };
  return (
    <div className="md-code">
      <div className="md-code-bar">
        <span>{lang || "text"}</span>
        <button type="button" className="md-code-copy" onClick={copy} aria-label="Copy code">
          {copied ? "Copied" : "Copy"}
        </button>
      </div>
      <pre>
        <code>{code}</code>
      </pre>
    </div>
  );
}

function renderBlocks(blocks: Block[], key: string): ReactNode[] {
  return blocks.map((block, index) => {
    const k = `${key}.${index}`;
    switch (block.kind) {
      case "paragraph":
        return <p key={k}>{renderInline(block.text, k)}</p>;
      case "heading": {
        const Tag = `h${Math.min(6, block.level + 2)}` as "h3";
        return (
          <Tag key={k} className={`md-h md-h${block.level}`}>
            {renderInline(block.text, k)}
          </Tag>
        );
      }
      case "code":
        return <CodeBlock key={k} lang={block.lang} code={block.code} />;
      case "quote":
        return <blockquote key={k}>{renderBlocks(block.blocks, k)}</blockquote>;
      case "rule":
        return <hr key={k} />;
      case "list": {
        const items = block.items.map((item, j) => (
          <li key={`${k}.${j}`}>
            {item.length === 1 && item[0].kind === "paragraph"
              ? renderInline(item[0].text, `${k}.${j}`)
              : renderBlocks(item, `${k}.${j}`)}
          </li>
        ));
        return block.ordered ? (
          <ol key={k} start={block.start === 1 ? undefined : block.start}>
            {items}
          </ol>
        ) : (
          <ul key={k}>{items}</ul>
        );
      }
      case "table":
        return (
          <div key={k} className="md-table">
            <table>
              <thead>
                <tr>
                  {block.head.map((cell, j) => (
                    <th key={j} style={{ textAlign: block.align[j] ?? undefined }}>
                      {renderInline(cell, `${k}.h${j}`)}
                    </th>
                  ))}
                </tr>
              </thead>
              <tbody>
                {block.rows.map((row, r) => (
                  <tr key={r}>
                    {block.head.map((_, j) => (
                      <td key={j} style={{ textAlign: block.align[j] ?? undefined }}>
                        {renderInline(row[j] ?? "", `${k}.${r}.${j}`)}
                      </td>
                    ))}
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        );
    }
  });
}

export const Markdown = memo(function Markdown({ text }: { text: string }) {
  return <div className="md">{renderBlocks(parseBlocks(text), "b")}</div>;
});
