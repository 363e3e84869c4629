#!/bin/sh
# Package removal of task-firewall: the firewall goes with the software that manages it. Removes our
# table (inet task_firewall; other tables untouched) through the daemon while it runs (audited as
# firewall_off), else straight through libnftables; then stops, disables and removes both units.
# Configuration, rules.json and audit.log stay unless --purge. (A `systemctl stop` alone keeps the
# last confirmed rules, and a crash keeps whatever was loaded: see docs/firewall.md, "Stopping".)
set -eu
PREFIX=${TASK_FIREWALL_PREFIX:-/opt/task-service}
CONFIG=${TASK_FIREWALL_CONFIG:-/etc/task-firewall/config.json}
UNITS=${TASK_FIREWALL_UNIT_DIR:-/etc/systemd/system}
NODE=$PREFIX/node_modules/.bin/node
CLI=$PREFIX/services/firewall/src/cli.ts

if [ -f "$CONFIG" ]; then "$NODE" "$CLI" off --config "$CONFIG"; else "$NODE" "$CLI" off --socket /nonexistent; fi
if [ -d /run/systemd/system ]; then
  systemctl disable --now task-firewall-web.service task-firewall-core.service || true
fi
rm -f "$UNITS/task-firewall-core.service" "$UNITS/task-firewall-web.service"
if [ -d /run/systemd/system ]; then systemctl daemon-reload; fi
if [ "${1:-}" = "--purge" ]; then rm -rf /etc/task-firewall /var/lib/task-firewall /var/log/task-firewall; fi
echo "task-firewall removed"
