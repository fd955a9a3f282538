package main

import (
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// notifier tells the service manager rdma-nfsd's state by the protocol
// of sd_notify(3): one datagram per change, of "VARIABLE=value" lines,
// to the AF_UNIX datagram socket the environment variable NOTIFY_SOCKET
// names (a path, or an abstract socket's name beginning with '@'), as
// systemd sets it for a unit of Type=notify. READY=1 once rdma-nfsd
// listens; RELOADING=1 with MONOTONIC_USEC (the CLOCK_MONOTONIC time, in
// microseconds) as a reload (SIGHUP) begins and READY=1 when it is done;
// STOPPING=1 as the shutdown begins. A nil notifier (no NOTIFY_SOCKET)
// sends nothing.
type notifier struct {
	conn *net.UnixConn
	log  *slog.Logger
}

// newNotifier returns the notifier of the NOTIFY_SOCKET of the
// environment, or nil if there is none. A socket it cannot use is logged
// once and leaves it nil: rdma-nfsd serves all the same.
func newNotifier(log *slog.Logger) *notifier {
	name := os.Getenv("NOTIFY_SOCKET")
	if name == "" {
		return nil
	}
	if !strings.HasPrefix(name, "/") && !strings.HasPrefix(name, "@") {
		log.Warn("rdma-nfsd: NOTIFY_SOCKET is neither a path nor an abstract socket name (@...); not notifying systemd", "notify_socket", name)
		return nil
	}
	// A name beginning with '@' is an abstract socket's: net.DialUnix
	// turns the '@' into the leading 0 byte of the address (unix(7)).
	c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: name, Net: "unixgram"})
	if err != nil {
		log.Warn("rdma-nfsd: cannot notify systemd", "notify_socket", name, "err", err)
		return nil
	}
	return &notifier{conn: c, log: log}
}

// send sends state, one or more "VARIABLE=value" lines.
func (n *notifier) send(state string) {
	if n == nil {
		return
	}
	if _, err := n.conn.Write([]byte(state)); err != nil {
		n.log.Warn("rdma-nfsd: notifying systemd failed", "state", state, "err", err)
	}
}

// ready: serving (at the start, and after a reload).
func (n *notifier) ready() { n.send("READY=1") }

// reloading: a reload begins; ready follows when it is done.
func (n *notifier) reloading() {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	n.send(fmt.Sprintf("RELOADING=1\nMONOTONIC_USEC=%d", ts.Nano()/1000))
}

// stopping: the shutdown begins.
func (n *notifier) stopping() { n.send("STOPPING=1") }

// close closes the socket.
func (n *notifier) close() {
	if n != nil {
		_ = n.conn.Close()
	}
}
