"""Pages in Chromium for capture: desktop and phone viewports, and the clickable elements of a page
with their boxes (`getBoundingClientRect`, CSS px; image px = CSS px x devicePixelRatio). Launching
Chromium and screenshots are the closed loop's (`harness.online.browser`, re-exported here).
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.online.browser import CHROMIUM_FLAGS, chromium, screenshot

DESKTOP_VIEWPORT = {"width": 1280, "height": 800}
MOBILE_VIEWPORT = {"width": 412, "height": 915}
MOBILE_DPR = 2.625

# Visible, uncovered, clickable elements of the page with their boxes (CSS px, viewport frame)
# and names. Kept in the module (not a data file) so an installed wheel has it too.
TARGETS_JS = r"""
(() => {
  const SELECTOR = 'a[href], button, input:not([type=hidden]), select, textarea, summary, ' +
                   '[role=button], [role=tab], [role=menuitem], [role=link], label[for], [title]';
  const vw = window.innerWidth, vh = window.innerHeight;
  const clean = s => (s || '').replace(/\s+/g, ' ').trim();
  const out = [];
  const all = Array.from(document.querySelectorAll(SELECTOR));
  all.forEach((el, index) => {
    const st = getComputedStyle(el);
    // a plain element with a title counts only when the page made it clickable
    if (!el.matches(SELECTOR.replace(', [title]', '')) && st.cursor !== 'pointer') return;
    if (st.visibility !== 'visible' || st.display === 'none' || parseFloat(st.opacity) === 0) return;
    // The box that is clicked: the largest of the element's own boxes (an inline element broken
    // over lines has several) that lies in the viewport and is not covered; failing that, the
    // largest such box of a descendant (e.g. a fixed-position glyph inside an off-screen strip).
    const fits = r => {
      const b = {left: Math.max(0, r.left), top: Math.max(0, r.top),
                 right: Math.min(vw, r.right), bottom: Math.min(vh, r.bottom)};
      b.width = b.right - b.left; b.height = b.bottom - b.top;
      if (b.width < 4 || b.height < 4) return null;
      // mostly on screen: a link cut in half by the viewport edge is not offered as a target
      if (b.width * b.height < 0.9 * r.width * r.height) return null;
      const hit = document.elementFromPoint(b.left + b.width / 2, b.top + b.height / 2);
      if (!hit || !(hit === el || el.contains(hit) || (el.htmlFor && hit.id === el.htmlFor))) return null;
      return b;
    };
    const largest = rects => {
      let best = null;
      for (const r of rects) {
        const b = fits(r);
        if (b && (!best || b.width * b.height > best.width * best.height)) best = b;
      }
      return best;
    };
    const best = largest(el.getClientRects()) ||
                 largest(Array.from(el.querySelectorAll('*')).map(d => d.getBoundingClientRect()));
    if (!best) return;
    const tag = el.tagName.toLowerCase();
    const type = (el.getAttribute('type') || '').toLowerCase();
    let text = '';
    if (tag === 'input' && ['submit', 'button', 'reset'].includes(type)) text = el.value;
    else if (tag === 'input' || tag === 'textarea') text = el.value || el.placeholder;
    else if (tag === 'select') text = el.selectedOptions.length ? el.selectedOptions[0].text : '';
    else text = el.innerText;
    text = clean(text);
    const img = el.querySelector('img');
    const control = (tag === 'label' && el.htmlFor) ? document.getElementById(el.htmlFor) : null;
    const label = clean(el.getAttribute('aria-label') || el.getAttribute('title') ||
                        (control ? control.getAttribute('aria-label') : '') ||
                        (img ? (img.getAttribute('alt') || img.getAttribute('title')) : '') ||
                        el.getAttribute('placeholder') || '');
    const kind = (tag === 'a' || el.getAttribute('role') === 'link') ? 'link'
               : (tag === 'input' && !['submit', 'button', 'reset', 'checkbox', 'radio'].includes(type))
                 || tag === 'textarea' ? 'field'
               : tag === 'select' ? 'select' : 'button';
    out.push({index, tag, type, kind, text, label,
              x1: best.left, y1: best.top, x2: best.right, y2: best.bottom,
              href: el.getAttribute('href') || ''});
  });
  return {targets: out, dpr: window.devicePixelRatio, width: vw, height: vh,
          url: location.href, title: document.title};
})()
"""


def new_page(browser, mobile: bool = False):
    """A page in a fresh context: desktop 1280x800 at DPR 1, or a phone 412x915 at DPR 2.625."""
    if mobile:
        ctx = browser.new_context(viewport=MOBILE_VIEWPORT, device_scale_factor=MOBILE_DPR, is_mobile=True,
                                  has_touch=True, locale="en-US", timezone_id="UTC", reduced_motion="reduce")
    else:
        ctx = browser.new_context(viewport=DESKTOP_VIEWPORT, device_scale_factor=1, locale="en-US",
                                  timezone_id="UTC", reduced_motion="reduce")
    return ctx.new_page()


@dataclass(frozen=True)
class Target:
    """A clickable element: its name, kind and box in image pixels of the page's screenshot."""

    text: str  # visible text ("" for an icon)
    label: str  # aria-label / title / alt, "" when none
    kind: str  # link, button, field, select
    tag: str
    box: tuple[float, float, float, float]
    href: str

    @property
    def ui_type(self) -> str:
        return "text" if any(ch.isalnum() for ch in self.text) else "icon"

    @property
    def name(self) -> str:
        return self.text if self.ui_type == "text" else self.label


def targets(page) -> list[Target]:
    """Visible, uncovered clickable elements in document order, boxes scaled to image pixels."""
    info = page.evaluate(TARGETS_JS)
    dpr = float(info["dpr"])
    out = []
    for t in info["targets"]:
        box = (t["x1"] * dpr, t["y1"] * dpr, t["x2"] * dpr, t["y2"] * dpr)
        out.append(Target(t["text"], t["label"], t["kind"], t["tag"], box, t["href"]))
    return out


__all__ = ["CHROMIUM_FLAGS", "DESKTOP_VIEWPORT", "MOBILE_DPR", "MOBILE_VIEWPORT", "TARGETS_JS", "Target", "chromium",
           "new_page", "screenshot", "targets"]
