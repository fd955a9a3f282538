package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestNotify: with NOTIFY_SOCKET naming a datagram socket (a path, or an
// abstract name beginning with '@'), rdma-nfsd sends READY=1 once it
// listens, RELOADING=1 with MONOTONIC_USEC (now, on CLOCK_MONOTONIC) and
// then READY=1 around a SIGHUP's reload, and STOPPING=1 as it shuts down,
// in that order and nothing else (sd_notify(3)).
func TestNotify(t *testing.T) {
	for _, name := range []string{
		filepath.Join(t.TempDir(), "notify"),
		fmt.Sprintf("@rdma-nfsd-test-%d-%d", os.Getpid(), time.Now().UnixNano()),
	} {
		sock, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: name, Net: "unixgram"})
		require.NoError(t, err)
		t.Setenv("NOTIFY_SOCKET", name)
		recv := func() string {
			t.Helper()
			require.NoError(t, sock.SetReadDeadline(time.Now().Add(10*time.Second)))
			b := make([]byte, 4096)
			n, err := sock.Read(b)
			require.NoError(t, err, "waiting for a notification on %s", name)
			return string(b[:n])
		}
		dir := t.TempDir()
		file := filepath.Join(dir, "exports")
		require.NoError(t, os.WriteFile(file, []byte(dir+" 127.0.0.1(rw)\n"), 0o644))

		ctx, cancel := context.WithCancel(context.Background())
		_, logs, done := startRun(t, ctx, "-exports", file, "-addr", "127.0.0.1", "-rdma-port", "0", "-provider", "soft", "-rpcbind=false")
		require.Equal(t, "READY=1", recv(), name)

		var before unix.Timespec
		require.NoError(t, unix.ClockGettime(unix.CLOCK_MONOTONIC, &before))
		require.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGHUP))
		m := regexp.MustCompile(`^RELOADING=1\nMONOTONIC_USEC=([0-9]+)$`).FindStringSubmatch(recv())
		require.NotNil(t, m, name)
		usec, _ := strconv.ParseInt(m[1], 10, 64)
		require.GreaterOrEqual(t, usec, before.Nano()/1000, "MONOTONIC_USEC is the time of the reload")
		require.Equal(t, "READY=1", recv(), "after the reload")
		require.True(t, strings.Contains(logs.String(), "exports reloaded"), logs.String())

		cancel()
		require.Equal(t, "STOPPING=1", recv())
		require.NoError(t, <-done)
		require.NoError(t, sock.SetReadDeadline(time.Now().Add(100*time.Millisecond)))
		_, err = sock.Read(make([]byte, 64))
		require.ErrorIs(t, err, os.ErrDeadlineExceeded, "nothing after STOPPING=1")
		require.NoError(t, sock.Close())
	}
}

// TestNotifyNone: without NOTIFY_SOCKET, or with one rdma-nfsd cannot use,
// there is no notifier, and it serves all the same.
func TestNotifyNone(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", "")
	require.Nil(t, newNotifier(newLogger("text", 0, &syncBuffer{})))
	var logs syncBuffer
	t.Setenv("NOTIFY_SOCKET", "relative/path")
	require.Nil(t, newNotifier(newLogger("text", 0, &logs)))
	require.Contains(t, logs.String(), "NOTIFY_SOCKET")
	t.Setenv("NOTIFY_SOCKET", filepath.Join(t.TempDir(), "none"))
	require.Nil(t, newNotifier(newLogger("text", 0, &logs)))
	require.Contains(t, logs.String(), "cannot notify systemd")
	(*notifier)(nil).ready() // a nil notifier sends nothing
}
