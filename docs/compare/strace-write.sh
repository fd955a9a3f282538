#!/bin/sh
# strace-write.sh counts rdma-nfsd's system calls under 2,000 2 KiB FILE_SYNC
# WRITEs of the kernel client (O_DIRECT: one WRITE each), in the VM:
#   CGO_ENABLED=1 go build -o /tmp/st/rdma-nfsd ./cmd/rdma-nfsd
#   cp docs/compare/strace-write.sh /tmp/st/run.sh
#   go run ./cmd/rxevm run -s /tmp/st -t 500 /host/run.sh
# The counts land in /tmp/st/strace-write.txt.
set -x
mkdir -p /srv/x /mnt/x
dd if=/dev/zero of=/srv/x/f bs=1M count=4 2>/dev/null
/host/rdma-nfsd -dir /srv/x -provider rdmacore -addr 10.0.0.1 -rdma-port 20049 -tcp-port 2049 -rpcbind=false -inline-send 4096 -inline-recv 4096 > /tmp/nfsd.log 2>&1 &
sleep 3
mount -t nfs -o vers=3,proto=rdma,noac,port=20049,mountport=2049,mountproto=tcp,nolock 10.0.0.1:/ /mnt/x || { cat /tmp/nfsd.log; exit 1; }
strace -c -f -o /host/strace-write.txt -p "$(pidof rdma-nfsd)" &
SP=$!
sleep 1
dd if=/dev/zero of=/mnt/x/f bs=2048 count=2000 oflag=direct conv=notrunc 2>&1
kill -INT $SP
wait $SP
grep -A30 "mounted on /mnt/x" /proc/self/mountstats | grep -E "xprt:|WRITE:"
umount /mnt/x
