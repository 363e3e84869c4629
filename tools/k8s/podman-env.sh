# Sourced by the image and cluster scripts: a private podman configuration and storage under the image
# cache (outside the checkout), with the settings these machines need (shared/notes/containers-and-kubelet.md):
# runc (crun cannot do hybrid cgroups), cgroupfs and file events (no systemd), bounded ulimits
# (root lacks CAP_SYS_RESOURCE, so podman's default nofile=1048576 fails).
IMAGE_CACHE=${TASKSVC_IMAGE_CACHE:-/var/cache/task-service/images}
mkdir -p "$IMAGE_CACHE/storage" "$IMAGE_CACHE/run"
cat >"$IMAGE_CACHE/storage.conf" <<EOF
[storage]
driver = "overlay"
graphroot = "$IMAGE_CACHE/storage"
runroot = "$IMAGE_CACHE/run"
EOF
cat >"$IMAGE_CACHE/containers.conf" <<EOF
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
events_logfile_path = "$IMAGE_CACHE/events.log"
EOF
export CONTAINERS_CONF=$IMAGE_CACHE/containers.conf
export CONTAINERS_STORAGE_CONF=$IMAGE_CACHE/storage.conf
