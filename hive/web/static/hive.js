// The dashboard's live sections are morphed in place (idiomorph, `hx-swap="morph:innerHTML"`),
// keyed by their elements' ids, so an update changes only what changed. What the person is
// working with is never touched by one (issue 38: a half-typed answer was wiped when a new
// question came, and focus fell to <body>): a field that has focus or holds what they typed, and
// the control they are pressing, keep their element, value, selection and focus.
(function () {
  "use strict";
  let pressed = null; // the element under a mouse button held down (a click is its press and release)

  function typedIn(node) {
    if (node === document.activeElement && node !== document.body) return true;
    if (node instanceof HTMLSelectElement) return Array.from(node.options).some((o) => o.selected !== o.defaultSelected);
    if (node instanceof HTMLInputElement && (node.type === "checkbox" || node.type === "radio")) return node.checked !== node.defaultChecked;
    return (node instanceof HTMLInputElement || node instanceof HTMLTextAreaElement) && node.value !== node.defaultValue;
  }

  function kept(node) {
    return node instanceof Element && (typedIn(node) || (pressed !== null && node.contains(pressed) && node.matches("button")));
  }

  document.addEventListener("pointerdown", (e) => { pressed = e.target instanceof Element ? e.target : null; }, true);
  document.addEventListener("pointerup", () => { setTimeout(() => { pressed = null; }, 0); }, true);

  if (window.Idiomorph) {
    Idiomorph.defaults.callbacks.beforeNodeMorphed = (oldNode) => !kept(oldNode);
  }
})();
