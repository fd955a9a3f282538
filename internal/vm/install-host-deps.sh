#!/bin/sh
# install-host-deps.sh: install what the e2e VM harness (internal/vm) needs on a
# Debian or Ubuntu host, and nothing else:
#   qemu-system-x86  the emulator (the VM runs under TCG; KVM is never used)
#   xz-utils         unpacks the xz-compressed kernel payload of the bzImage
#   gcc, libibverbs-dev, librdmacm-dev
#                    cgo builds of transport/verbs/rdmacore (the rdma-core
#                    provider), compiled on the host and run in the VM
# apt-get and dpkg-deb are used by the image build itself (downloads and
# unpacking only; nothing is installed on the host for the guest).
#
# Idempotent, quiet, and fast (no network) when everything is present. It also
# runs `apt-get update` when the package lists are missing, because the first
# image build asks apt-cache which kernel and libraries to download.
# Exit status 0 on success; prints what it installed.
set -eu

sudo=
if [ "$(id -u)" != 0 ]; then
	command -v sudo >/dev/null 2>&1 && sudo="sudo -n"
fi
for tool in apt-get apt-cache dpkg-deb; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "install-host-deps: $tool not found: the VM harness needs a Debian or Ubuntu host" >&2
		exit 1
	fi
done

need=
command -v qemu-system-x86_64 >/dev/null 2>&1 || need="$need qemu-system-x86"
command -v xz >/dev/null 2>&1 || need="$need xz-utils"
command -v gcc >/dev/null 2>&1 || need="$need gcc"
[ -e /usr/include/infiniband/verbs.h ] || need="$need libibverbs-dev"
[ -e /usr/include/rdma/rdma_cma.h ] || need="$need librdmacm-dev"

updated=0
update() {
	[ $updated = 1 ] && return 0
	$sudo apt-get update -qq
	updated=1
}

if [ -n "$need" ]; then
	update
	echo "install-host-deps: installing$need"
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends $need >/dev/null
fi

# The image build resolves linux-image-amd64 and the guest libraries with
# apt-cache: make sure the package lists exist.
if ! apt-cache show linux-image-amd64 >/dev/null 2>&1; then
	update
fi
