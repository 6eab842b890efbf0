"""Labels and units as a reader should see them (no physics: text only).

The systems' metadata write units and symbols with underscores (``ħω_⊥``, ``E_h``, ``E/N_s``), as the
command line prints them. Widgets render them: :func:`unit_text` in Unicode for status lines (``ħω⊥``,
``Eₕ``, ``E/Nₛ``), :func:`mpl_text` as matplotlib mathtext for plots (``ħω$_{⊥}$``).
"""
from __future__ import annotations

import re

_SUBSCRIPTS = dict(zip("0123456789+-=()aehijklmnoprstuvxβγρφχ", "₀₁₂₃₄₅₆₇₈₉₊₋₌₍₎ₐₑₕᵢⱼₖₗₘₙₒₚᵣₛₜᵤᵥₓᵦᵧᵨᵩᵪ"))
_SUB = re.compile(r"_(\{[^}]*\}|.)")


def unit_text(text: str) -> str:
    """A label or unit of the metadata in Unicode, for text lines: ``E_h`` → ``Eₕ``, ``E/N_s`` → ``E/Nₛ``;
    a subscript without a Unicode form is written inline (``ħω_⊥`` → ``ħω⊥``), never with an underscore."""
    def sub(match):
        chars = match.group(1).strip("{}")
        return "".join(_SUBSCRIPTS[c] for c in chars) if all(c in _SUBSCRIPTS for c in chars) else chars

    return _SUB.sub(sub, text)


def mpl_text(text: str) -> str:
    """A label or unit of the metadata as matplotlib mathtext: ``ħω_⊥`` → ``ħω$_{⊥}$``, ``E_h*/ħ`` →
    ``E$_{h}$*/ħ`` (only the character after ``_``, or a ``{…}`` group, is lowered); text that already
    holds ``$`` is left alone."""
    if "$" in text:
        return text
    return _SUB.sub(lambda m: "$_{" + m.group(1).strip("{}") + "}$", text)


def status_text(text: str) -> str:
    """``text`` for an HTML status line: ``&`` and ``<`` escaped (user input may hold them), the rest as
    written, so that the value reads (and prints) as the plain text it is."""
    return text.replace("&", "&amp;").replace("<", "&lt;")


def html_text(text: str) -> str:
    """A label or unit of the metadata as HTML: escaped, ``E_h`` → ``E<sub>h</sub>`` (headers, result lines)."""
    escaped = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _SUB.sub(lambda m: "<sub>" + m.group(1).strip("{}") + "</sub>", escaped)
