package soft_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs/soft"
)

// childEnv names the environment variable that turns the test binary into
// the child server of TestCrossProcess.
const childEnv = "SOFT_VERBS_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "server" {
		if err := childServer(); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// Layout of the child's region: a 1 MiB window, then message buffers.
const (
	childWindow = 1 << 20
	childRecv   = childWindow
	childSend   = childWindow + 4096
	childSize   = childWindow + 8192
)

// childServer accepts one connection, answers its private data reversed,
// exposes a 1 MiB window, sends its rkey and address, then answers each
// message: "sum" with the CRC-32 of the window, anything else with itself.
// It returns when the client disconnects.
func childServer() error {
	p := &soft.Provider{}
	ln, err := p.Listen("127.0.0.1:0")
	if err != nil {
		return err
	}
	defer ln.Close()
	fmt.Printf("listening %s\n", ln.Addr())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req, err := ln.Accept(ctx)
	if err != nil {
		return err
	}
	pd := req.PrivateData()[:8]
	slices.Reverse(pd)
	var r verbs.Region
	c, err := req.Accept(ctx, &verbs.ConnOptions{PrivateData: pd, Setup: func(c verbs.Conn) error {
		if r, err = c.AllocRegion(childSize); err != nil {
			return err
		}
		return c.PostRecv([]verbs.RecvRequest{{ID: 1, SGL: []verbs.SGE{{Region: r, Offset: childRecv, Length: 4096}}}})
	}})
	if err != nil {
		return err
	}
	defer c.Close()
	w, err := c.AllocWindow()
	if err != nil {
		return err
	}
	if err := c.PostSend([]verbs.WorkRequest{
		{ID: 10, Op: verbs.OpBindWindow, Window: w, Bind: verbs.SGE{Region: r, Length: childWindow}, Access: verbs.AccessRemoteRead | verbs.AccessRemoteWrite},
	}); err != nil {
		return err
	}
	// The bind's rkey is known once it is posted; the Send that
	// announces it executes after the bind.
	b := r.Bytes()
	binary.BigEndian.PutUint32(b[childSend:], w.RKey())
	binary.BigEndian.PutUint64(b[childSend+4:], r.Addr(0))
	if err := c.PostSend([]verbs.WorkRequest{{ID: 11, Op: verbs.OpSend, SGL: []verbs.SGE{{Region: r, Offset: childSend, Length: 12}}}}); err != nil {
		return err
	}
	var cs [4]verbs.Completion
	for {
		n, err := c.Poll(cs[:])
		if err != nil {
			return err
		}
		for _, comp := range cs[:n] {
			if err := comp.Err(); errors.Is(err, verbs.ErrFlushed) {
				return nil // the client is done
			} else if err != nil {
				return fmt.Errorf("completion %d: %w", comp.ID, err)
			}
			if comp.Op != verbs.OpRecv {
				continue
			}
			msg := b[childRecv : childRecv+comp.ByteLen]
			reply := b[childSend+4096-64 : childSend+4096]
			k := copy(reply, msg)
			if string(msg) == "sum" {
				k = 4
				binary.BigEndian.PutUint32(reply, crc32.ChecksumIEEE(b[:childWindow]))
			}
			if err := c.PostRecv([]verbs.RecvRequest{{ID: 1, SGL: []verbs.SGE{{Region: r, Offset: childRecv, Length: 4096}}}}); err != nil {
				return err
			}
			if err := c.PostSend([]verbs.WorkRequest{{ID: 12, Op: verbs.OpSend, SGL: []verbs.SGE{{Region: r, Offset: childSend + 4096 - 64, Length: k}}}}); err != nil {
				return err
			}
		}
		if n == 0 {
			if err := c.Wait(ctx); err != nil {
				if errors.Is(err, verbs.ErrDisconnected) {
					return nil // the client is done
				}
				return err
			}
		}
	}
}

