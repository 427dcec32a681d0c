// The ICL companion: display equations wider than the text column are scaled down to fit it
// (never below MIN_SCALE of their size); one that still does not fit scrolls sideways inside its
// own box, with a shadow at the cut edge (icl.css). Runs after MathJax's first typesetting and on resize.
(function () {
  "use strict";
  var MIN_SCALE = 0.6;

  function fit() {
    var boxes = document.querySelectorAll('mjx-container[jax="CHTML"][display="true"]');
    Array.prototype.forEach.call(boxes, function (m) {
      if (m.dataset.iclFontSize === undefined) m.dataset.iclFontSize = m.style.fontSize || "100%";
      var base = parseFloat(m.dataset.iclFontSize) || 100;
      m.style.fontSize = base + "%";
      var box = m.clientWidth, full = m.scrollWidth;
      if (box > 0 && full > box + 1) {
        var scale = Math.max(MIN_SCALE, (0.99 * box) / full);
        m.style.fontSize = (base * scale).toFixed(2) + "%";
      }
      m.classList.toggle("icl-math-scrolls", m.scrollWidth > m.clientWidth + 1);
    });
  }

  function whenTypeset(tries) {
    if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
      MathJax.startup.promise.then(fit);
    } else if (tries > 0) {
      setTimeout(function () { whenTypeset(tries - 1); }, 100);
    }
  }

  window.addEventListener("load", function () { whenTypeset(100); });
  var timer = null;
  window.addEventListener("resize", function () {
    clearTimeout(timer);
    timer = setTimeout(fit, 150);
  });
})();
