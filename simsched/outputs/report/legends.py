"""One legend under a figure's panels, when every panel's legend says the same thing.

Small multiples (a panel per variant) each drew their own legend inside the panel, where it
covers the lines it names (a CDF fills its panel from corner to corner). When every panel gives
each label the same colour and style, one legend under the panels says it once and covers
nothing. When they disagree (a tenant with no data in one variant shifts the colours after it),
the panels keep their own legends: a shared one would name the wrong lines.
"""

from __future__ import annotations

MAX_LEGEND_COLUMNS = 4


def shared_legend(fig, panels: list) -> bool:
    """Move the panels' legends to one under the figure; whether it did."""
    if len(panels) < 2:
        return False
    handles: dict[str, object] = {}
    for ax in panels:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            seen = handles.setdefault(label, handle)
            if _look(seen) != _look(handle):
                return False
    if not handles:
        return False
    for ax in panels:
        if ax.get_legend() is not None:
            ax.get_legend().remove()
    fig.legend(list(handles.values()), list(handles), loc="outside lower center",
               ncols=min(len(handles), MAX_LEGEND_COLUMNS), fontsize="small")  # fmt: skip
    return True


def _look(handle) -> tuple:
    """What tells two legend entries apart: colour, line style, marker."""
    getters = ("get_color", "get_linestyle", "get_marker")
    return tuple(str(getattr(handle, g)()) if hasattr(handle, g) else None for g in getters)
