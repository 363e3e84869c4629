#!/bin/sh
# One-line unattended install of task-firewall on a systemd host (docs/firewall.md, "Install on one host"):
#   sudo FIREWALL_SELF_CONFIRM=tcp:192.0.2.10:22 sh /opt/task-service/deploy/firewall/install.sh
# FIREWALL_SELF_CONFIRM names endpoints this host must keep reaching (a bastion's SSH, a monitoring
# port): the daemon confirms its first start itself once every one answers under the new rules, and
# otherwise rolls back and says so (systemctl status, task-firewall status, the web UI, the log).
# `--attended` instead: you confirm yourself within the window (task-firewall confirm).
# Re-running it keeps an existing config and password. DESTDIR=<dir>: write the files under <dir> only
# (packaging, tests): no accounts, no systemctl.
set -eu
PREFIX=${TASK_FIREWALL_PREFIX:-/opt/task-service}
DESTDIR=${DESTDIR:-}
ETC=$DESTDIR/etc/task-firewall
UNITS=$DESTDIR/etc/systemd/system
NODE=$PREFIX/node_modules/.bin/node
CLI=$PREFIX/services/firewall/src/cli.ts

if [ -z "${FIREWALL_SELF_CONFIRM:-}" ] && [ "${1:-}" != "--attended" ]; then
  echo "install.sh: set FIREWALL_SELF_CONFIRM=tcp:HOST:PORT[,…] for an unattended install, or pass --attended and run task-firewall confirm within the window" >&2
  exit 2
fi
if [ -z "$DESTDIR" ]; then
  getent group task-firewall >/dev/null || groupadd --system task-firewall
  id task-firewall-web >/dev/null 2>&1 || useradd --system --no-create-home --gid task-firewall task-firewall-web
fi
install -d -m 0750 "$ETC" "$UNITS"
[ -f "$ETC/config.json" ] || install -m 0640 "$PREFIX/deploy/firewall/config.json" "$ETC/config.json"
"$NODE" "$CLI" check-config "$ETC/config.json"
if [ ! -f "$ETC/web-password" ]; then
  (umask 027 && head -c 18 /dev/urandom | base64 > "$ETC/web-password")
  echo "web component password: $ETC/web-password"
fi
touch "$ETC/core.env"
chmod 0640 "$ETC/core.env"
if [ -n "${FIREWALL_SELF_CONFIRM:-}" ]; then
  { grep -v '^FIREWALL_SELF_CONFIRM=' "$ETC/core.env" || true; echo "FIREWALL_SELF_CONFIRM=$FIREWALL_SELF_CONFIRM"; } > "$ETC/core.env.new"
  mv "$ETC/core.env.new" "$ETC/core.env"
fi
install -m 0644 "$PREFIX/deploy/systemd/task-firewall-core.service" "$PREFIX/deploy/systemd/task-firewall-web.service" "$UNITS/"
[ -n "$DESTDIR" ] && exit 0
chgrp -R task-firewall "$ETC"
systemctl daemon-reload
systemctl enable --now task-firewall-core.service task-firewall-web.service
# Type=notify: Status: says enforcing, PENDING (until self-confirmed) or NOT PROTECTED with what to do.
systemctl status --no-pager --lines=5 task-firewall-core.service || true
