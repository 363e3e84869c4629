"""python3-caldav (Debian) against the server: discovery, create, query, complete, delete, conflict.
Prints one JSON object with what it saw; the test (caldav-clients.test.ts) asserts on it and on the
tasks API. Usage: python3 python-caldav.py URL USER PASSWORD"""
import json
import sys

import caldav
from caldav.lib import error

url, user, password = sys.argv[1:4]
out = {}
client = caldav.DAVClient(url=url, username=user, password=password)
principal = client.principal()
out["principal"] = str(principal.url)
calendars = principal.calendars()
out["calendars"] = sorted(c.get_display_name() for c in calendars)
inbox = next(c for c in calendars if str(c.url).rstrip("/").endswith("/tasks"))
out["components"] = inbox.get_supported_components()

todo = inbox.save_todo(
    "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//python-caldav test//EN\r\nBEGIN:VTODO\r\n"
    "UID:py-1@python-caldav\r\nDTSTAMP:20261101T000000Z\r\nSUMMARY:Made with python-caldav\r\n"
    "DUE;VALUE=DATE:20301201\r\nPRIORITY:1\r\nX-PY-CLIENT:yes\r\nEND:VTODO\r\nEND:VCALENDAR\r\n"
)
out["created"] = str(todo.url)
out["open_todos"] = sorted(str(t.icalendar_component.get("summary")) for t in inbox.todos())
found = inbox.todo_by_uid("py-1@python-caldav")
out["by_uid"] = str(found.icalendar_component.get("summary"))
out["kept"] = str(found.icalendar_component.get("x-py-client"))

found.complete()
out["open_after_complete"] = sorted(str(t.icalendar_component.get("summary")) for t in inbox.todos())
out["all_after_complete"] = sorted(str(t.icalendar_component.get("summary")) for t in inbox.todos(include_completed=True))

# conflict: an edit made with an ETag that another write has made stale is refused (412)
second = inbox.save_todo(
    "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//python-caldav test//EN\r\nBEGIN:VTODO\r\n"
    "UID:py-2@python-caldav\r\nDTSTAMP:20261101T000000Z\r\nSUMMARY:Conflict target\r\nEND:VTODO\r\nEND:VCALENDAR\r\n"
)
etag = client.request(str(second.url), "GET").headers["etag"]
client.put(str(second.url), second.data.replace("Conflict target", "Edited elsewhere"), {"Content-Type": "text/calendar"})
stale = client.put(str(second.url), second.data.replace("Conflict target", "Stale edit"), {"Content-Type": "text/calendar", "If-Match": etag})
out["stale_status"] = stale.status
out["after_conflict"] = str(inbox.todo_by_uid("py-2@python-caldav").icalendar_component.get("summary"))

second.delete()
try:
    inbox.todo_by_uid("py-2@python-caldav")
    out["deleted"] = False
except error.NotFoundError:
    out["deleted"] = True

print(json.dumps(out))
