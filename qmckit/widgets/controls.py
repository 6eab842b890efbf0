"""Controls generated from a system's parameter metadata, and the small control helpers panels share.

    >>> from qmckit.systems import SYSTEMS
    >>> controls = parameter_controls(SYSTEMS["qdot"], {"n": 6})
    >>> control_values(controls)            # {"n": 6, "dim": 2, "omega": 1.0, …}

A float becomes a ``FloatText``, an int an ``IntText``, a bool a
``Checkbox``, a string with choices a ``Dropdown``, any other string a ``Text``, and a number whose
default the system resolves (None) an :class:`OptionalFloatText` (empty: that default); the label is the
parameter's symbol with its subscripts rendered (``β_en`` → ``βₑₙ``,
:func:`~qmckit.widgets.labels.unit_text`) and the tooltip its help with unit, allowed values and default
(:meth:`qmckit.systems.ParameterInfo.describe`). A label too long for the common label column gets its
own width (:func:`style`), not an ellipsis. Values are not checked here: the system's
parameter dataclass does that when the panel builds its run, and the panel shows the one-line error.
"""
from __future__ import annotations

import ipywidgets as widgets

from .labels import unit_text

DESCRIPTION_WIDTH = "70px"  # the controls' label column
DESCRIPTION_STYLE = {"description_width": DESCRIPTION_WIDTH}
WIDTH = "210px"


def style(label: str) -> dict:
    """A control's ``style``: the common label column, or the label's own width where it would not fit in
    it (a truncated "per ele…" tells nothing)."""
    return DESCRIPTION_STYLE if len(label) <= 8 else {"description_width": "initial"}


def _layout(label: str, width: str = WIDTH) -> widgets.Layout:
    # a label of its own width makes the control wider by as much; never wider than the notebook
    return widgets.Layout(width=width if len(label) <= 8 else "auto", max_width="100%")


def float_control(description: str, value: float, tooltip: str) -> widgets.FloatText:
    return widgets.FloatText(value=value, description=description, tooltip=tooltip, style=style(description),
                             layout=_layout(description))


def int_control(description: str, value: int, tooltip: str, low=None, high=None):
    if low is None:
        return widgets.IntText(value=value, description=description, tooltip=tooltip, style=style(description),
                               layout=_layout(description))
    return widgets.BoundedIntText(value=value, min=low, max=high, description=description, tooltip=tooltip,
                                  style=style(description), layout=_layout(description))


def parameter_controls(system_class, values: dict | None = None, names=None) -> dict:
    """One control per declared parameter of ``system_class`` (those in ``names``, default all), in
    declaration order, set to ``values`` where given and otherwise to the value the system resolves
    (``Params()``'s defaults: an atom's α is its element's optimum)."""
    values = dict(values or {})
    infos = {info.name: info for info in system_class.parameters()}
    unknown = sorted(set(values) - set(infos))
    if unknown:
        raise TypeError(f"{system_class.__name__} has no parameter {', '.join(unknown)}; its parameters are "
                        f"{', '.join(infos)}")
    try:
        resolved = system_class.Params(**values).as_dict()
    except (ValueError, TypeError):  # a bad initial value: show it as given, the run will say what is wrong
        resolved = {name: info.default for name, info in infos.items()} | values
    controls = {}
    for name, info in infos.items():
        if names is not None and name not in names:
            continue
        value, tip, label = resolved[name], info.describe(), unit_text(info.label)
        if info.kind is bool:
            control = widgets.Checkbox(value=bool(value), description=label, indent=False, tooltip=tip,
                                       layout=widgets.Layout(width="auto", max_width="100%"))
        elif info.spec.choices is not None:
            control = widgets.Dropdown(options=list(info.spec.choices), value=value, description=label,
                                       tooltip=tip, style=style(label), layout=_layout(label))
        elif info.kind is str:
            control = widgets.Text(value=str(value), description=label, tooltip=tip, style=style(label),
                                   layout=widgets.Layout(width="290px", max_width="100%"))
        elif info.kind is int:  # unbounded: an out-of-range value gets the system's one-line error, not a clamp
            control = int_control(label, int(value), tip)
        elif value is None:  # a number the system resolves from the others unless one is typed (an atom's β_en)
            control = OptionalFloatText(value="", placeholder=info.spec.default_text or "default",
                                        description=label, tooltip=tip, style=style(label), layout=_layout(label))
        else:
            control = float_control(label, float(value), tip)
        controls[name] = control
    return controls


class OptionalFloatText(widgets.Text):
    """A number that may be left empty (None: the system's own default)."""

    def number(self):
        text = self.value.strip()
        if not text:
            return None
        try:
            return float(text)
        except ValueError:
            return text  # the system's validation names the parameter and what is allowed


def control_values(controls: dict) -> dict:
    """The parameter values the controls hold, by name."""
    out = {}
    for name, c in controls.items():
        if isinstance(c, widgets.Checkbox):
            out[name] = bool(c.value)
        elif isinstance(c, OptionalFloatText):
            out[name] = c.number()
        else:
            out[name] = c.value
    return out
