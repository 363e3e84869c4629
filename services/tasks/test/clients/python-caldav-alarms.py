"""python3-caldav (Debian) and its icalendar library read a task's time of day and reminders as a
client does (DUE in its zone, each VALARM's firing instant), and write a task with alarms of their
own. Prints one JSON object; caldav-clients.test.ts asserts on it and on the tasks API.
Usage: python3 python-caldav-alarms.py URL USER PASSWORD SUMMARY"""
import datetime
import json
import sys

import caldav

url, user, password, summary = sys.argv[1:5]
client = caldav.DAVClient(url=url, username=user, password=password)
inbox = next(c for c in client.principal().calendars() if str(c.url).rstrip("/").endswith("/tasks"))
todo = next(t for t in inbox.todos() if str(t.icalendar_component.get("summary")) == summary).icalendar_component
due = todo.get("due").dt
out = {"due": due.isoformat(), "due_zone": str(todo.get("due").params.get("TZID")), "alarms": []}
for alarm in todo.walk("VALARM"):
    trigger = alarm.get("trigger")
    if isinstance(trigger.dt, datetime.timedelta):
        start = due if trigger.params.get("RELATED") == "END" else todo.get("dtstart", todo.get("due")).dt
        fires = start + trigger.dt
    else:
        fires = trigger.dt
    out["alarms"].append({"action": str(alarm.get("action")), "fires": fires.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")})

inbox.save_todo(
    "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//python-caldav test//EN\r\nBEGIN:VTODO\r\n"
    "UID:py-alarms@python-caldav\r\nDTSTAMP:20261101T000000Z\r\nSUMMARY:Alarms from python-caldav\r\n"
    "DUE;TZID=America/New_York:20301201T090000\r\n"
    "BEGIN:VALARM\r\nACTION:DISPLAY\r\nDESCRIPTION:soon\r\nTRIGGER;RELATED=END:-PT20M\r\nX-PY-ALARM:mine\r\nEND:VALARM\r\n"
    "BEGIN:VALARM\r\nACTION:DISPLAY\r\nDESCRIPTION:the day before\r\nTRIGGER;VALUE=DATE-TIME:20301130T120000Z\r\nEND:VALARM\r\n"
    "END:VTODO\r\nEND:VCALENDAR\r\n"
)
mine = inbox.todo_by_uid("py-alarms@python-caldav").icalendar_component
out["kept_alarm"] = [str(a.get("x-py-alarm")) for a in mine.walk("VALARM") if a.get("x-py-alarm")]
print(json.dumps(out))
