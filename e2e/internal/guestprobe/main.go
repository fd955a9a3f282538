// Command guestprobe is a small static program that the VM smoke test builds
// on the host and runs inside the VM from the 9p share. It prints what it
// sees of the guest (kernel release, RDMA devices and their network devices,
// the in-VM marker) and exits with the status given by -exit, which the test
// expects back from vm.Run.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

func main() {
	exit := flag.Int("exit", 0, "exit `status`")
	flag.Parse()
	rel, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		fmt.Fprintln(os.Stderr, "guestprobe:", err)
		os.Exit(1)
	}
	fmt.Printf("guestprobe: kernel %s in-vm=%q rdma=%s\n",
		strings.TrimSpace(string(rel)), os.Getenv("RPCRDMA_IN_VM"), strings.Join(rdmaDevices(), ","))
	os.Exit(*exit)
}

// rdmaDevices lists the RDMA devices as name:netdev, from sysfs.
func rdmaDevices() []string {
	ents, _ := os.ReadDir("/sys/class/infiniband")
	var out []string
	for _, e := range ents {
		nd, _ := os.ReadFile(filepath.Join("/sys/class/infiniband", e.Name(), "ports/1/gid_attrs/ndevs/0"))
		out = append(out, e.Name()+":"+strings.TrimSpace(string(nd)))
	}
	return out
}
