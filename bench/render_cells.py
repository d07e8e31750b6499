"""render_cells.py: the formatting the performance page's sections share.

Pure. Below render.py and render_shared.py, which both import it, so that
neither imports the other back (render.py imports render_shared's sections).
"""


def f(v, nd=0, suffix=""):
    """A number for a table cell; an en dash when missing."""
    if v is None:
        return "–"
    if isinstance(v, float) and nd == 0:
        return f"{v:,.0f}{suffix}"
    return f"{v:,.{nd}f}{suffix}"


def x(v, nd=2):
    return "–" if v is None else f"{v:.{nd}f}×"


def table(head, rows):
    out = ["| " + " | ".join(head) + " |", "|" + "|".join(" --- " for _ in head) + "|"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def _section(r, key, title):
    """(results of scenario `key`, None) or (None, the text saying why there are none)."""
    res = r["scenarios"].get(key)
    if not res:
        return None, ""
    if "error" in res:
        return None, f"## {title}\n\nThis scenario failed: `{res['error']}`"
    if "skipped" in res:
        return None, f"## {title}\n\nNot measured: {res['skipped']}"
    return res, None
