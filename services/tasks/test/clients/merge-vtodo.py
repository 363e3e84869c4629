"""vdirsyncer's conflict resolution command for the two-way sync test: a three-way merge of one
VTODO per property against the version both sides had at the last sync (BASE_DIR/<file name>).
A property changed on one side only takes that side's value; changed on both, the local one (a).
The merged item is written to both paths, which is how vdirsyncer reads a command's resolution.
Usage (by vdirsyncer): merge-vtodo.py A_PATH B_PATH; the base folder comes from MERGE_BASE_DIR."""
import os
import sys

import icalendar

a_path, b_path = sys.argv[1], sys.argv[2]
base_dir = os.environ["MERGE_BASE_DIR"]


def todo_of(path):
    with open(path, "rb") as f:
        cal = icalendar.Calendar.from_ical(f.read())
    return cal, next(c for c in cal.walk("VTODO"))


cal_a, a = todo_of(a_path)
_, b = todo_of(b_path)
uid = str(a.get("uid"))
base = None
for name in os.listdir(base_dir):
    _, t = todo_of(os.path.join(base_dir, name))
    if str(t.get("uid")) == uid:
        base = t
if base is None:
    sys.exit("no base version to merge against")

IGNORED = {"DTSTAMP", "LAST-MODIFIED", "SEQUENCE"}
for name in set(a.keys()) | set(b.keys()) | set(base.keys()):
    if name in IGNORED:
        continue
    va, vb, v0 = a.get(name), b.get(name), base.get(name)
    same = lambda x, y: (x.to_ical() if hasattr(x, "to_ical") else x) == (y.to_ical() if hasattr(y, "to_ical") else y)
    if va is not None and v0 is not None and same(va, v0) and vb is not None:
        a[name] = vb  # changed on b only
    elif va is not None and v0 is not None and same(va, v0) and vb is None:
        del a[name]  # removed on b only
    elif va is None and v0 is None and vb is not None:
        a[name] = vb  # added on b only

merged = cal_a.to_ical()
for path in (a_path, b_path):
    with open(path, "wb") as f:
        f.write(merged)
