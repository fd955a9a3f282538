package main

import (
	"github.com/go-rpcrdma/rpcrdma/internal/cmdline"
	"github.com/go-rpcrdma/rpcrdma/transport"
)

// checkBacklog checks -backlog: 0 (transport.DefaultAcceptBacklog) or
// from 1 to the handshakes that fit the transport's handshake memory
// budget (transport.DefaultHandshakeMemory) at the -credits, -inline-send
// and -inline-recv given: each handshake registers a Receive and a Send
// buffer per credit before it accepts (0.5 MiB at the defaults, so at most
// 128). A larger backlog is refused (exit status 2, naming the flag)
// rather than cut down in silence: the Listener would hold no more
// handshakes than the budget allows whatever the flag said.
func (o *options) checkBacklog() error {
	lim := (&transport.Config{Credits: uint32(max(o.credits, 0)), InlineSend: o.inlineSend,
		InlineRecv: o.inlineRecv, NoPrivateData: o.noPrivateData,
		AcceptBacklog: transport.MaxAcceptBacklog}).ListenerLimits()
	hi := int64(min(lim.Handshakes, transport.MaxAcceptBacklog))
	if o.backlog <= 0 || int64(o.backlog) <= hi {
		return cmdline.Int("-backlog", int64(o.backlog), 1, hi, "128")
	}
	return cmdline.Usagef("-backlog %d: out of range [1, %d] (0: 128): each handshake registers %d KiB (-credits × (-inline-send + -inline-recv)), and the handshake memory budget of %d MiB holds %d in progress and as many ending",
		o.backlog, hi, lim.HandshakeBytes>>10, lim.HandshakeMemory>>20, lim.Handshakes)
}
