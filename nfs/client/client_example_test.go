package client_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log"
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/go-rpcrdma/rpcrdma/nfs/client"
	"github.com/go-rpcrdma/rpcrdma/nfs/server"
	"github.com/go-rpcrdma/rpcrdma/transport"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs/soft"
)

// Mount an export and use it as files: here rdma-nfsd's Server on the
// software provider; against knfsd over a real RDMA device it is
//
//	client.Mount(ctx, "10.0.0.1", "/export", &client.MountOptions{Client: client.Config{
//		Transport: transport.Config{Provider: &rdmacore.Provider{}}}})
func ExampleMount() {
	dir, _ := os.MkdirTemp("", "export")
	defer os.RemoveAll(dir)
	d, _ := server.DirFS(dir)
	defer d.Close()
	h, _ := server.NewDirHandler(d, server.DirHandlerOptions{})
	srv, err := server.New(server.Config{Handler: h, Transport: transport.Config{Provider: &soft.Provider{}},
		RDMAAddr: "127.0.0.1:0", TCPAddr: "127.0.0.1:0", Rpcbind: server.RpcbindConfig{Disable: true},
		Squash: server.NoRootSquash}) // calls run as their callers, and this one is root
	if err != nil {
		log.Fatal(err)
	}
	go srv.Serve(context.Background())
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.RDMAAddr().String())
	rdmaPort, _ := strconv.Atoi(port)

	ctx := context.Background()
	exp, err := client.Mount(ctx, "127.0.0.1", "/", &client.MountOptions{
		Client:    client.Config{Transport: transport.Config{Provider: &soft.Provider{}}},
		RDMAPort:  rdmaPort,
		MountAddr: srv.TCPAddr().String(), // "": ask the portmapper on the server
	})
	if err != nil {
		log.Fatal(err)
	}
	defer exp.Close()

	f, err := exp.Create(ctx, "greeting")
	if err != nil {
		log.Fatal(err)
	}
	io.Copy(f, strings.NewReader("hello over RDMA\n")) // write-behind, UNSTABLE
	if err := f.Close(); err != nil {                  // COMMIT
		log.Fatal(err)
	}
	data, err := exp.FS(ctx).(interface{ ReadFile(string) ([]byte, error) }).ReadFile("greeting")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(string(data))
	_, err = exp.Stat(ctx, "missing")
	fmt.Println(errors.Is(err, fs.ErrNotExist))
	// Output:
	// hello over RDMA
	// true
}
