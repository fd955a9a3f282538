package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/e2e/internal/guesttest"
	"github.com/go-rpcrdma/rpcrdma/e2e/vmtest"
	"github.com/go-rpcrdma/rpcrdma/internal/bench"
	"github.com/go-rpcrdma/rpcrdma/internal/vm"
)

// benchHostScript runs in the guest: rdmacore's TestDevices (what
// rdmacore.Devices reports of rxe0 and rxe1), then rpcrdma-bench's -host
// mode on rxe0 as a user with an RDMA NIC runs it, the VM being that
// host: rdma-nfsd on rxe0's address with the Go client and the kernel
// client, a short selection of cells. The kernel client's inline
// settings, which the bench sets to 1024 for its mount, are set to other
// values before and read after: the bench must restore them.
const benchHostScript = `
cd /host
./rdmacore.test -test.v -test.run '^TestDevices$'; echo "DEVICES-STATUS $?"
modprobe rpcrdma
echo 2048 > /proc/sys/sunrpc/rdma_max_inline_read
echo 8192 > /proc/sys/sunrpc/rdma_max_inline_write
./rpcrdma-bench bench -host -device rxe0 -kernel -workloads null,read -sizes 4KiB -inflight 1 \
	-inline 1024 -rounds 1 -d 1s -json /host/report.json > /host/stdout.txt 2> /host/stderr.txt
echo "BENCH-STATUS $?"
echo "INLINE-AFTER $(cat /proc/sys/sunrpc/rdma_max_inline_read)/$(cat /proc/sys/sunrpc/rdma_max_inline_write)"
`

// TestBenchHostMode runs bench -host -device rxe0 -kernel in the VM: the
// report names rxe0, its link layer (Ethernet: RoCE) and active path MTU
// (1024 on the VM's 1500-byte veth), in the table's heading and in the
// JSON, every cell (the Go client's NULL and 4 KiB READ, the kernel
// client's 4 KiB READ, against rdma-nfsd) has results and no error, and
// the kernel client's inline settings are as they were before the run.
func TestBenchHostMode(t *testing.T) {
	img := vmtest.Require(t)
	share := vmtest.ShareDir(t)
	vmtest.BuildCGO(t, share, "../cmd/rpcrdma-bench", "rpcrdma-bench")
	vmtest.BuildCGO(t, share, "../cmd/rdma-nfsd", "rdma-nfsd")
	vmtest.BuildTest(t, share, "../transport/verbs/rdmacore", "rdmacore.test", "e2eguest", true)
	r := vmtest.Run(t, vm.Options{Image: img, Share: share, Timeout: 15 * time.Minute}, benchHostScript)
	console := string(r.Console)
	stdout, _ := os.ReadFile(filepath.Join(share, "stdout.txt"))
	stderr, _ := os.ReadFile(filepath.Join(share, "stderr.txt"))
	t.Logf("rpcrdma-bench bench -host stdout:\n%s\nstderr:\n%s", stdout, guesttest.Tail(string(stderr), 30))
	if !strings.Contains(console, "DEVICES-STATUS 0") {
		t.Errorf("rdmacore's TestDevices failed in the VM:\n%s", r.GuestTail(60))
	}
	if !strings.Contains(console, "BENCH-STATUS 0") {
		t.Fatalf("rpcrdma-bench bench -host failed in the VM")
	}
	if !strings.Contains(console, "INLINE-AFTER 2048/8192") {
		t.Errorf("the kernel client's inline settings were not restored to 2048/8192:\n%s", r.GuestTail(5))
	}
	const where = "rxe0 port 1 at 10.0.0.1 (Ethernet, active path MTU 1024)"
	if !strings.Contains(string(stdout), "rdmacore on this host's "+where) {
		t.Errorf("the report's heading does not name %q", where)
	}
	raw, err := os.ReadFile(filepath.Join(share, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep bench.Report
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	if d := rep.Device; d == nil || d.Name != "rxe0" || d.Port != 1 || d.LinkLayer != "Ethernet" || d.PathMTU != 1024 || d.Addr != "10.0.0.1" {
		t.Errorf("report's device %+v; want rxe0 port 1, Ethernet, path MTU 1024, 10.0.0.1", d)
	}
	want := map[string]bool{"go/null/0": false, "go/read/4096": false, "kernel/read/4096": false}
	for _, res := range rep.Results {
		name := res.Client + "/" + res.Workload + "/" + strconv.Itoa(res.Size)
		if _, ok := want[name]; !ok || res.Server != "rdma-nfsd" || res.Inline != 1024 {
			t.Errorf("unexpected cell %s against %s at inline %d", name, res.Server, res.Inline)
			continue
		}
		want[name] = true
		if res.Err != "" || res.Ops == 0 || res.RPCsPerOp == 0 || res.Sends == 0 {
			t.Errorf("%s: %d ops, %.2f RPCs per op, %.2f Sends per RPC, error %q", name, res.Ops, res.RPCsPerOp, res.Sends, res.Err)
		}
	}
	for name, seen := range want {
		if !seen {
			t.Errorf("no result for %s", name)
		}
	}
}
