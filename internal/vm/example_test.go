package vm_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/go-rpcrdma/rpcrdma/internal/vm"
)

// ExampleRun builds the image (cached after the first time), boots the VM
// and runs a command that uses both rxe devices and a program from the host.
// It is compiled but not run by go test: it needs qemu and takes seconds.
func ExampleRun() {
	ctx := context.Background()
	img, err := vm.Build(ctx, vm.BuildOptions{Log: os.Stderr})
	if err != nil {
		log.Fatal(err)
	}
	status, console, err := vm.Run(ctx, vm.Options{Image: img, Share: "./bin", Timeout: 2 * time.Minute},
		"rdma link show && /host/mytest -test.v")
	if err != nil {
		log.Fatalf("VM failed: %v\n%s", err, console) // timeout, qemu failure or no status
	}
	fmt.Println("guest exit status:", status)
}
