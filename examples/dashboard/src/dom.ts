// A few lines of DOM building instead of a framework.

type Child = Node | string | number | false | null | undefined;
type Attrs = Record<string, string | number | boolean | undefined | ((e: Event) => void)>;

/** `h("button", { class: "primary", onclick }, "Apply")`. Children are text, never HTML. */
export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Attrs = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === false) continue;
    if (typeof v === "function") el.addEventListener(k.replace(/^on/, ""), v);
    else if (v === true) el.setAttribute(k, "");
    else el.setAttribute(k, String(v));
  }
  el.append(...children.filter((c): c is Node | string | number => c !== false && c !== null && c !== undefined).map((c) => (typeof c === "number" ? String(c) : c)));
  return el;
}

/** The element with this id; throws if the page lacks it. */
export function byId<T extends HTMLElement = HTMLElement>(id: string): T {
  const el = document.getElementById(id);
  if (!el) throw new Error(`#${id} is missing`);
  return el as T;
}

/**
 * Text with line-break opportunities after `.`, `_`, `/` and before `[` (<wbr>), so that a long
 * field path such as `network_policies["pypi"].endpoints[0]` wraps at its parts, not mid-word.
 */
export function breakable(text: string): DocumentFragment {
  const out = document.createDocumentFragment();
  for (const part of text.split(/(?<=[._/])|(?=\[)/)) {
    if (out.childNodes.length > 0) out.append(document.createElement("wbr"));
    out.append(part);
  }
  return out;
}

/** A table with a header row of `head` and the given body. */
export const table = (head: string[], body: HTMLElement, cls?: string): HTMLTableElement =>
  h("table", { class: cls }, h("thead", {}, h("tr", {}, ...head.map((c) => h("th", {}, c)))), body);
