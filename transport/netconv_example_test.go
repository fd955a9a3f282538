package transport_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/go-rpcrdma/rpcrdma/transport"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs/soft"
)

// A Conn follows the net.Conn conventions: a passed deadline fails Read and
// Write with a *net.OpError wrapping os.ErrDeadlineExceeded (a net.Error
// whose Timeout is true), and after Close every call fails with
// net.ErrClosed.
func ExampleConn_SetReadDeadline_timeout() {
	// The software provider: RDMA verbs emulated over TCP.
	cfg := &transport.Config{Provider: &soft.Provider{}}
	l, err := transport.Listen("127.0.0.1:0", cfg)
	if err != nil {
		panic(err)
	}
	defer l.Close()
	go func() {
		if c, err := l.Accept(); err == nil {
			defer c.Close()
			_, _ = c.Read(make([]byte, 1)) // until the requester leaves
		}
	}()
	c, err := transport.Dial(context.Background(), l.Addr().String(), cfg)
	if err != nil {
		panic(err)
	}

	_ = c.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
	_, err = c.Read(make([]byte, 512)) // no reply will come
	var ne net.Error
	fmt.Println(errors.Is(err, os.ErrDeadlineExceeded), errors.As(err, &ne) && ne.Timeout())

	_ = c.Close()
	_ = c.Close() // idempotent
	_, err = c.Write([]byte{0, 0, 0, 0})
	fmt.Println(errors.Is(err, net.ErrClosed))
	// Output:
	// true true
	// true
}