// lockedBuffer collects the child's stderr while the test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestCrossProcess talks to a child process: private data both ways, an
// RDMA Write of 1 MiB that the child checksums, an RDMA Read of it back,
// and Send/Receive ping-pong.
func TestCrossProcess(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=server")
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	defer func() { _ = cmd.Process.Kill() }()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err, "child's address (stderr: %s)", stderr.String())
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "listening ")
	require.True(t, ok, line)

	var r verbs.Region
	const (
		src  = 0
		dst  = childWindow
		recv = 2 * childWindow
		send = 2*childWindow + 4096
	)
	c, err := (&soft.Provider{}).Dial(ctx, addr, &verbs.ConnOptions{
		PrivateData: []byte{1, 2, 3, 4, 5, 6, 7, 8},
		Setup: func(c verbs.Conn) error {
			var err error
			if r, err = c.AllocRegion(2*childWindow + 8192); err != nil {
				return err
			}
			return c.PostRecv([]verbs.RecvRequest{{ID: 1, SGL: []verbs.SGE{{Region: r, Offset: recv, Length: 4096}}}})
		},
	})
	require.NoError(t, err)
	defer c.Close()
	want := make([]byte, 196)
	copy(want, []byte{8, 7, 6, 5, 4, 3, 2, 1})
	require.Equal(t, want, c.PeerPrivateData())

	b := r.Bytes()
	got := waitOne(t, c)
	require.NoError(t, got.Err())
	require.Equal(t, 12, got.ByteLen)
	rkey := binary.BigEndian.Uint32(b[recv:])
	raddr := binary.BigEndian.Uint64(b[recv+4:])
	repost := func() {
		require.NoError(t, c.PostRecv([]verbs.RecvRequest{{ID: 1, SGL: []verbs.SGE{{Region: r, Offset: recv, Length: 4096}}}}))
	}
	repost()
	// exchange sends msg and returns the reply.
	exchange := func(msg string) []byte {
		copy(b[send:], msg)
		require.NoError(t, c.PostSend([]verbs.WorkRequest{{ID: 2, Op: verbs.OpSend, SGL: []verbs.SGE{{Region: r, Offset: send, Length: len(msg)}}}}))
		var reply []byte
		for range 2 {
			comp := waitOne(t, c)
			require.NoError(t, comp.Err())
			if comp.Op == verbs.OpRecv {
				reply = bytes.Clone(b[recv : recv+comp.ByteLen])
			}
		}
		repost()
		return reply
	}

	for i := range b[src:childWindow] {
		b[src+i] = byte(i*7 + i>>11)
	}
	require.NoError(t, c.PostSend([]verbs.WorkRequest{{ID: 3, Op: verbs.OpRDMAWrite,
		SGL: []verbs.SGE{{Region: r, Offset: src, Length: childWindow}}, RemoteAddr: raddr, RKey: rkey}}))
	require.NoError(t, waitOne(t, c).Err())
	require.Equal(t, crc32.ChecksumIEEE(b[src:src+childWindow]), binary.BigEndian.Uint32(exchange("sum")), "the child's window holds the written bytes")

	require.NoError(t, c.PostSend([]verbs.WorkRequest{{ID: 4, Op: verbs.OpRDMARead,
		SGL: []verbs.SGE{{Region: r, Offset: dst, Length: childWindow}}, RemoteAddr: raddr, RKey: rkey}}))
	comp := waitOne(t, c)
	require.NoError(t, comp.Err())
	require.Equal(t, childWindow, comp.ByteLen)
	require.True(t, bytes.Equal(b[src:src+childWindow], b[dst:dst+childWindow]), "read back what was written")

	for i := range 10 {
		msg := fmt.Sprintf("ping %d", i)
		require.Equal(t, msg, string(exchange(msg)))
	}
	require.NoError(t, c.Close())
	require.NoError(t, cmd.Wait(), "child (stderr: %s)", stderr.String())
}
