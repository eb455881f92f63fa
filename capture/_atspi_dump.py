"""Print, as JSON, the showing elements of one application's AT-SPI accessibility tree with their
screen boxes. Runs under Debian's /usr/bin/python3 (python3-pyatspi is not importable from a
virtualenv), so it uses the standard library and pyatspi only.

usage: /usr/bin/python3 _atspi_dump.py APP_NAME
"""

import contextlib
import json
import sys

import pyatspi

MAX_DEPTH = 40


def states_of(acc):
    st = acc.getState()
    names = {"showing": pyatspi.STATE_SHOWING, "visible": pyatspi.STATE_VISIBLE,
             "focused": pyatspi.STATE_FOCUSED, "sensitive": pyatspi.STATE_SENSITIVE,
             "checked": pyatspi.STATE_CHECKED, "selected": pyatspi.STATE_SELECTED,
             "editable": pyatspi.STATE_EDITABLE, "active": pyatspi.STATE_ACTIVE}
    return sorted(k for k, v in names.items() if st.contains(v))


def walk(acc, path, out, depth=0):
    try:
        role = acc.getRoleName()
        name = acc.name or ""
        states = states_of(acc)
    except Exception:  # noqa: BLE001 - an element can vanish while it is read
        return
    if depth > 0 and "showing" not in states:
        return  # hidden subtree (e.g. a closed menu): its boxes are meaningless
    box = None
    try:
        ext = acc.queryComponent().getExtents(pyatspi.DESKTOP_COORDS)
        box = [ext.x, ext.y, ext.width, ext.height]
    except Exception:  # noqa: BLE001
        pass
    actions = []
    try:
        act = acc.queryAction()
        actions = [act.getName(i) for i in range(act.nActions)]
    except Exception:  # noqa: BLE001
        pass
    desc = ""
    with contextlib.suppress(Exception):
        desc = acc.description or ""
    out.append({"path": path, "role": role, "name": name, "description": desc, "box": box,
                "states": states, "actions": actions, "children": acc.childCount})
    if depth >= MAX_DEPTH:
        return
    for i in range(acc.childCount):
        try:
            child = acc.getChildAtIndex(i)
        except Exception:  # noqa: BLE001
            continue
        if child is not None:
            walk(child, f"{path}/{i}", out, depth + 1)


def main():
    app_name = sys.argv[1]
    desktop = pyatspi.Registry.getDesktop(0)
    apps = [desktop.getChildAtIndex(i) for i in range(desktop.childCount)]
    out = []
    found = False
    for a in apps:
        if a is not None and a.name == app_name:
            found = True
            walk(a, "", out)
    json.dump({"found": found, "apps": [a.name for a in apps if a is not None], "nodes": out}, sys.stdout)


if __name__ == "__main__":
    main()
