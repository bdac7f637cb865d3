"""What a fetched body becomes for the model: content types, HTML → markdown, truncation, and the
wrapper that marks web content as untrusted data.

HTML is converted with markdownify (over BeautifulSoup's `html.parser`) after removing what a
reader would not see: `<head>`, scripts, styles, templates, frames, embedded objects, SVG, and
elements hidden with `hidden`, `aria-hidden="true"` or an inline `display:none` /
`visibility:hidden` (a common place for injected instructions).
"""

from __future__ import annotations

import re
from urllib.parse import urljoin

from bs4 import BeautifulSoup, Tag
from markdownify import MarkdownConverter

WRAPPER_TAG = "untrusted_web_content"
HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
_INVISIBLE = frozenset({"head", "script", "style", "noscript", "template", "iframe", "frame", "frameset", "object",
                        "embed", "svg", "canvas", "link", "meta"})
_HIDDEN_STYLE = re.compile(r"(display\s*:\s*none|visibility\s*:\s*hidden)", re.IGNORECASE)
_BLANK_LINES = re.compile(r"\n[ \t]*\n(?:[ \t]*\n)+")
_TAGS = re.compile(r"<[^>]*>")
_SCRIPTS = re.compile(r"<(script|style|template|noscript)\b.*?</\1\s*>", re.IGNORECASE | re.DOTALL)
_TAG_IN_TEXT = re.compile(rf"<(/?)\s*{WRAPPER_TAG}", re.IGNORECASE)
_CONVERTER = MarkdownConverter(heading_style="ATX", bullets="-", strip=["img"], escape_underscores=False)


def media_type(content_type: str | None) -> str:
    """`text/html; charset=utf-8` → `text/html`."""
    return (content_type or "").split(";", 1)[0].strip().lower()


def is_json(kind: str) -> bool:
    return kind in ("application/json", "text/json") or kind.endswith("+json")


def is_textual(kind: str) -> bool:
    if not kind:
        return False
    return (kind.startswith("text/") or is_json(kind) or kind.endswith("+xml")
            or kind in ("application/xml", "application/javascript", "application/x-www-form-urlencoded"))


def extension_for(kind: str) -> str:
    if is_json(kind):
        return "json"
    if kind in HTML_TYPES:
        return "html"
    if kind == "text/markdown":
        return "md"
    if kind.startswith("image/"):
        return re.sub(r"[^a-z0-9]", "", kind[len("image/"):].split("+", 1)[0]) or "img"
    if "xml" in kind:
        return "xml"
    if kind.startswith("text/"):
        return "txt"
    if kind == "application/pdf":
        return "pdf"
    return "bin"


def _hidden(tag: Tag) -> bool:
    attrs = tag.attrs or {}
    if "hidden" in attrs or str(attrs.get("aria-hidden", "")).lower() == "true":
        return True
    return bool(_HIDDEN_STYLE.search(str(attrs.get("style", ""))))


def html_to_markdown(html: str, *, base_url: str | None = None, max_html_chars: int | None = None) -> tuple[str, bool]:
    """The readable text of an HTML page as markdown (links made absolute against `base_url`),
    and whether the page was cut: scripts and styles are dropped first, then at most
    `max_html_chars` of what is left is converted (conversion costs 2-4 ms per KB)."""
    html = _SCRIPTS.sub(" ", html)
    cut = max_html_chars is not None and len(html) > max_html_chars
    if cut:
        html = html[:max_html_chars]
    try:
        return _convert(html, base_url), cut
    except RecursionError:  # pathologically deep nesting: its text, without markup
        return _BLANK_LINES.sub("\n\n", _TAGS.sub(" ", html)).strip(), cut


def _convert(html: str, base_url: str | None) -> str:
    soup = BeautifulSoup(html, "html.parser")
    for element in soup.find_all(lambda tag: tag.name in _INVISIBLE or _hidden(tag)):
        if not element.decomposed:
            element.decompose()
    if base_url:
        for link in soup.find_all("a", href=True):
            try:
                link["href"] = urljoin(base_url, str(link["href"]))
            except ValueError:
                del link["href"]
    text = _CONVERTER.convert_soup(soup)
    return _BLANK_LINES.sub("\n\n", text).strip()


def truncate(text: str, max_chars: int) -> tuple[str, bool]:
    if len(text) <= max_chars:
        return text, False
    return f"{text[:max_chars]}\n... (truncated {len(text) - max_chars} chars)", True


def _attribute(value: str) -> str:
    return value.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;").replace(">", "&gt;")


def wrap_untrusted(text: str, *, url: str, content_type: str, converted: bool) -> str:
    """`text` between `<untrusted_web_content …>` tags; a tag of that name inside the text is
    neutralized so the content cannot end the block early or open a fake one."""
    safe = _TAG_IN_TEXT.sub(lambda m: f"&lt;{m.group(1)}{WRAPPER_TAG}", text)
    note = ' converted="markdown"' if converted else ""
    return (f'<{WRAPPER_TAG} url="{_attribute(url)}" content_type="{_attribute(content_type)}"{note}>\n'
            f"{safe}\n</{WRAPPER_TAG}>")
